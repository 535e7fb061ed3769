"""RF's subspace search does not drift: the image ``B Delta`` its steps are accepted on is the true
image of the accepted ``Delta`` (float64 to 1e-6, float32 to 1e-3), so float64 and float32 reach
the same estimate, and both reach the optimum of an independent float64 multi-start ascent."""

from __future__ import annotations

import math

import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry
from wordsens.search.engine import SearchContext
from wordsens.search.first_layer import image
from wordsens.search.rf import image_and_gradient, orthonormal_images, rf_prepare
from wordsens.seeds import derive_seed, generator

SIZES = [(16, 8), (32, 8), (32, 16), (64, 16)]  # (d, n), k = n d
IMAGE_TOL = {torch.float64: 1e-6, torch.float32: 1e-3}


def _instance(d: int, n: int, trial: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A sample X (n, d) and explicit RF weights V (k, n d), float32 as drawn: both dtypes and the
    multi-start optimum see the same numbers."""
    X = synthetic_sample(n, d, seed=derive_seed("rf-drift", "X", d, n, trial))
    V = maps.rf_weights(derive_seed("rf-drift", "V", d, n, trial), n, d)
    return X, V


def _multistart_optimum(X: torch.Tensor, V: torch.Tensor, *, starts: int = 256, steps: int = 300) -> float:
    """The relative change ``max ||relu(V flat(X^0(Delta))) - relu(V flat(X))|| / ||relu(V flat(X))||`` over
    ``||Delta|| <= sqrt(d)`` by plain float64 projected normalised-gradient ascent (autograd, a step that
    doubles on a gain and halves on a loss, which is rejected) from ``starts`` points: the top 8 right
    singular vectors of the active block and their opposites (``torch.linalg.svd``), then uniform points
    of the sphere. Independent of the package's search; the best point is checked on the dense map.
    Measured on 8 trials per size: the best value is within 1e-6 of its 400-step value after at most
    315 steps (1e-4 after 163)."""
    d = X.shape[1]
    V64, X64 = V.to(torch.float64), X.to(torch.float64)
    u = V64 @ X64.reshape(-1)
    B = V64[:, :d]  # moving token 0 by Delta moves V flat(X) by B Delta
    base, r = torch.relu(u), math.sqrt(d)
    top = torch.linalg.svd(B[u > 0], full_matrices=False)[2][:8] * r
    G = torch.randn((starts - 2 * top.shape[0], d), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    D = torch.cat([top, -top, G * (r / torch.linalg.vector_norm(G, dim=-1, keepdim=True))])

    def value_and_grad(D: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        D = D.detach().requires_grad_(True)
        val = ((torch.relu(u + D @ B.T) - base) ** 2).sum(-1)
        return val.detach(), torch.autograd.grad(val.sum(), D)[0]

    val, grad = value_and_grad(D)
    eta = torch.full_like(val, 0.5)
    for _ in range(steps):
        step = grad / torch.linalg.vector_norm(grad, dim=-1, keepdim=True).clamp_min(1e-300)
        cand = D + (eta * r)[:, None] * step
        cand = cand * torch.clamp(r / torch.linalg.vector_norm(cand, dim=-1, keepdim=True), max=1.0)
        cval, cgrad = value_and_grad(cand)
        ok = cval >= val
        D, val, grad = (
            torch.where(ok[:, None], cand, D),
            torch.where(ok, cval, val),
            torch.where(ok[:, None], cgrad, grad),
        )
        eta = torch.where(ok, torch.clamp(eta * 2, max=64.0), eta * 0.5)
    best = int(torch.argmax(val))
    moved = X64.clone()
    moved[0] += D[best]
    dense = float(torch.linalg.vector_norm(torch.relu(V64 @ moved.reshape(-1)) - base))
    assert dense == pytest.approx(math.sqrt(float(val[best])), rel=1e-9)
    return dense / float(torch.linalg.vector_norm(base))


def _audited_search(X: torch.Tensor, V: torch.Tensor, seed: int, dtype: torch.dtype) -> list[float]:
    """The registry's RF search at position 0 (its starts, restarts and stopping rule, as ``estimate``
    runs it on explicit weights), with the image check of every accepted step."""
    settings = registry.get("rf").settings
    ctx = SearchContext(spec=registry.get("rf"), dtype=dtype, device=torch.device("cpu"), restarts=settings.restarts)
    problem = rf_prepare(X.to(torch.float64), seed, V, ctx)(0)
    starts = problem.starts(settings.restarts, generator(derive_seed(seed, "search", 0))).to(dtype)
    audit: list[float] = []
    problem.search(
        starts, max_steps=1000, tol=settings.tol, patience=settings.patience, keep=settings.keep, audit=audit
    )
    return audit


@pytest.mark.parametrize("d,n", SIZES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_accepted_steps_use_the_true_image_of_delta(d, n, dtype, one_thread):
    """At every accepted step of 3 trials, the image the acceptance used equals ``B Delta`` of the
    accepted Delta in float64 to 1e-6 (float64) / 1e-3 (float32). Before the image was computed
    afresh every iteration, the tracked one was off by up to 9.5x (float64) and 9.8x (float32) of
    ``||B Delta||`` on these sizes' first 30 trials, beyond these bounds in 88 of 120 float64 and 18 of
    120 float32 trials."""
    for trial in range(3):
        audit = _audited_search(*_instance(d, n, trial), seed=trial, dtype=dtype)
        assert audit, "no step was accepted: nothing was checked"
        assert max(audit) <= IMAGE_TOL[dtype], (trial, max(audit))


def test_float64_and_float32_agree_on_a_few_trials(one_thread):
    """The quick form of the slow test below: 5 trials at d = 16, n = 8 (before the image was computed
    afresh, float64 was 8.5% below the optimum on average over 30 trials there, 20 of them more than
    0.5% below float32)."""
    for trial in range(5):
        X, V = _instance(16, 8, trial)
        lo64, lo32 = (
            search.estimate("rf", X, seed=trial, weights=V, dtype=dt, device="cpu").lower
            for dt in (torch.float64, torch.float32)
        )
        assert abs(lo64 / lo32 - 1) <= 0.005, (trial, lo64, lo32)


@pytest.mark.slow
@pytest.mark.parametrize("d,n", SIZES)
def test_float64_and_float32_agree_and_reach_the_multistart_optimum(d, n, one_thread):
    """30 trials: float64 and float32 estimates within 0.5% of each other and both within 1% of the
    256-start optimum on every trial. Measured: within 0.12% of each other, at most 0.67% below the
    optimum (mean 0.03-0.06%), never above it by more than 5e-5. The default 5 restarts can still stop
    at a local maximum: on 150 other trials at d = 16, n = 8 one ended 1.7% below the optimum (none
    0.5% below at d = 32, n = 8); a failure here with both dtypes equally low is such a maximum, not
    drift."""
    bad = []
    for trial in range(30):
        X, V = _instance(d, n, trial)
        lo64, lo32 = (
            search.estimate("rf", X, seed=trial, weights=V, dtype=dt, device="cpu").lower
            for dt in (torch.float64, torch.float32)
        )
        opt = _multistart_optimum(X, V)
        if abs(lo64 / lo32 - 1) > 0.005 or abs(lo64 / opt - 1) > 0.01 or abs(lo32 / opt - 1) > 0.01:
            bad.append((trial, lo64 / opt - 1, lo32 / opt - 1))
    assert not bad, f"(trial, float64 / optimum - 1, float32 / optimum - 1): {bad}"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
def test_image_and_gradient_in_one_pass_are_the_plain_image_and_gradient(dtype):
    """The chunked single pass over B (several chunks here) gives ``B Delta`` and the autograd
    gradient of ``||relu(u + B Delta) - relu(u)||^2``."""
    gen = torch.Generator().manual_seed(4)
    k, d, R = 20_000, 32, 3
    B = (torch.randn((k, d), generator=gen, dtype=torch.float64) / math.sqrt(k)).to(dtype)
    u = torch.randn(k, generator=gen, dtype=torch.float64).to(dtype)
    D = torch.randn((R, d), generator=gen, dtype=torch.float64).to(dtype)
    BD, grad = image_and_gradient(B, D, u, torch.relu(u))
    B64, u64, D64 = B.double(), u.double(), D.double().requires_grad_(True)
    want = D64 @ B64.T
    value = ((torch.relu(u64 + want) - torch.relu(u64)) ** 2).sum()
    (want_grad,) = torch.autograd.grad(value, D64)
    rtol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(BD.double(), want.detach(), rtol=rtol, atol=rtol * float(want.abs().max()))
    torch.testing.assert_close(grad.double(), want_grad, rtol=rtol, atol=rtol * float(want_grad.abs().max()))


def test_a_known_vector_is_dropped_below_a_fraction_of_its_error_scale():
    """A last step whose part orthogonal to Delta is 5% of its own norm but 0.05% of |Delta| (the
    scale of its image's rounding error) is kept by default and left out with ``error_scale``."""
    gen = torch.Generator().manual_seed(5)
    R, d, k = 1, 6, 40
    B = torch.randn((k, d), generator=gen, dtype=torch.float64)
    D = torch.randn((R, d), generator=gen, dtype=torch.float64)
    D = D / torch.linalg.vector_norm(D) * 10.0
    side = torch.randn((R, d), generator=gen, dtype=torch.float64)
    side = side - (side @ D.T) / (D @ D.T) * D
    step = 0.01 * D + 0.005 * side / torch.linalg.vector_norm(side)  # |step| ~ 0.1, orthogonal part 0.005
    known = torch.stack([D, step], dim=1)
    known_img = torch.stack([image(B, D), image(B, step)], dim=1)
    grad = torch.randn((R, d), generator=gen, dtype=torch.float64)
    kept = orthonormal_images(known, known_img, grad, B)[0].norm(dim=-1)[0]
    assert kept.tolist() == pytest.approx([1.0, 1.0, 1.0])
    scale = torch.tensor([[10.0, 10.0]], dtype=torch.float64)
    dropped = orthonormal_images(known, known_img, grad, B, error_scale=scale)[0].norm(dim=-1)[0]
    assert dropped.tolist() == pytest.approx([1.0, 0.0, 1.0])
