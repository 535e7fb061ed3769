"""DRF's search in reduced precision (bfloat16 products on the float32 map): its estimate is a value of
the float32 map at the Delta it returns, and it lands within 1% of the float32 search."""

from __future__ import annotations

import pytest
import torch

from wordsens import maps, search
from wordsens.compute.map_costs import DRF_RESTARTS, drf_layout
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry
from wordsens.search import Problem, SearchContext
from wordsens.search.drf import DRFProblem, ReducedDRFProblem, drf_problem, drf_tail

CPU = torch.device("cpu")


def _ctx(dtype: torch.dtype, budget: int | None = None) -> SearchContext:
    """The context of an exact-sampler DRF search on the CPU with the default batch of restarts."""
    return SearchContext(registry.get("drf"), dtype, CPU, "exact", budget=budget, restarts=DRF_RESTARTS)


def _relative_change(X: torch.Tensor, weights: list[torch.Tensor], delta: torch.Tensor) -> float:
    """The float32 map's relative change at ``delta`` (row 0 moved), evaluated in float64 on the
    float32 weights: an independent evaluation with the plain formula (``maps.drf``)."""
    W64 = [V.to(torch.float64) for V in weights]
    Xp = X.clone()
    Xp[0] += delta.to(torch.float64)
    base = maps.drf(X, W64)
    return float(torch.linalg.vector_norm(maps.drf(Xp, W64) - base) / torch.linalg.vector_norm(base))


@pytest.mark.parametrize("L", [2, 3])
def test_bfloat16_estimate_is_a_value_of_the_float32_map_within_1_percent(L):
    """Six trials per depth (n = 8, d = 16) on float32 weights. The bfloat16 estimate is re-evaluated
    with the float32 weights in float64, so it equals the float32 map's change at its Delta (to float64
    rounding: never above it) and it is a valid lower bound; measured 0.04-0.14% below the float32
    search (the bfloat16 products round the change by about 2^-9 relative per layer, which ends the
    ascent a little earlier), so 1% is the issue's target with margin."""
    n, d = 8, 16
    for trial in range(6):
        seed = 100 * L + trial
        X = synthetic_sample(n, d, seed=seed)
        weights = maps.sample_weights("drf", seed, n, d, L=L)  # float32: the map both searches see
        full = search.estimate("drf", X, seed=seed, weights=weights, device="cpu")
        reduced = search.estimate("drf", X, seed=seed, weights=weights, device="cpu", dtype=torch.bfloat16)
        assert full.dtype == "float32" and reduced.dtype == "bfloat16"
        true = _relative_change(X, weights, reduced.delta)
        assert reduced.lower == pytest.approx(true, rel=1e-12)
        assert reduced.lower <= true * (1 + 1e-12)
        assert reduced.delta_norm <= d**0.5 * (1 + 1e-12)
        assert abs(reduced.lower / full.lower - 1) <= 0.01, (trial, reduced.lower, full.lower)


def test_bfloat16_search_with_drawn_weights_keeps_the_float32_map():
    """Weights drawn from the seed (the exact sampler): the reduced search holds bfloat16 copies of the
    resident layers, yet its estimate is the float32 search's map evaluated at its own Delta."""
    X = synthetic_sample(6, 8, seed=5)
    full = search.estimate("drf", X, seed=9, options={"L": 3}, device="cpu")
    reduced = search.estimate("drf", X, seed=9, options={"L": 3}, device="cpu", dtype=torch.bfloat16)
    assert full.phi_norm == pytest.approx(reduced.phi_norm, rel=1e-12)  # the same map: same phi(X)
    assert abs(reduced.lower / full.lower - 1) <= 0.01
    # the float32 problem's exact change at the bfloat16 Delta is the reduced estimate
    tail = drf_tail(9, 6, 8, 3, _ctx(torch.float32))
    problem = drf_problem(X, 0, 9, None, _ctx(torch.float32), tail)
    assert isinstance(problem, DRFProblem) and not isinstance(problem, ReducedDRFProblem)
    change = float(problem.exact(reduced.delta[None].double())[0]) / problem.phi_norm
    assert reduced.lower == pytest.approx(change, rel=1e-12)


