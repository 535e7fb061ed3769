"""Generalisation after changing one word (wordsens.generalisation): closed forms, the span sampler's
law, the science, bad input.

The first stage (Gram, QR, float32 features): test_first_stage.py; the searches: test_gen_searches.py;
``wordsens gen``: tests/unit/cli/test_cli_commands.py."""

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
    Y = torch.as_tensor(yt, dtype=torch.float64)
    task = functionals.GenInputs(registry.get("raf"), Xt, X, Y, 2, 1, None, {}, "auto", torch.float64)
    fast, full = functionals.raf_setup(task), functionals.full_map_setup(task)
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
