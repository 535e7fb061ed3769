"""Generalisation after changing one word: closed forms, the span sampler's law, the science."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from wordsens import generalisation as G
from wordsens import maps
from wordsens.generalisation import functionals
from wordsens.maps import registry
from wordsens.seeds import derive_seed

Z_ALPHA = stats.norm.ppf(1 - 0.01 / 2)
Z_POWER = stats.norm.ppf(0.99)


def _explicit(map_name, Xt, yt, X, y, W, delta, position=0):
    """Independent float64 computation with pinv and explicit parameter vectors."""
    f = maps.feature_map(map_name)
    N = Xt.shape[0]
    Phi = f(Xt, W).reshape(N, -1)
    phi = f(X, W).reshape(-1)
    theta = torch.linalg.pinv(Phi) @ yt
    theta_f = theta + phi * (y - phi @ theta) / (phi @ phi)
    theta_r = torch.linalg.pinv(torch.cat([Phi, phi[None]])) @ torch.cat([yt, torch.tensor([y], dtype=torch.float64)])
    Xp = X.clone()
    Xp[position] += delta
    phi_p = f(Xp, W).reshape(-1)
    return {
        "t0": phi @ theta,
        "t1_f": phi @ theta_f,
        "t1_r": phi @ theta_r,
        "D0": phi_p @ theta,
        "D1_f": phi_p @ theta_f,
        "D1_r": phi_p @ theta_r,
    }


# every registered map: RF, RAF and ReLU-RAF through their fast setups, the others through the full map
@pytest.mark.parametrize(
    "map_name,options",
    [
        ("rf", {"k": 40}),
        ("raf", {}),
        ("relu_raf", {}),
        ("drf", {"L": 2}),
        ("sigmoid_raf", {}),
        ("linear_raf", {}),
        ("mh_raf", {"heads": 5}),
        ("block", {"heads": 1}),
    ],
)
def test_closed_forms_match_pinv(map_name, options):
    n, d, N = 4, 5, 5
    Xt, yt, X, y = G.synthetic_task(N, n, d, seed=3)
    W = maps.sample_weights(map_name, 1, n, d, dtype=torch.float64, **options)
    setup = G.prepare(map_name, Xt, yt, X, y, seed=1, weights=W, options=options)
    delta = torch.tensor([0.5, -1.0, 0.3, 0.2, 0.1], dtype=torch.float64)
    ref = _explicit(map_name, Xt, yt, X, y, W, delta)
    f0 = setup.functionals.exact(torch.zeros((1, d), dtype=torch.float64))
    f = setup.functionals.exact(delta[None])
    assert setup.t0 == pytest.approx(float(ref["t0"]), abs=1e-9)
    for training, key in (("fine_tune", "f"), ("retrain", "r")):
        _, t1, _ = setup.outcome(f0, training)
        assert float(t1) == pytest.approx(y, abs=1e-9)  # the new sample is interpolated
        assert float(ref[f"t1_{key}"]) == pytest.approx(y, abs=1e-8)
        D0, D1, err = setup.outcome(f, training)
        assert float(D0) == pytest.approx(float(ref["D0"]), abs=1e-8)
        assert float(D1) == pytest.approx(float(ref[f"D1_{key}"]), abs=1e-7)
        assert float(err) == pytest.approx(float((ref[f"D1_{key}"] + y) ** 2), abs=1e-7)
    # the search's working functionals equal the exact ones
    torch.testing.assert_close(
        setup.functionals(delta[None].to(setup.functionals.dtype)).double(), f, rtol=1e-4, atol=1e-4
    )


def test_the_full_map_setup_equals_the_attention_fast_path():
    """The generic path (any map without a setup of its own) against RAF's moved-row functionals on the
    same instance: the same first stage and the same functionals of the moved sample."""
    Xt, yt, X, _ = G.synthetic_task(12, 6, 8, seed=4)
    args = dict(seed=2, position=1, weights=None, options={}, sampler="auto", dtype=torch.float64)
    Y = torch.as_tensor(yt, dtype=torch.float64)
    spec = registry.get("raf")
    fast = functionals.raf_setup(spec, Xt, X, Y, **args)
    full = functionals.full_map_setup(spec, Xt, X, Y, **args)
    for a, b in ((fast.theta, full.theta), (fast.phi, full.phi), (fast.pphi, full.pphi)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    D = torch.randn((5, 8), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.testing.assert_close(fast.functionals(D), full.functionals(D), rtol=1e-9, atol=1e-10)
    torch.testing.assert_close(fast.functionals.exact(D), full.functionals.exact(D), rtol=1e-10, atol=1e-12)


def test_search_results_match_their_definitions():
    Xt, yt, X, y = G.synthetic_task(20, 6, 8, seed=0)
    setup = G.prepare("raf", Xt, yt, X, y, seed=0)
    for training in G.TRAININGS:
        for loss, penalty in (("surrogate", 0.0), ("direct", 0.0), ("penalised", 0.1)):
            res = G.search(setup, training, loss, penalty=penalty, seed=0)
            W = maps.attention_weights(0, 8, dtype=torch.float64)
            ref = _explicit("raf", Xt, yt, X, y, W, res.delta)
            key = "f" if training == "fine_tune" else "r"
            assert pytest.approx(float(ref[f"D1_{key}"]), abs=1e-7) == res.D1
            assert res.err == pytest.approx((res.D1 + res.y) ** 2, rel=1e-12)
            assert res.gamma_min == pytest.approx(max(abs(res.t0), abs(res.D0)))
            assert res.t1 == pytest.approx(res.y, abs=1e-9) and res.delta_norm <= math.sqrt(8) * (1 + 1e-12)
            # the alignment ratio against its definition, and the identity D1 - D0 = a (y - t0)
            Xp = X.clone()
            Xp[0] += res.delta
            phi, phi_p = maps.raf(X, W).reshape(-1), maps.raf(Xp, W).reshape(-1)
            if training == "fine_tune":
                a = float(phi_p @ phi / (phi @ phi))
            else:
                Phi = maps.raf(Xt, W).reshape(len(Xt), -1)
                pphi = phi - torch.linalg.pinv(Phi) @ (Phi @ phi)
                a = float(phi_p @ pphi / (pphi @ pphi))
            assert res.alignment == pytest.approx(a, abs=1e-7)
            assert pytest.approx(res.alignment * (res.y - res.t0), abs=1e-7) == res.D1 - res.D0
            assert res.d0_shift == pytest.approx(abs(res.D0 - res.t0))
            assert res.interpolates and res.train_residual < 1e-9 and res.gram_rank == 20


def test_span_sampler_has_the_dense_law():
    """Span-restricted RF (V drawn only on span{samples, perturbed block}) against the dense matrix.

    ||phi(X)||^2 is a sum of k = 128 i.i.d. relu(g)^2 terms times ||X||^2/D: coefficient of variation
    sqrt(5/128); m = 751 simulations per sampler detect a 5% shift of its mean (a 5% variance error
    of the weights) at the 1% level with 99% power. t0 (which couples training and test features)
    and the fine-tuned D1 at a fixed Delta (which couples the block B with the rest) get two-sample
    Kolmogorov-Smirnov tests at the 1% level on the same draws.
    """
    n, d, N, k = 2, 4, 3, 128
    m = math.ceil(2 * ((Z_ALPHA + Z_POWER) * math.sqrt(5 / k) / 0.05) ** 2)
    assert m == 751
    Xt, yt, X, y = G.synthetic_task(N, n, d, seed=5)
    delta = torch.tensor([[1.0, -1.0, 0.5, 0.0]], dtype=torch.float64)
    stats_by = {}
    for sampler in ("span", "dense"):
        phi2, t0, d1 = [], [], []
        for s in range(m):
            setup = G.prepare("rf", Xt, yt, X, y, seed=derive_seed(sampler, s), sampler=sampler, k=k)
            phi2.append(setup.phi2)
            t0.append(setup.t0)
            d1.append(float(setup.outcome(setup.functionals.exact(delta), "fine_tune")[1][0]))
        stats_by[sampler] = (np.array(phi2), np.array(t0), np.array(d1))
    (a2, at, ad), (b2, bt, bd) = stats_by["span"], stats_by["dense"]
    z = (a2.mean() - b2.mean()) / math.sqrt(a2.var() / m + b2.var() / m)
    assert abs(z) < Z_ALPHA, z
    assert stats.ks_2samp(at, bt).pvalue > 0.01
    assert stats.ks_2samp(ad, bd).pvalue > 0.01


@pytest.mark.parametrize("repeated", [False, True])
def test_span_draw_has_the_covariance_of_the_weights(repeated):
    """The rows of ``span_rf``'s draw ``[pre-activations of the N training samples, u, B]`` are
    i.i.d. ``N(0, Z^T Z / D)`` with ``Z = [flat(X_1..X_N), flat(X), e_block]``: the empirical covariance
    over k = 200,000 rows against it, entry by entry, within 5 standard errors
    (``sqrt((S_aa S_bb + S_ab^2) / k)``: 0.2-0.5% of the entries here; a factor taken transposed or a
    wrong block would be off by tens of percent). ``repeated``: a training sample equal to the new
    one, so the Gram matrix of the samples' rests is singular and the symmetric square root replaces
    the Cholesky factor."""
    n, d, N, position, k = 3, 4, 5, 1, 200_000
    Xt, _, X, _ = G.synthetic_task(N, n, d, seed=11)
    if repeated:
        Xt[2] = X
    pre, u, B, _ = functionals.span_rf(Xt.double(), X.double(), position, seed=3, k=k)
    draw = torch.cat([pre.T, u[:, None], B.double()], dim=1)  # (k, N + 1 + d)
    Z = torch.cat([Xt.double().reshape(N, -1), X.double().reshape(1, -1), torch.zeros((d, n * d))])
    Z[N + 1 :, position * d : (position + 1) * d] = torch.eye(d)
    expected = Z @ Z.T / (n * d)
    empirical = draw.T @ draw / k
    var = expected.diagonal()
    se = ((var[:, None] * var[None, :] + expected**2) / k).sqrt()
    assert float(((empirical - expected).abs() / se).max()) < 5
    S = functionals.rest_gram(Xt.double(), X.double(), position)
    F = functionals.rest_factor(S)
    torch.testing.assert_close(F @ F.T, S, rtol=0, atol=1e-10 * float(S.abs().max()))
    assert bool((F.tril() == F).all()) != repeated  # Cholesky where S is regular, else the square root


@pytest.mark.slow
def test_science_on_synthetic_data():
    """The mechanism, not only the test error: the alignment ratio ``a`` (D1 - D0 = a (y - t0)).

    RF (n = 40, d = 192, N = 100, 10 simulations, surrogate and direct losses, both trainings):
    one word cannot separate the two sentences: ``a >= 0.9`` in every one of the 40 searches (the
    re-training surrogate, which minimises ``a`` itself, reaches 0.948 at best; the bound behind it:
    ``a_f >= 1 - S`` with S the word sensitivity, about 0.19 at n = 40). RAF (n = 40,
    d = 768, N = 100, the surrogate loss, both trainings, 8 simulations): ``a <= 0.5`` in at least 7 of
    8 simulations; were the true rate only 1/2, that would happen with probability 9/256 = 3.5%. The
    penalised loss lowers the median gamma_min compared with the direct loss (RAF, d = 192).
    """
    searches = [
        ("fine_tune", "surrogate", 0.0),
        ("retrain", "surrogate", 0.0),
        ("fine_tune", "direct", 0.0),
        ("retrain", "direct", 0.0),
    ]
    rf_a = []
    for s in range(10):
        Xt, yt, X, y = G.synthetic_task(100, 40, 192, seed=derive_seed("science", s))
        rf_a += [res.alignment for res in G.simulate("rf", Xt, yt, X, y, seed=s, searches=searches)]
    assert min(rf_a) >= 0.9, sorted(rf_a)
    raf_separated = 0
    gamma_direct, gamma_pen = [], []
    for s in range(8):
        Xt, yt, X, y = G.synthetic_task(100, 40, 768, seed=derive_seed("science", s))
        ft, rt = G.simulate("raf", Xt, yt, X, y, seed=s, searches=searches[:2])
        raf_separated += ft.alignment <= 0.5 and rt.alignment <= 0.5
        Xt, yt, X, y = G.synthetic_task(100, 40, 192, seed=derive_seed("science", s))
        direct, pen = G.simulate(
            "raf", Xt, yt, X, y, seed=s, searches=[("fine_tune", "direct", 0.0), ("fine_tune", "penalised", 1.0)]
        )
        gamma_direct.append(direct.gamma_min)
        gamma_pen.append(pen.gamma_min)
    assert raf_separated >= 7, raf_separated
    assert np.median(gamma_pen) < np.median(gamma_direct), (gamma_pen, gamma_direct)


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(X_train=torch.zeros(0, 3, 4, dtype=torch.float64)), "N >= 1"),
        (dict(y_train=torch.tensor([1.0, 0.0, 1.0, -1.0, 1.0], dtype=torch.float64)), "\\+1 or -1"),
        (dict(y=0.5), "\\+1 or -1"),
        (dict(X=torch.ones(3, 5, dtype=torch.float64)), "training samples are"),
        (dict(y_train=torch.ones(4, dtype=torch.float64)), "shape \\(N,\\)"),
        (dict(position=3), "position"),
        (dict(map_name="nope"), "unknown map 'nope'"),
    ],
)
def test_bad_input(change, message):
    Xt, yt, X, y = G.synthetic_task(5, 3, 4, seed=0)
    args = dict(map_name="raf", X_train=Xt, y_train=yt, X=X, y=y)
    args.update(change)
    position = args.pop("position", 0)
    with pytest.raises(ValueError, match=message):
        G.prepare(
            args.pop("map_name"), args["X_train"], args["y_train"], args["X"], args["y"], seed=0, position=position
        )


def test_rank_deficient_training_sets_get_the_pseudo_inverse():
    """Duplicate samples with opposite labels cannot be interpolated: no error, the min-norm
    least-squares solution of numpy.linalg.pinv, and the row says it does not interpolate."""
    Xt, yt, X, y = G.synthetic_task(6, 3, 4, seed=0)
    Xt[1] = Xt[0]
    yt[1] = -yt[0]
    W = maps.attention_weights(0, 4, dtype=torch.float64)
    setup = G.prepare("raf", Xt, yt, X, y, seed=0, weights=W)
    Phi = maps.raf(Xt, W).reshape(6, -1).numpy()
    phi = maps.raf(X, W).reshape(-1).numpy()
    theta = np.linalg.pinv(Phi) @ yt.numpy()
    assert setup.t0 == pytest.approx(float(phi @ theta), abs=1e-9)
    pphi = phi - np.linalg.pinv(Phi) @ (Phi @ phi)
    assert setup.pphi2 == pytest.approx(float(pphi @ pphi), rel=1e-8)
    assert setup.fit.rank == 5 and not setup.fit.interpolates and math.isinf(setup.fit.cond)
    assert setup.fit.residual == pytest.approx(1.0, abs=1e-9)  # both copies are fitted with 0
    res = G.search(setup, "retrain", "direct", seed=0)
    assert not res.interpolates and math.isfinite(res.err)


def test_near_uniform_attention_with_more_samples_than_dimensions():
    """RAF on rows sharing a common component (as BERT's position and type embeddings make them),
    N > d: attention is nearly uniform, so the N feature vectors lie near a space of dimension about
    d and the Gram matrix is ill-conditioned. The run goes on, matches pinv, and records it."""
    n, d, N = 12, 4, 40
    gen = torch.Generator().manual_seed(0)
    common = torch.randn(d, generator=gen, dtype=torch.float64)
    rows = common + 0.05 * torch.randn((N + 1, n, d), generator=gen, dtype=torch.float64)
    rows = rows * (math.sqrt(d) / torch.linalg.vector_norm(rows, dim=-1, keepdim=True))
    yt = torch.where(torch.arange(N) % 2 == 0, 1.0, -1.0).to(torch.float64)
    W = maps.attention_weights(1, d, dtype=torch.float64)
    setup = G.prepare("raf", rows[:N], yt, rows[N], 1.0, seed=0, weights=W)
    Phi = maps.raf(rows[:N], W).reshape(N, -1).numpy()
    sv = np.linalg.svd(Phi, compute_uv=False)
    assert sv[-1] / sv[0] < 1e-6  # ill-conditioned indeed
    theta = np.linalg.pinv(Phi, rcond=max(Phi.shape) * np.finfo(float).eps) @ yt.numpy()
    phi = maps.raf(rows[N], W).reshape(-1).numpy()
    # the smallest kept singular value is ~1e-8 s_max: backward-stable solvers agree to ~eps / 1e-8
    assert setup.t0 == pytest.approx(float(phi @ theta), rel=1e-6)
    assert setup.fit.cond > 1e12 and setup.fit.rank == np.linalg.matrix_rank(Phi)
    assert setup.fit.interpolates == (setup.fit.residual <= G.INTERPOLATION_TOL)
    for training in G.TRAININGS:
        res = G.search(setup, training, "surrogate", seed=0)
        assert math.isfinite(res.err) and math.isfinite(res.alignment)


def test_bad_search_options():
    Xt, yt, X, y = G.synthetic_task(5, 3, 4, seed=0)
    setup = G.prepare("raf", Xt, yt, X, y, seed=0)
    with pytest.raises(ValueError, match="unknown training"):
        G.search(setup, "finetune", "direct")
    with pytest.raises(ValueError, match="unknown loss"):
        G.search(setup, "retrain", "mse")
    with pytest.raises(ValueError, match="penalty"):
        G.search(setup, "retrain", "penalised", penalty=-1)


@pytest.mark.slow  # a CLI process
def test_cli_gen_prints_one_json_line():
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "wordsens.cli",
            "gen",
            "--map",
            "raf",
            "--n",
            "6",
            "--N",
            "10",
            "--d",
            "8",
            "--training",
            "retrain",
            "--loss",
            "penalised",
            "--penalty",
            "0.5",
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(out.stdout)
    for key in ("t0", "t1", "D0", "D1", "err", "gamma_min", "steps", "seconds", "peak_memory_mb", "N", "penalty"):
        assert key in row
    assert row["err"] == pytest.approx((row["D1"] + row["y"]) ** 2)
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "wordsens.cli",
            "gen",
            "--map",
            "raf",
            "--n",
            "6",
            "--N",
            "10",
            "--d",
            "8",
            "--training",
            "retrain",
            "--loss",
            "direct",
            "--penalty",
            "0.5",
        ],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "penalised" in bad.stderr


def test_the_gram_and_qr_first_stages_agree():
    """The Gram path (float32 Gram matrix, float64 refinement) gives the QR path's float64 result on a
    well-conditioned training set, and declines an ill-conditioned one (then the QR path runs)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(40, 6, 16, seed=2)
    W = maps.attention_weights(2, 16, dtype=torch.float64)
    Phi, phi = maps.raf(Xt, W).reshape(40, -1), maps.raf(X, W).reshape(-1)
    fast = first_stage.gram_interpolate(Phi, yt, phi)
    assert fast is not None
    slow = first_stage.qr_interpolate(Phi, yt, phi)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=1e-12 * float(slow[0].abs().max()))
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=1e-12 * float(phi.abs().max()))
    assert fast[2].rank == slow[2].rank == 40 and fast[2].interpolates
    assert fast[2].cond == pytest.approx(slow[2].cond, rel=1e-9)
    bad = Phi.clone()
    bad[1] = bad[0] * (1 + 1e-9)  # nearly dependent rows: cond(K) far above GRAM_MAX_COND
    assert first_stage.gram_interpolate(bad, yt, phi) is None
    assert first_stage.gram_interpolate(Phi[:, :30].contiguous(), yt, phi[:30]) is None  # N >= p


