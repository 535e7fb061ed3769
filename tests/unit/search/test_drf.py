"""Deep random features within a memory budget: streamed layers against resident ones, the gradient
written out against autograd, the budget measured, and where the weights were drawn."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from wordsens import maps, search
from wordsens.compute.map_costs import DRF_RESTARTS, drf_layout
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry
from wordsens.search import Problem, SearchContext
from wordsens.search.drf import DRFProblem, drf_problem, drf_tail

N_, D_, L_ = 6, 4, 4  # D = 24: tiny layers, three of them in the tail


def _ctx(dtype: torch.dtype, budget: int | None, sampler: str = "exact") -> SearchContext:
    """The context of a DRF search on the CPU with the default batch of restarts."""
    spec = registry.get("drf")
    return SearchContext(spec, dtype, torch.device("cpu"), sampler, budget=budget, restarts=DRF_RESTARTS)


def _problem(*, streamed: bool, dtype=torch.float64) -> DRFProblem:
    X = synthetic_sample(N_, D_, seed=1)
    budget = 0 if streamed else None  # no layer fits a budget of 0 bytes: every tail layer streams
    ctx = _ctx(dtype, budget)
    tail = drf_tail(7, N_, D_, L_, ctx)
    assert tail.streamed == (L_ - 1 if streamed else 0)
    return drf_problem(X, 2, 7, None, ctx, tail)


def test_streamed_layers_equal_resident_ones():
    """Same seed, same blocks: values and gradients equal up to float32 summation order (the two
    accumulate the same products in a different order), float64 re-evaluations to 1e-12."""
    resident, streamed = _problem(streamed=False, dtype=torch.float32), _problem(streamed=True, dtype=torch.float32)
    D = torch.randn((5, D_), generator=torch.Generator().manual_seed(0))
    v_r, g_r = resident.value_and_grad(D)
    v_s, g_s = streamed.value_and_grad(D)
    torch.testing.assert_close(v_s, v_r, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(g_s, g_r, rtol=1e-4, atol=1e-5)
    deltas = D.double()
    torch.testing.assert_close(streamed.exact(deltas), resident.exact(deltas), rtol=1e-12, atol=1e-12)
    assert streamed.phi_norm == pytest.approx(resident.phi_norm, rel=1e-12)


@pytest.mark.parametrize("streamed", [False, True])
def test_gradient_written_out_equals_autograd(streamed):
    problem = _problem(streamed=streamed)
    D = torch.randn((4, D_), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    value, grad = problem.value_and_grad(D)
    value_auto, grad_auto = Problem.value_and_grad(problem, D)
    torch.testing.assert_close(value, value_auto, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, grad_auto, rtol=1e-10, atol=1e-12)


def test_streamed_problem_equals_the_dense_map():
    """The streamed problem's exact change against ``maps.drf`` on the dense layers of the same seed
    (the first layer's exact-in-law sampler replaced by explicit weights)."""
    X = synthetic_sample(N_, D_, seed=2)
    weights = maps.drf_weights(5, N_, D_, L_, dtype=torch.float64)
    tail = drf_tail(5, N_, D_, L_, _ctx(torch.float64, 0))
    tail.layers = tail.layers  # every layer streamed, drawn from seed 5 like `weights`
    problem = drf_problem(X, 1, 5, None, _ctx(torch.float64, 0, sampler="dense"), tail, weights[0] @ X.reshape(-1))
    delta = torch.randn((1, D_), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Xp = X.clone()
    Xp[1] += delta[0]
    expected = torch.linalg.vector_norm(maps.drf(Xp, weights) - maps.drf(X, weights))
    # the problem's first layer is the block of layer 1 at position 1: drawn from the same seed
    torch.testing.assert_close(problem.layer.B, weights[0][:, D_ : 2 * D_])
    assert float(problem.exact(delta)[0]) == pytest.approx(float(expected), rel=1e-10)


def test_estimates_with_and_without_streaming_agree():
    X = synthetic_sample(N_, D_, seed=4)
    full = search.estimate("drf", X, seed=3, options={"L": L_}, device="cpu")
    layer_bytes = (N_ * D_) ** 2 * 4
    stream_buffer = N_ * D_ * D_ * (4 + 8)  # one streamed block and its float64 copy
    budget = (
        drf_layout(N_, D_, L_, restarts=DRF_RESTARTS).bytes - 2 * layer_bytes + stream_buffer
    )  # one tail layer resident
    small = search.estimate("drf", X, seed=3, options={"L": L_}, device="cpu", max_memory_gb=budget / 1024**3)
    assert full.streamed_layers == 0 and small.streamed_layers == 2
    # the same problem up to float32 summation order: the searches end at the same maximum
    assert small.lower == pytest.approx(full.lower, rel=1e-4)
    assert small.weights_drawn_on == full.weights_drawn_on == "cpu"


_PEAK_SCRIPT = """
import json, sys, torch
from wordsens import search
from wordsens.data.samples import synthetic_sample
from wordsens.compute.devices import peak_rss_bytes
torch.set_num_threads(1)
budget_gb = float(sys.argv[1])
X = synthetic_sample(40, 64, seed=0)
search.estimate("drf", synthetic_sample(4, 4, seed=0), seed=0, options={"L": 2}, device="cpu")  # warm up kernels
before = peak_rss_bytes()
res = search.estimate("drf", X, seed=0, options={"L": 6}, device="cpu", max_memory_gb=budget_gb or None, max_steps=3)
print(json.dumps({"before": before, "after": peak_rss_bytes(), "streamed": res.streamed_layers}))
"""


@pytest.mark.slow  # DRF searches at two budgets
def test_the_memory_budget_is_respected():
    """n = 40, d = 64, L = 6: five tail layers of 26 MB (131 MB resident). With a 60 MB budget the
    estimate streams the layers that do not fit, and its peak resident memory grows by at most the
    budget (plus 15 MB of allocator slack); without a budget it grows by the whole tail."""

    def run(budget_gb: float) -> dict:
        out = subprocess.run(
            [sys.executable, "-c", _PEAK_SCRIPT, str(budget_gb)], capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    budget = 60 * 1024**2
    small, full = run(budget / 1024**3), run(0)
    assert small["streamed"] >= 3 and full["streamed"] == 0
    assert small["after"] - small["before"] <= budget + 15 * 1024**2, small
    assert full["after"] - full["before"] >= 5 * 26 * 1024**2 * 0.9, full


def test_weights_drawn_on_the_cpu_whatever_the_option_on_a_cpu():
    for draw_on in maps.DRAW_ON:
        torch.testing.assert_close(maps.drf_block(3, 2, 1, 5, 4, draw_on=draw_on), maps.drf_block(3, 2, 1, 5, 4))
        assert maps.drawn_on("cpu", draw_on) == "cpu"
    assert maps.drawn_on("cuda", "device") == "cuda" and maps.drawn_on("cuda", "cpu") == "cpu"
    with pytest.raises(ValueError, match="draw_on"):
        maps.block_generator(0, "cpu", "gpu")
    with pytest.raises(ValueError, match="draw_on"):
        search.estimate("rf", synthetic_sample(3, 4, seed=0), seed=0, draw_on="gpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_cuda_draws_are_seeded_and_recorded():
    """On a GPU, blocks drawn there are reproducible, differ from the CPU's numbers, and the old
    behaviour (CPU draws copied over) gives the CPU's numbers exactly."""
    a = maps.drf_block(3, 2, 1, 5, 4, device="cuda")
    torch.testing.assert_close(a, maps.drf_block(3, 2, 1, 5, 4, device="cuda"))
    assert not torch.equal(a.cpu(), maps.drf_block(3, 2, 1, 5, 4))
    torch.testing.assert_close(
        maps.drf_block(3, 2, 1, 5, 4, device="cuda", draw_on="cpu").cpu(), maps.drf_block(3, 2, 1, 5, 4)
    )
    res = search.estimate("drf", synthetic_sample(N_, D_, seed=0), seed=0, options={"L": 3}, device="cuda")
    assert res.weights_drawn_on == "cuda"


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the device machine)")
def test_cpu_and_cuda_estimates_are_equal_in_law():
    """One grid point (DRF, n = 12, d = 16, L = 3), 120 trials on each device with weights drawn where
    they are used: the GPU's numbers differ from the CPU's but must have the same law. Two-sample
    Kolmogorov-Smirnov test at the 1% level; with 120 trials per side it detects a shift of the
    mean of 0.5 standard deviations with power above 99% (the KS test's power against a location
    shift of 0.5 sd at m = n = 120 is about 0.995, from its asymptotic distribution)."""
    from scipy import stats

    trials = 120
    values = {}
    for device in ("cpu", "cuda"):
        values[device] = [
            search.estimate(
                "drf", synthetic_sample(12, 16, seed=1000 + t), seed=t, options={"L": 3}, device=device
            ).lower
            for t in range(trials)
        ]
    assert stats.ks_2samp(values["cpu"], values["cuda"]).pvalue > 0.01