@pytest.mark.parametrize("budget", [None, 0])
def test_reduced_problem_gradient_and_values(budget):
    """Resident and streamed tails (a budget of 0 bytes streams every layer): the written-out gradient
    equals autograd on the same reduced value; the value is the squared change of the float32 map up to
    bfloat16 rounding (measured within 0.7%; 3% allows a few roundings of 2^-8 per layer at L = 4), while
    the exact evaluation equals the float32 problem's to float64 rounding."""
    X = synthetic_sample(6, 4, seed=1)
    tail16 = drf_tail(7, 6, 4, 4, _ctx(torch.bfloat16, budget))
    tail32 = drf_tail(7, 6, 4, 4, _ctx(torch.float32, budget))
    assert tail16.streamed == (3 if budget == 0 else 0)
    if budget is None:
        assert all(isinstance(V, torch.Tensor) and V.dtype == torch.bfloat16 for V in tail16.layers)
        assert tail16.exact_layers == [2, 3, 4]  # the float32 map, regenerated from its seed
    p16 = drf_problem(X, 2, 7, None, _ctx(torch.bfloat16, budget), tail16)
    p32 = drf_problem(X, 2, 7, None, _ctx(torch.float32, budget), tail32)
    assert isinstance(p16, ReducedDRFProblem)
    D = 1.5 * torch.randn((5, 4), generator=torch.Generator().manual_seed(3))
    value, grad = p16.value_and_grad(D)
    value_auto, grad_auto = Problem.value_and_grad(p16, D)
    torch.testing.assert_close(value, value_auto, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(grad, grad_auto, rtol=1e-5, atol=1e-5)
    exact16, exact32 = p16.exact(D.double()), p32.exact(D.double())
    torch.testing.assert_close(exact16, exact32, rtol=1e-12, atol=1e-12)
    assert p16.phi_norm == pytest.approx(p32.phi_norm, rel=1e-12)
    torch.testing.assert_close(value.double(), exact32**2, rtol=0.03, atol=0.0)


def test_bfloat16_layout_holds_half_the_bytes():
    """``drf_layout`` in bfloat16: the resident layers at 2 bytes a weight, beside the float32 first
    block and one regeneration buffer; within the budget that fits them all, float32 streams."""
    f32 = drf_layout(20, 32, 4, restarts=16, dtype="float32")
    bf16 = drf_layout(20, 32, 4, restarts=16, dtype=torch.bfloat16)
    D, d = 640, 32
    assert f32.resident == bf16.resident == 3
    # three layers at 2 bytes less a weight; beside them a bfloat16 copy of the first block (2 bytes a
    # weight) and one float32 block with its float64 copy (12 bytes)
    assert f32.bytes - bf16.bytes == 3 * D * D * 2 - D * d * 2 - D * d * 12
    half = drf_layout(20, 32, 4, restarts=16, dtype=torch.bfloat16, budget=bf16.bytes)
    assert half.resident == 3 and half.streamed == 0
    assert drf_layout(20, 32, 4, restarts=16, dtype="float32", budget=bf16.bytes).streamed > 0
    assert "bfloat16" in bf16.detail


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_bfloat16_on_cuda_keeps_the_float32_map():
    """On a GPU (bfloat16 tensor-core products): the same properties as on the CPU, on explicit float32
    weights; the float64 evaluation on the GPU sums in another order than the CPU's (1e-9)."""
    X = synthetic_sample(8, 16, seed=3)
    weights = maps.sample_weights("drf", 3, 8, 16, L=3)
    full = search.estimate("drf", X, seed=3, weights=weights, device="cuda")
    reduced = search.estimate("drf", X, seed=3, weights=weights, device="cuda", dtype=torch.bfloat16)
    assert reduced.device.startswith("cuda") and reduced.dtype == "bfloat16"
    assert reduced.lower == pytest.approx(_relative_change(X, weights, reduced.delta), rel=1e-9)
    assert abs(reduced.lower / full.lower - 1) <= 0.01