def test_the_gram_path_takes_rows_with_a_large_common_part():
    """Rows with a large common part (IMDb rows through BERT: every review's [CLS] row and position
    embeddings; cond(K) 1e4-7e5 measured, 900 once centred) keep the Gram path: ``gram`` rounds relative
    to the centred rows (here 1e3 x below a plain float32 Gram matrix's error), so the set is solved to
    float64 accuracy up to ``GRAM_MAX_COND`` and declined beyond it (then the QR path runs)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(40, 6, 16, seed=2)
    W = maps.attention_weights(2, 16, dtype=torch.float64)
    Phi, phi = maps.raf(Xt, W).reshape(40, -1), maps.raf(X, W).reshape(-1)
    common = torch.randn(Phi.shape[1], generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    common *= float(Phi.norm(dim=1).mean()) / float(common.norm())
    shifted = Phi + 30 * common
    K = shifted @ shifted.T
    centred = shifted - shifted.mean(0)
    error = float((first_stage.gram(shifted) - K).norm())
    assert error <= 1e-6 * float((centred @ centred.T).norm())  # float32 rounding of the centred rows
    plain = float(((shifted.float() @ shifted.float().T).double() - K).norm())
    assert plain >= 1e3 * error
    fast, slow = first_stage.gram_interpolate(shifted, yt, phi), first_stage.qr_interpolate(shifted, yt, phi)
    assert fast is not None and 1e5 < slow[2].cond <= first_stage.GRAM_MAX_COND  # declined before (1e4)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=1e-11 * float(slow[0].abs().max()))
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=1e-11 * float(phi.abs().max()))
    assert fast[2].cond == pytest.approx(slow[2].cond, rel=1e-9) and fast[2].interpolates
    further = Phi + 100 * common  # cond(K) 5e6
    assert first_stage.gram_interpolate(further, yt, phi) is None
    assert first_stage.qr_interpolate(further, yt, phi)[2].cond > first_stage.GRAM_MAX_COND


def test_p_phi_is_accurate_relative_to_itself_near_the_span_of_the_rows():
    """Where ``phi`` lies near the span of the training rows (``||P phi|| = 1e-4 ||phi||``) and the rows
    share a large common part, the Gram path's ``P phi`` agrees with the QR path's relative to
    ``||P phi||`` itself. Its second projection starts from ``Phi P phi`` computed anew (1.1e-11 here);
    taken as ``Phi phi - Phi Phi^T c`` instead, its rounding is relative to ``||phi||`` (7.6e-10 here)."""
    from wordsens.generalisation import first_stage

    gen = torch.Generator().manual_seed(5)
    N, p = 50, 256
    Phi = torch.randn(N, p, generator=gen, dtype=torch.float64) + 30 * torch.randn(
        p, generator=gen, dtype=torch.float64
    )
    Y = torch.where(torch.randn(N, generator=gen, dtype=torch.float64) > 0, 1.0, -1.0).to(torch.float64)
    inside = Phi.T @ torch.randn(N, generator=gen, dtype=torch.float64)
    Q = torch.linalg.qr(Phi.T)[0]
    z = torch.randn(p, generator=gen, dtype=torch.float64)
    z -= Q @ (Q.T @ z)
    phi = inside + 1e-4 * float(inside.norm()) * z / z.norm()
    fast, slow = first_stage.gram_interpolate(Phi, Y, phi), first_stage.qr_interpolate(Phi, Y, phi)
    assert fast is not None
    assert float(slow[1].norm()) == pytest.approx(1e-4 * float(inside.norm()), rel=1e-3)
    assert float((fast[1] - slow[1]).norm()) <= 1e-10 * float(slow[1].norm())


@pytest.mark.parametrize("map_name", ["raf", "relu_raf"])
def test_written_out_search_gradient_equals_autograd(map_name):
    Xt, yt, X, y = G.synthetic_task(20, 7, 12, seed=4)
    setup = G.prepare(map_name, Xt, yt, X, y, seed=4)
    F = setup.functionals
    D = 2.0 * torch.randn((6, 12), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for training, loss, penalty in (
        ("fine_tune", "surrogate", 0.0),
        ("retrain", "direct", 0.0),
        ("retrain", "penalised", 0.3),
    ):

        def outer(f, training=training, loss=loss, penalty=penalty):
            return -setup.loss(f, training, loss, penalty), -setup.loss_grad(f, training, loss, penalty)

        value, grad = F.value_and_grad(D, outer)
        Dg = D.clone().requires_grad_(True)
        ref = -setup.loss(F(Dg), training, loss, penalty)
        (ref_grad,) = torch.autograd.grad(ref.sum(), Dg)
        torch.testing.assert_close(value, ref.detach(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, ref_grad, rtol=1e-9, atol=1e-9)


def test_residuals_are_the_loss():
    """``Setup.residuals`` (the Gauss-Newton search's form) against ``Setup.loss`` (the ascent's):
    ``||L f + b||^2`` is the loss for every training and loss, on random functional values."""
    Xt, yt, X, y = G.synthetic_task(12, 6, 8, seed=5)
    setup = G.prepare("raf", Xt, yt, X, y, seed=5)
    f = 3 * torch.randn((50, 3), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for training in G.TRAININGS:
        for loss, penalty in (("surrogate", 0.0), ("direct", 0.0), ("penalised", 0.0), ("penalised", 0.37)):
            L, b = setup.residuals(training, loss, penalty)
            r = f @ L.T + b
            torch.testing.assert_close((r * r).sum(-1), setup.loss(f, training, loss, penalty), rtol=1e-12, atol=0)


def _ball_least_squares(M, c, radius):
    """min ||M x + c|| over ||x|| <= radius (NumPy, from the SVD: the secular equation solved by
    bisection), the reference for ``least_squares_groups`` on linear functionals."""
    U, S, Vt = np.linalg.svd(M, full_matrices=False)
    q = U.T @ c

    def x_of(mu):
        return -Vt.T @ (S * q / (S * S + mu))

    if np.linalg.norm(x_of(0.0)) <= radius:
        return x_of(0.0)
    lo, hi = 0.0, np.linalg.norm(S * q) / radius
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.linalg.norm(x_of(mid)) > radius else (lo, mid)
    return x_of(hi)


def test_least_squares_search_reaches_the_optimum_of_a_linear_problem():
    """``least_squares_groups`` on functionals linear in Delta (``f = F Delta``): the loss
    ``||L F Delta + b||^2`` on the ball is convex, and every group reaches the minimum that the SVD
    gives (``_ball_least_squares``), on the sphere (the unconstrained minimum lies outside) and inside."""
    from wordsens.generalisation.batched import least_squares_groups

    gen = torch.Generator().manual_seed(1)
    d, radius = 20, math.sqrt(20)
    F = torch.randn((3, d), generator=gen, dtype=torch.float64)

    def vjp(D, G):
        return D @ F.T, G @ F

    L = [torch.tensor([[1.0, 0.5, 0.0], [0.3, 0.0, 0.0]], dtype=torch.float64)] * 2
    b = [torch.tensor([40.0, 0.0], dtype=torch.float64), torch.tensor([0.5, 0.0], dtype=torch.float64)]
    starts = [torch.randn((4, d), generator=gen, dtype=torch.float64) for _ in L]
    found = least_squares_groups(vjp, L, b, starts, radius, max_steps=200, tol=1e-12, patience=10, keep=[2, 2])
    for (D, steps), Lg, bg in zip(found, L, b, strict=True):
        M, c = (Lg @ F).numpy(), bg.numpy()
        best = _ball_least_squares(M, c, radius)
        optimum = float(np.sum((M @ best + c) ** 2))
        losses = ((D @ F.T @ Lg.T + bg) ** 2).sum(-1)
        assert float(losses.min()) == pytest.approx(optimum, rel=1e-9, abs=1e-12), steps
        assert float(torch.linalg.vector_norm(D, dim=-1).max()) <= radius * (1 + 1e-12)
    assert np.linalg.norm(_ball_least_squares((L[0] @ F).numpy(), b[0].numpy(), radius)) == pytest.approx(radius)
    assert np.linalg.norm(_ball_least_squares((L[1] @ F).numpy(), b[1].numpy(), radius)) < radius


def test_penalised_searches_converge_where_the_ascent_creeps():
    """Figure 5's penalised loss at d = 768 (RAF, n = 40, N = 400): the Levenberg-Marquardt search
    stops at a point where the loss's gradient is radial (a KKT point of the ball: its tangential part
    below 1% of it; the normalised-gradient ascent, measured, stops at its 500-step cap with
    losses 5-25% above its own 1,500-step ones), in fewer than 500 iterations."""
    Xt, yt, X, y = G.synthetic_task(400, 40, 768, seed=500)
    setup = G.prepare("raf", Xt, yt, X, y, seed=500)
    searches = [("fine_tune", "penalised", 1.0), ("retrain", "penalised", 0.01)]
    for res in G.search_many(setup, searches, seed=0):
        assert res.steps < 500 and res.delta_norm == pytest.approx(math.sqrt(768), rel=1e-6)
        D = res.delta.to(setup.functionals.dtype)[None].requires_grad_(True)
        loss = setup.loss(setup.functionals(D), res.training, "penalised", res.penalty)
        (grad,) = torch.autograd.grad(loss.sum(), D)
        g, u = grad[0].double(), res.delta.double() / res.delta.norm()
        tangential = g - (g @ u) * u
        assert float(g @ u) < 0  # the loss falls outwards: the minimum is on the sphere
        assert float(tangential.norm()) <= 0.01 * float(g.norm()), (res.training, res.penalty)


@pytest.mark.parametrize("map_name", ["raf", "rf"])
def test_searches_run_together_equal_searches_run_alone(map_name):
    Xt, yt, X, y = G.synthetic_task(12, 6, 8, seed=5)
    setup = G.prepare(map_name, Xt, yt, X, y, seed=5)
    searches = [("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0), ("retrain", "penalised", 0.1)]
    together = G.search_many(setup, searches, seed=5)
    for (training, loss, penalty), res in zip(searches, together, strict=True):
        alone = G.search(setup, training, loss, penalty=penalty, seed=5)
        assert (res.training, res.loss, res.penalty) == (training, loss, penalty)
        assert res.err == pytest.approx(alone.err, rel=1e-6, abs=1e-9)
    assert G.search_many(setup, [], seed=5) == []


def _raf_features(Xt, W):
    """The float32 features, the float64 rows and the float64 features of RAF on ``Xt`` with weights ``W``:
    the arguments of ``functionals.first_stage_of``."""
    p = Xt.shape[1] * Xt.shape[2]

    def features(dtype, rows=None):
        X = Xt if rows is None else Xt[rows]
        return maps.raf(X.to(dtype), W.to(dtype)).reshape(len(X), p)

    return features(torch.float32), lambda rows: features(torch.float64, rows), lambda: features(torch.float64)


def test_float32_features_agree_with_float64_features():
    """The float32 path on a small training set: its first stage equals the float64 one within the
    rounding its check estimates, and the check passes."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=6)
    W = maps.attention_weights(6, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    theta, pphi, fit, _, check = functionals.first_stage_of(f32, rows64, f64, yt, phi)
    ref_theta, ref_pphi, ref_fit = first_stage.interpolate(f64(), yt, phi)
    assert check is not None and check.passed and check.rows == first_stage.FEATURES32_ROWS
    assert fit.features == "float32" and ref_fit.features == "float64" and fit.interpolates
    assert abs(float(phi @ theta) - float(phi @ ref_theta)) <= 10 * max(check.t0, 1e-9) <= 1e-5
    assert fit.cond == pytest.approx(ref_fit.cond, rel=1e-5)
    assert float(pphi @ pphi) == pytest.approx(float(ref_pphi @ ref_pphi), rel=1e-5)
    torch.testing.assert_close(theta, ref_theta, rtol=0, atol=1e-5 * float(ref_theta.abs().max()))
    # no float32 features given (they do not pay): float64 features, no check
    *_, small_fit, _, none = functionals.first_stage_of(None, rows64, f64, yt, phi)
    assert none is None and small_fit.features == "float64"


@pytest.mark.parametrize("entries", [3 * 192 + 5, 10**9])
def test_float32_features_are_solved_without_a_float64_copy(monkeypatch, entries):
    """``interpolate32`` takes its float64 products a few rows of the float32 features at a time (here
    3 rows and a remainder, or all at once): the solution for those features equals the float64 solve
    of their exact float64 copy (``gram_interpolate``) to float64 accuracy (1e-9, at cond(K) ~ 10),
    the features are never cast whole (no float64 array of their size is made), and ``Fit`` agrees."""
    from wordsens.generalisation import first_stage
    from wordsens.search import engine

    monkeypatch.setattr(engine, "CHUNK_BYTES", 8 * entries)  # float64 bytes of a block of rows
    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=6)
    W = maps.attention_weights(6, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    Phi32, rows64, _ = _raf_features(Xt, W)
    ref = first_stage.gram_interpolate(Phi32.double(), yt, phi)
    cast = []
    original = torch.Tensor.to

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if self is Phi32 or (out.dtype == torch.float64 and out.numel() == Phi32.numel()):
            cast.append(out.shape)
        return out

    monkeypatch.setattr(torch.Tensor, "to", spy)
    out = first_stage.interpolate32(Phi32, yt, phi, rows64)
    monkeypatch.setattr(torch.Tensor, "to", original)
    assert out is not None and ref is not None
    theta, pphi, fit, check = out
    assert (cast == []) == (entries < Phi32.numel()), cast
    for a, b in ((theta, ref[0]), (pphi, ref[1])):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-9 * float(b.abs().max()))
    assert fit.cond == pytest.approx(ref[2].cond, rel=1e-9) and fit.rank == ref[2].rank == 60
    assert fit.features == "float32" and check.passed


