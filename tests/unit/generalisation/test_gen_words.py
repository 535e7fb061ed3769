"""Real words in the generalisation experiment (wordsens.generalisation.words, .comparison): every word's D0,
D1, Err, gamma_min and alignment against an independent path (each X'(w) formed, phi by the plain map, the
two-stage fit by pinv), the best word of every loss and the frontier against a brute-force loop, one
simulation's setup moved to [CLS] on the same weights (RF's blocks drawn jointly: their law), the continuous
search in a ball of another radius. ``wordsens gen-words``: tests/unit/studies/test_gen_words_cli.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import generalisation as G
from wordsens import maps
from wordsens.data.vocabulary import EmbeddingLayer
from wordsens.generalisation import functionals
from wordsens.generalisation.comparison import word_simulation
from wordsens.generalisation.words import pareto_frontier, scan_words, word_losses

pytestmark = pytest.mark.usefixtures("one_thread")

N_, n_, d_, I_ = 12, 6, 8, 3  # training set, tokens, dimension, the word position
VOCAB, WORDS = 400, 300  # the layer's vocabulary; the words scored (a few hundred)
OPTIONS = {"rf": {"k": 60}, "raf": {}, "relu_raf": {}, "mh_raf": {"heads": 2}}


def _layer(seed: int = 0) -> EmbeddingLayer:
    """An embedding layer with random weights (a BERT layer's shapes, width 16): words as rows of a sample."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, dtype=torch.float64)

    return EmbeddingLayer(
        randn(VOCAB, 16), randn(32, 16), randn(16), 1 + 0.1 * randn(16), 0.1 * randn(16), 1e-12
    )  # fmt: skip


def _task(layer: EmbeddingLayer, seed: int = 1):
    """N + 1 samples of random tokens through the layer, labels +-1; the new sample's token ids."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, size=(N_ + 1, n_))
    samples = torch.stack([layer.sample(list(row), d_) for row in ids])
    labels = torch.as_tensor(rng.choice([-1.0, 1.0], size=N_ + 1))
    return samples[:N_], labels[:N_], samples[N_], float(labels[N_]), ids[N_]


def _brute(name, weights, Xt, yt, X, y, rows):
    """Every word's outcome by an independent path: X'(w) formed, phi(X'(w)) by the plain map, theta* by pinv,
    theta_f by its closed form, theta_r by pinv of the stacked features, P phi with P = I - pinv(Phi) Phi."""
    N, V = Xt.shape[0], rows.shape[0]
    Phi = maps.apply(name, Xt, weights).reshape(N, -1)
    phi = maps.apply(name, X, weights).reshape(-1)
    pinv = torch.linalg.pinv(Phi)
    theta = pinv @ yt
    pphi = phi - pinv @ (Phi @ phi)
    theta_f = theta + phi * (y - phi @ theta) / (phi @ phi)
    theta_r = torch.linalg.pinv(torch.cat([Phi, phi[None]])) @ torch.cat([yt, torch.tensor([y], dtype=torch.float64)])
    moved = X.expand(V, -1, -1).clone()
    moved[:, I_] = rows
    phis = maps.apply(name, moved, weights).reshape(V, -1)
    t0, D0 = phi @ theta, phis @ theta
    out = {}
    for training, th, v in (("fine_tune", theta_f, phi), ("retrain", theta_r, pphi)):
        D1 = phis @ th
        out[training] = {
            "D0": D0, "D1": D1, "err": (D1 + y) ** 2, "gamma_min": torch.maximum(D0.abs(), t0.abs()),
            "alignment": phis @ v / (v @ v),
        }  # fmt: skip
    return out


def _loss(out, loss, penalty):
    if loss == "surrogate":
        return (out["alignment"] + 1) ** 2
    return out["err"] + penalty * out["D0"] ** 2 if loss == "penalised" else out["err"]


def _frontier_brute(gamma, err, keep):
    """The words no other word beats in both (at most as large in one, smaller in the other): O(V^2)."""
    g, e = gamma[:, None], err[:, None]
    beaten = ((gamma <= g) & (err < e)) | ((gamma < g) & (err <= e))  # [j, k]: word k beats word j
    beaten &= keep[None, :]
    return set(torch.nonzero(keep & ~beaten.any(1))[:, 0].tolist())


def _scan(name, dtype):
    layer = _layer()
    Xt, yt, X, y, ids = _task(layer)
    opts = OPTIONS[name]
    W = maps.sample_weights(name, 5, n_, d_, dtype=torch.float64, **opts)
    setup = G.prepare(name, Xt, yt, X, y, seed=5, position=I_, weights=W, options=opts, dtype=dtype, also=(0,))
    word_ids = np.arange(WORDS)
    rows = layer.rows(word_ids, I_, d_)
    exclude = int(ids[I_]) if ids[I_] < WORDS else None
    found = scan_words(setup, rows, exclude=exclude, top_k=5)
    return found, _brute(name, W, Xt, yt, X, y, rows), exclude


# float64 scans (RAF's and ReLU-RAF's own dtype; RF asked for it): every word within 1e-8 of the independent
# path (both float64; they differ by the pinv's and the Gram path's rounding, ~1e-13 here); the float32 scans
# (RF's and mh_raf's own dtype) within 1e-4 (measured: 6e-6 for mh_raf's Err), their rechecked words 1e-8.
# mh_raf has no fast path: the full map, batched over the words.
CASES = [("rf", torch.float64, 1e-8), ("rf", None, 1e-4), ("raf", None, 1e-8), ("relu_raf", None, 1e-8)]
CASES += [("mh_raf", None, 1e-4)]


@pytest.mark.parametrize("name,dtype,tol", CASES)
def test_every_word_equals_an_independent_forward(name, dtype, tol):
    found, brute, exclude = _scan(name, dtype)
    assert found.words == found.vocab == WORDS  # every word scored
    for training in ("fine_tune", "retrain"):
        ours, ref = found.outcomes[training], brute[training]
        for key in ("D0", "D1", "err", "gamma_min", "alignment"):
            torch.testing.assert_close(getattr(ours, key), ref[key], rtol=0, atol=tol, msg=f"{training} {key}")
        exact = found.float64  # every word of a float64 scan; else those evaluated again with the plain map
        assert all(exact[c.index] for c in found.choices)
        assert int(exact.sum()) == (WORDS if found.dtype == "float64" else found.rechecked) > 0
        for key in ("D0", "err", "alignment"):
            torch.testing.assert_close(getattr(ours, key)[exact], ref[key][exact], rtol=0, atol=1e-8)
        # D1 - D0 = a (y - t0) for every word
        torch.testing.assert_close(ours.D1 - ours.D0, ours.alignment * (found.y - found.t0), rtol=0, atol=1e-9)
    assert found.exclude == exclude


@pytest.mark.parametrize("name,dtype", [("rf", None), ("raf", None), ("relu_raf", None)])
def test_the_best_words_and_frontiers_are_the_brute_force_ones(name, dtype):
    found, brute, exclude = _scan(name, dtype)
    keep = torch.ones(WORDS, dtype=torch.bool)
    if exclude is not None:
        keep[exclude] = False
    assert {(t, loss, p) for t, loss, p in word_losses()} == {(c.training, c.loss, c.penalty) for c in found.choices}
    for c in found.choices:
        values = _loss(brute[c.training], c.loss, c.penalty).masked_fill(~keep, math.inf)
        assert c.index == int(torch.argmin(values)), (c.training, c.loss, c.penalty)
        assert c.value == pytest.approx(float(values.min()), abs=1e-8)
        assert c.top[0] == c.index and c.top_values == sorted(c.top_values) and len(c.top) == 5
        assert c.stats_words == int(keep.sum()) and c.p01 <= c.median
        assert c.radius == pytest.approx(float(found.radii[c.index]))
    for f in found.frontiers:
        ref = brute[f.training]
        assert set(f.index) == _frontier_brute(ref["gamma_min"], ref["err"], keep)
        assert f.gamma_min == sorted(f.gamma_min) and f.err == sorted(f.err, reverse=True)
        hits = (ref["err"] < 1) & (ref["gamma_min"] <= 1.5) & keep
        assert found.reaching(f.training, 1.0, 1.5) == int(hits.sum())
        assert (f.best_err(1.5) < 1) == bool(hits.any())


def test_pareto_frontier_of_known_points():
    gamma = torch.tensor([1.0, 1.0, 2.0, 0.5, 3.0, 2.0, 0.5], dtype=torch.float64)
    err = torch.tensor([3.0, 2.0, 1.0, 4.0, 1.0, 0.5, 5.0], dtype=torch.float64)
    # (0.5, 4) beats (0.5, 5); (1, 2) beats (1, 3); (2, 0.5) beats (2, 1) and (3, 1)
    assert pareto_frontier(gamma, err).tolist() == [3, 1, 5]
    keep = torch.tensor([True, True, True, False, True, False, True])
    assert pareto_frontier(gamma, err, keep).tolist() == [6, 1, 2]


@pytest.mark.parametrize("name", ["rf", "raf"])
def test_a_setup_moved_to_cls_is_the_setup_prepared_there(name):
    """Explicit weights: ``prepare(position=i, also=(0,)).at(0)`` equals ``prepare(position=0)`` (the same
    first stage and functionals); without ``also`` a position is refused, for every map alike."""
    layer = _layer()
    Xt, yt, X, y, _ = _task(layer)
    W = maps.sample_weights(name, 5, n_, d_, dtype=torch.float64, **OPTIONS[name])
    kw = dict(seed=5, weights=W, options=OPTIONS[name], dtype=torch.float64)
    moved = G.prepare(name, Xt, yt, X, y, position=I_, also=(0,), **kw).at(0)
    direct = G.prepare(name, Xt, yt, X, y, position=0, **kw)
    D = torch.randn((7, d_), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert moved.position == 0 and moved.t0 == direct.t0
    torch.testing.assert_close(moved.functionals(D), direct.functionals(D), rtol=0, atol=1e-12)
    torch.testing.assert_close(moved.functionals.exact(D), direct.functionals.exact(D), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"also=\(2,\)"):
        direct.at(2)
    with pytest.raises(ValueError, match="also must hold token indices"):
        G.prepare(name, Xt, yt, X, y, position=I_, also=(n_,), **kw)


def test_joint_span_draw_has_the_covariance_of_the_weights():
    """``span_rf`` at two positions: the rows of ``[pre-activations, u, B_0, B_2]`` are i.i.d.
    ``N(0, Z^T Z / D)`` with ``Z = [flat(X_1..X_N), flat(X), e_block0, e_block2]``, entry by entry within 5
    standard errors over k = 200,000 rows (as the one-position test in test_generalisation.py); one position
    in a list draws what the position alone draws."""
    n, d, N, k = 3, 4, 5, 200_000
    Xt, _, X, _ = G.synthetic_task(N, n, d, seed=11)
    pre, u, B, _ = functionals.span_rf(Xt.double(), X.double(), [0, 2], seed=3, k=k)
    assert B.shape == (k, 2 * d)
    draw = torch.cat([pre.T, u[:, None], B.double()], dim=1)
    Z = torch.cat([Xt.double().reshape(N, -1), X.double().reshape(1, -1), torch.zeros((2 * d, n * d))])
    Z[N + 1 : N + 1 + d, 0:d] = torch.eye(d)
    Z[N + 1 + d :, 2 * d : 3 * d] = torch.eye(d)
    expected = Z @ Z.T / (n * d)
    empirical = draw.T @ draw / k
    var = expected.diagonal()
    se = ((var[:, None] * var[None, :] + expected**2) / k).sqrt()
    assert float(((empirical - expected).abs() / se).max()) < 5
    one = functionals.span_rf(Xt.double(), X.double(), 1, seed=3, k=50)
    listed = functionals.span_rf(Xt.double(), X.double(), [1], seed=3, k=50)
    assert all(torch.equal(a, b) for a, b in zip(one[:3], listed[:3], strict=True))


def test_rf_span_setup_moves_to_cls_on_the_same_weights():
    """The span sampler with ``also``: one draw, so the moved setup keeps t0 and phi, and its [CLS] block
    is the jointly drawn one (not the block of a setup drawn at [CLS] alone)."""
    Xt, yt, X, y = G.synthetic_task(10, 4, 6, seed=2)
    setup = G.prepare("rf", Xt, yt, X, y, seed=4, position=2, also=(0,), k=40)
    at0 = setup.at(0)
    assert at0.t0 == setup.t0 and at0.phi2 == setup.phi2
    assert torch.equal(at0.functionals.layer.B, setup.functionals.blocks[0])
    assert not torch.equal(at0.functionals.layer.B, setup.functionals.layer.B)
    zero = torch.zeros((1, 6), dtype=torch.float64)
    torch.testing.assert_close(at0.functionals.exact(zero), setup.functionals.exact(zero), rtol=0, atol=1e-12)


def test_a_search_in_a_ball_of_another_radius():
    Xt, yt, X, y = G.synthetic_task(8, 4, 6, seed=2)
    setup = G.prepare("raf", Xt, yt, X, y, seed=4, position=1)
    small, wide = (G.search(setup, "fine_tune", "direct", seed=1, radius=r, max_steps=200) for r in (0.5, 4.0))
    assert small.delta_norm <= 0.5 + 1e-9 and wide.delta_norm > 0.5
    assert small.err >= wide.err - 1e-6  # the smaller ball is inside the larger one
    with pytest.raises(ValueError, match="radius must be a positive finite number"):
        G.search(setup, "fine_tune", "direct", radius=0.0)


def test_word_simulation_runs_every_setting_on_one_simulation():
    layer = _layer()
    Xt, yt, X, y, _ = _task(layer)
    setup = G.prepare("raf", Xt, yt, X, y, seed=5, position=I_, also=(0,))
    rows = layer.rows(np.arange(WORDS), I_, d_)
    sim = word_simulation(setup, rows, penalties=(0.1,), seed=2, search={"restarts": 4, "max_steps": 60})
    losses = word_losses((0.1,))
    assert len(sim.continuous) == 3 * len(losses) and set(sim.seconds) == {"words", "cls", "position", "word_radius"}
    root = math.sqrt(d_)
    for key in losses:
        best = sim.words.choice(*key)
        cls, here, ball = (sim.search(s, *key) for s in ("cls", "position", "word_radius"))
        assert (cls.position, cls.radius, here.position, here.radius) == (0, root, I_, root)
        assert ball.position == I_ and ball.radius == best.radius
        assert ball.result.delta_norm <= best.radius * (1 + 1e-9)
        assert cls.result.t0 == here.result.t0 == sim.words.t0  # one first stage
    with pytest.raises(ValueError, match="also="):
        word_simulation(G.prepare("raf", Xt, yt, X, y, seed=5, position=I_), rows)
    with pytest.raises(ValueError, match=r"shape \(V, d\)"):
        scan_words(setup, rows[:, :4])
