"""Word-sensitivity search: equivalent forms, validity of bounds, the reference, errors (``wordsens ws``:
tests/unit/cli/test_cli_commands.py)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps.attention import RELU, SOFTMAX
from wordsens.search import Problem
from wordsens.search.attention import AttentionProblem


def _direct_change(map_name, X, weights, position, delta):
    f = maps.feature_map(map_name)
    X = X.to(torch.float64)
    Xp = X.clone()
    Xp[position] += delta.to(torch.float64)
    w = [V.double() for V in weights] if isinstance(weights, list) else weights.double()
    base = f(X, w)
    return float(torch.linalg.vector_norm(f(Xp, w) - base) / torch.linalg.vector_norm(base))


@pytest.mark.parametrize("norm", [SOFTMAX, RELU], ids=["softmax", "relu"])
@pytest.mark.parametrize("n,d,i", [(7, 5, 3), (1, 4, 0), (12, 9, 11)])
def test_attention_incremental_form_matches_full_map(norm, n, d, i):
    X = synthetic_sample(n, d, seed=1)
    W = maps.attention_weights(2, d, dtype=torch.float64)
    problem = AttentionProblem(X, W, i, norm)
    D = 2 * torch.randn(6, d, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    # value (one row and one column updated) against the plain map in float64
    torch.testing.assert_close(problem.value(D).sqrt(), problem.exact(D), rtol=1e-10, atol=1e-10)
    # the hand-written gradient against autograd
    v_auto, g_auto = Problem.value_and_grad(problem, D)
    v_hand, g_hand = problem.value_and_grad(D)
    torch.testing.assert_close(v_hand, v_auto, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(g_hand, g_auto, rtol=1e-9, atol=1e-9)


def test_attention_incremental_form_on_zero_relu_rows():
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    X = X / X.norm(dim=-1, keepdim=True) * math.sqrt(2)
    W = -torch.eye(2, dtype=torch.float64)
    problem = AttentionProblem(X, W, 0, RELU)
    D = torch.tensor([[0.0, 0.0], [-3.0, 0.5], [1.0, -2.0]], dtype=torch.float64)
    torch.testing.assert_close(problem.value(D).sqrt(), problem.exact(D), rtol=1e-10, atol=1e-10)
    value, grad = problem.value_and_grad(D)
    assert torch.isfinite(value).all() and torch.isfinite(grad).all()


@pytest.mark.parametrize("map_name", ["rf", "drf", "raf", "relu_raf"])
@pytest.mark.parametrize("method", ["default", "reference"])
def test_estimate_is_a_valid_lower_bound(map_name, method):
    n, d = (6, 5) if method == "default" else (3, 4)
    X = synthetic_sample(n, d, seed=4)
    weights = maps.sample_weights(map_name, 7, n, d, L=2)
    res = search.estimate(map_name, X, seed=7, weights=weights, method=method, position=1)
    assert res.delta_norm <= math.sqrt(d) * (1 + 1e-12)
    assert res.delta.shape == (d,)
    # lower is the change reached by delta, recomputed with the plain map
    assert res.lower == pytest.approx(_direct_change(map_name, X, weights, 1, res.delta), rel=1e-9)
    assert res.phi_norm > 0 and res.steps > 0 and res.seconds > 0
    if map_name == "rf":
        assert res.upper is not None and res.lower <= res.upper
    else:
        assert res.upper is None
    assert json.dumps(res.as_dict())


def test_default_beats_reference_on_small_instances():
    """RF and DRF search in float32 and do not run the authors' algorithm as a candidate: their
    default is at or above it here by at least 1.9e-4 (DRF, seed 1), while another CPU's kernels move
    a float32 search by up to 4e-4 (tests/regression_fixture.py): compared at 1e-3."""
    for map_name, n, d in [("rf", 10, 8), ("drf", 6, 6)]:
        for seed in range(2):
            X = synthetic_sample(n, d, seed=seed)
            weights = maps.sample_weights(map_name, seed, n, d, L=2)
            ours = search.estimate(map_name, X, seed=seed, weights=weights)
            ref = search.estimate(map_name, X, seed=seed, weights=weights, method="reference")
            assert ours.lower >= ref.lower * (1 - 1e-3), (map_name, seed, ours.lower, ref.lower)


# Instances small enough that the authors' 50 n steps stay cheap. Single-head maps: 54 each, n in
# {2, 3, 4}, d in {4, 6, 8}, 6 seeds. The two-head maps (mh_raf, the block), five to ten times
# costlier per instance, 12 each: n in {2, 4}, d in {4, 8}, 3 seeds; they reach the reference by the
# same candidate. Before the authors' algorithm became a candidate of the default search, ReLU-RAF
# ended below it on 3 of 20 seeds at n = 8, d = 16 on one CPU and on 2 of 10 seeds at n = d = 32 on
# another.
_SMALL = [(n, d, seed) for n in (2, 3, 4) for d in (4, 6, 8) for seed in range(6)]
_FEW = [(n, d, seed) for n in (2, 4) for d in (4, 8) for seed in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize("map_name", ["raf", "relu_raf", "sigmoid_raf", "linear_raf", "mh_raf", "block"])
def test_attention_default_is_never_below_the_reference(map_name):
    """Where the authors' schedule fits the step budget (50 n <= max_steps), their algorithm runs as
    one more candidate of the default search: the default estimate cannot end below theirs."""
    options = {"heads": 2} if map_name in ("mh_raf", "block") else {}
    instances = _FEW if options else _SMALL
    below = []
    for n, d, seed in instances:
        X = synthetic_sample(n, d, seed=seed)
        weights = maps.sample_weights(map_name, seed, n, d, **options)
        ours = search.estimate(map_name, X, seed=seed, weights=weights, options=options, max_steps=200, restarts=16)
        ref = search.estimate(map_name, X, seed=seed, weights=weights, options=options, method="reference")
        if ours.lower < ref.lower * (1 - 1e-9):
            below.append((n, d, seed, ours.lower, ref.lower))
    assert not below, below


def test_the_authors_algorithm_is_a_candidate_only_where_its_schedule_fits():
    """Below the budget the default's steps include the authors' 50 n; above, they do not run."""
    n, d = 4, 8
    X = synthetic_sample(n, d, seed=1)
    W = maps.sample_weights("relu_raf", 1, n, d)
    within = search.estimate("relu_raf", X, seed=1, weights=W, max_steps=50 * n)
    beyond = search.estimate("relu_raf", X, seed=1, weights=W, max_steps=50 * n - 1)
    assert within.steps > 50 * n
    assert beyond.steps <= 50 * n - 1 + 300  # the search's budget and at most one polish


def test_position_all_is_the_max_over_positions():
    n, d = 4, 3
    X = synthetic_sample(n, d, seed=5)
    V = maps.rf_weights(5, n, d)
    every = [search.estimate("rf", X, seed=5, weights=V, position=p).lower for p in range(n)]
    res = search.estimate("rf", X, seed=5, weights=V, position="all")
    assert res.lower == pytest.approx(max(every), rel=1e-6)
    assert res.position == every.index(max(every))
    assert res.upper >= res.lower


def test_blockwise_sampler_equals_dense_weights():
    """'blockwise' never builds V but uses exactly the dense matrix of the same seed."""
    n, d = 5, 3
    X = synthetic_sample(n, d, seed=6)
    for map_name in ("rf", "drf"):
        dense = maps.sample_weights(map_name, 11, n, d, L=2)
        a = search.estimate(map_name, X, seed=11, position="all", sampler="blockwise")
        b = search.estimate(map_name, X, seed=11, position="all", weights=dense)
        assert a.sampler == "blockwise" and b.sampler == "dense"
        assert a.lower == pytest.approx(b.lower, rel=1e-5)
        assert a.phi_norm == pytest.approx(b.phi_norm, rel=1e-9)


def test_exact_sampler_block_is_the_dense_block():
    n, d = 5, 3
    X = synthetic_sample(n, d, seed=6)
    res = search.estimate("rf", X, seed=11, position=2)
    assert res.sampler == "exact" and res.options == {"k": None}
    # same seed, same block: the certificate (which depends on B only) agrees with the dense path
    dense = search.estimate("rf", X, seed=11, position=2, weights=maps.rf_weights(11, n, d))
    assert res.upper * res.phi_norm == pytest.approx(dense.upper * dense.phi_norm, rel=1e-9)


def test_same_seed_same_numbers():
    X = synthetic_sample(6, 4, seed=1)
    for map_name in ("rf", "drf", "raf", "relu_raf"):
        a = search.estimate(map_name, X, seed=3)
        b = search.estimate(map_name, X, seed=3)
        assert a.lower == b.lower and torch.equal(a.delta, b.delta)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(map_name="gelu"), "unknown map"),
        (dict(X=torch.ones(3)), "shape"),
        (dict(X=torch.ones(2, 3, 4)), "one sample"),
        (dict(X=torch.full((3, 4), float("nan"))), "NaN"),
        (dict(X=torch.ones(0, 4)), "n >= 1"),
        (dict(position=5), "token index"),
        (dict(position=-1), "token index"),
        (dict(position="first"), "token index"),
        (dict(method="adam"), "unknown method"),
        (dict(sampler="fast"), "unknown sampler"),
        (dict(map_name="drf", options={"L": 0}), "option L must be a positive integer"),
        (dict(map_name="drf", options={"L": 1.5}), "option L must be a positive integer"),
        (dict(options={"k": 0}), "option k must be a positive integer"),
        (dict(map_name="raf", dtype=torch.bfloat16), "raf search does not run in reduced precision"),
        (dict(map_name="drf", dtype=torch.bfloat16, method="reference"), "the reference method is float64"),
        (dict(options={"heads": 2}), "has no option heads"),
        (dict(restarts=0), "restarts must be"),
        (dict(weights=torch.ones(3, 3)), "RF weights"),
        (dict(map_name="raf", weights=torch.ones(3, 3)), "expected \\(4, 4\\)"),
        (dict(map_name="drf", weights=[torch.ones(3, 3)]), "expected \\(12, 12\\)"),
        (dict(position="all", sampler="exact"), "blockwise"),
        (dict(device="tpu"), "device"),
    ],
)
def test_bad_input(kwargs, message):
    args = dict(map_name="rf", X=synthetic_sample(3, 4, seed=0), seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        search.estimate(args.pop("map_name"), args.pop("X"), **args)


def test_refuses_jobs_that_cannot_fit(monkeypatch):
    from wordsens.compute.devices import InsufficientResources

    monkeypatch.setenv("WORDSENS_MAX_MEMORY_MB", "400")
    X = synthetic_sample(50, 192, seed=0)
    with pytest.raises(InsufficientResources, match="profiles/slurm"):  # the dense 9600 x 9600 RF matrix
        search.estimate("rf", X, seed=0, sampler="dense", device="cpu")
    with pytest.raises(InsufficientResources, match="max-memory-gb"):  # not even one streamed DRF block fits
        search.estimate("drf", X, seed=0, options={"L": 2}, device="cpu", max_memory_gb=0.005)


def test_no_nan_for_extreme_inputs():
    X = synthetic_sample(5, 4, seed=0) * 1e3  # rows far off the sphere: huge scores
    for map_name in ("raf", "relu_raf"):
        res = search.estimate(map_name, X, seed=0)
        assert math.isfinite(res.lower) and torch.isfinite(res.delta).all()