@pytest.mark.parametrize("map_name", ["raf", "relu_raf", "rf"])
def test_prepare_with_float32_features_agrees_with_float64(monkeypatch, map_name):
    """The setups of RAF, ReLU-RAF and RF (span sampler) take the float32 path where it pays (forced
    here): the same simulation as with float64 features, within 1e-5 (the regression fixture's tolerance
    of first-stage floats)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, y = G.synthetic_task(40, 6, 16, seed=9)
    ref = G.prepare(map_name, Xt, yt, X, y, seed=9)
    monkeypatch.setattr(first_stage, "FEATURES32_MIN_FLOPS", 0.0)
    new = G.prepare(map_name, Xt, yt, X, y, seed=9)
    assert ref.fit.features == "float64" and new.fit.features == "float32"
    assert new.t0 == pytest.approx(ref.t0, rel=1e-5, abs=1e-6)
    assert new.fit.cond == pytest.approx(ref.fit.cond, rel=1e-5)
    assert new.pphi2 == pytest.approx(ref.pphi2, rel=1e-5) and new.phi2 == ref.phi2
    D = torch.randn((4, 16), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(new.functionals.exact(D), ref.functionals.exact(D), rtol=1e-5, atol=1e-6)
    res_new, res_ref = (G.search(s, "retrain", "direct", seed=9) for s in (new, ref))
    assert res_new.err == pytest.approx(res_ref.err, rel=1e-3, abs=1e-3)


def test_float32_features_fall_back_where_the_check_fails(monkeypatch):
    """The verdict both ways: the check fails (then float64 features are computed and solved) where the
    float64 rows show a rounding too large, and the Gram path declines an ill-conditioned set."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=7)
    W = maps.attention_weights(7, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    calls = []

    def rough(rows):  # float64 rows 1e-4 away from the float32 ones: a rounding far too large
        return rows64(rows) * (1 + 1e-4)

    def counted():
        calls.append("float64")
        return f64()

    theta, _, fit, _, check = functionals.first_stage_of(f32, rough, counted, yt, phi)
    assert check is not None and not check.passed and check.t0 > first_stage.FEATURES32_TOL
    assert fit.features == "float64" and calls == ["float64"]  # the float64 features were computed
    ref_theta, _, _ = first_stage.interpolate(f64(), yt, phi)
    assert torch.equal(theta, ref_theta)

    # an ill-conditioned training set (two nearly equal samples): the Gram path declines it, no check runs,
    # and the float64 features go straight to the QR (no second Gram matrix)
    bad = Xt.clone()
    bad[1] = bad[0]
    bad[1, 0, 0] += 1e-6
    b32, brows, b64 = _raf_features(bad, W)
    ref_theta, _, ref_fit = first_stage.interpolate(b64(), yt, phi)

    def no_second_gram(*args):
        raise AssertionError("the float64 fallback of a declined set went through the Gram path again")

    monkeypatch.setattr(first_stage, "gram_interpolate", no_second_gram)
    theta, _, fit, _, check = functionals.first_stage_of(b32, brows, b64, yt, phi)
    assert check is None and fit.features == "float64" and fit.cond > first_stage.GRAM_MAX_COND
    assert torch.equal(theta, ref_theta) and fit == ref_fit
    assert first_stage.interpolate32(_raf_features(bad, W)[0], yt, phi, brows) is None


def test_rounding_check_estimates_the_change_it_guards():
    """The check's first-order estimate of t0's change is of the size of the change itself (measured
    0.02-1.4x of it on RAF and ReLU-RAF sets from N = 6 to 1300: docs/benchmarks.md)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(80, 8, 20, seed=8)
    W = maps.attention_weights(8, 20, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    out = first_stage.interpolate32(f32, yt, phi, rows64)
    assert out is not None
    theta, _, _, check = out
    ref_theta, _, _ = first_stage.interpolate(f64(), yt, phi)
    change = abs(float(phi @ (theta - ref_theta)))
    assert change <= 10 * check.t0 and check.t0 <= 1e3 * max(change, 1e-12)
