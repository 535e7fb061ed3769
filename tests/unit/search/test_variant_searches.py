"""The attention variants' searches (wordsens.search.variants): every fast search against the plain map
(value and gradient), the starts and the sphere, the estimate against the authors' algorithm, every
position and the resource estimates."""

from __future__ import annotations

import math

import pytest
import torch
from search_reference import fast_problem, full_value

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry

VARIANTS = ("sigmoid_raf", "linear_raf", "mh_raf", "block")
# small instances: (n, d, options)
SMALL = {
    "sigmoid_raf": (6, 5, {}),
    "linear_raf": (6, 5, {}),
    "mh_raf": (6, 8, {"heads": 4}),
    "block": (5, 8, {"heads": 2}),
}


# --------------------------------------------------------------------------- fast searches


def _problem(name, X, W, position, options, dtype=torch.float64):
    return fast_problem(name, X, W, options, dtype)(position)


@pytest.mark.parametrize(
    "name,n,d,options",
    [
        ("sigmoid_raf", 7, 6, {}),
        ("sigmoid_raf", 1, 4, {}),
        ("linear_raf", 7, 6, {}),
        ("linear_raf", 1, 4, {}),
        ("mh_raf", 7, 6, {"heads": 3}),
        ("mh_raf", 1, 4, {"heads": 2}),
        ("mh_raf", 5, 12, {}),
        ("block", 5, 8, {"heads": 2}),
    ],
)
def test_fast_value_and_gradient_against_the_full_map(name, n, d, options):
    X = synthetic_sample(n, d, seed=1)
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    gen = torch.Generator().manual_seed(4)
    for position in sorted({0, n // 2, n - 1}):
        problem = _problem(name, X, W, position, options)
        D = 2 * torch.randn(5, d, dtype=torch.float64, generator=gen)
        D[0] = 0.0
        full = full_value(name, X, W, position, D)
        torch.testing.assert_close(problem.value(D), full, rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(problem.exact(D), full.sqrt(), rtol=1e-12, atol=1e-12)
        value, grad = problem.value_and_grad(D)
        Dg = D.clone().requires_grad_(True)
        (g_full,) = torch.autograd.grad(full_value(name, X, W, position, Dg).sum(), Dg)
        torch.testing.assert_close(value, full, rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(grad[1:], g_full[1:], rtol=1e-7, atol=1e-8)
        assert problem.phi_norm == pytest.approx(float(maps.apply(name, X, W).norm()), rel=1e-12)


@pytest.mark.parametrize("name", VARIANTS)
def test_starts_lie_in_the_ball_and_include_the_reference_start(name):
    n, d, options = SMALL[name]
    X = synthetic_sample(n, d, seed=5)
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    problem = _problem(name, X, W, 1, options)
    starts = problem.starts(16, torch.Generator().manual_seed(0))
    norms = torch.linalg.vector_norm(starts, dim=-1)
    assert starts.shape == (16, d) and bool((norms <= math.sqrt(d) * (1 + 1e-12)).all())
    assert bool((norms < 1.0).any())  # the reference's jittered start 0.1 N(0, I)
    xi = X[1] / X[1].norm()
    assert bool(((starts @ xi).abs() > math.sqrt(d) * (1 - 1e-9)).any())  # +-x_i


def test_on_sphere_follows_the_sphere_where_the_gradient_points_out():
    from wordsens.search.variants import OnSphere

    n, d, options = SMALL["sigmoid_raf"]
    X = synthetic_sample(n, d, seed=2)
    W = maps.sample_weights("sigmoid_raf", 3, n, d, dtype=torch.float64)
    problem = _problem("sigmoid_raf", X, W, 1, options)
    wrapped = OnSphere(problem)
    D = torch.randn(6, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    D[:3] *= math.sqrt(d) / D[:3].norm(dim=-1, keepdim=True)  # on the sphere
    D[3:] *= 0.5 / D[3:].norm(dim=-1, keepdim=True)  # inside
    value, grad = problem.value_and_grad(D)
    value_s, grad_s = wrapped.value_and_grad(D)
    torch.testing.assert_close(value_s, value, rtol=0, atol=0)
    outward = (grad * D).sum(-1) > 0
    for r in range(6):
        if r < 3 and outward[r]:  # the tangential part: orthogonal to D, the same tangential component
            assert abs(float(grad_s[r] @ D[r])) < 1e-9 * float(grad[r].norm() * D[r].norm())
            torch.testing.assert_close(grad_s[r] - grad[r], (grad_s[r] - grad[r]) @ D[r] / D[r].norm() ** 2 * D[r])
        else:
            torch.testing.assert_close(grad_s[r], grad[r], rtol=0, atol=0)
    assert bool(outward[:3].any())


# --------------------------------------------------------------------------- estimates against the reference


@pytest.mark.parametrize(
    "name,n,d,options",
    [
        ("sigmoid_raf", 8, 16, {}),
        ("linear_raf", 8, 16, {}),
        ("mh_raf", 8, 16, {"heads": 4}),
        ("block", 5, 8, {"heads": 2}),
    ],
)
def test_estimate_is_at_least_the_reference(name, n, d, options):
    for seed in range(2):
        X = synthetic_sample(n, d, seed=seed)
        W = maps.sample_weights(name, seed, n, d, dtype=torch.float64, **options)
        ours = search.estimate(name, X, seed=seed, weights=W, options=options)
        ref = search.estimate(name, X, seed=seed, weights=W, options=options, method="reference")
        assert ours.lower >= ref.lower * (1 - 1e-9), (name, seed, ours.lower, ref.lower)
        assert ref.steps == 50 * n and ours.options == options
        # both numbers are the map's own relative change at the Delta found
        for res in (ours, ref):
            assert res.delta_norm <= math.sqrt(d) * (1 + 1e-12)
            change = full_value(name, X, W, 0, res.delta.double()[None]).sqrt() / maps.apply(name, X, W).norm()
            assert res.lower == pytest.approx(float(change[0]), rel=1e-9)


def test_position_all_and_resource_estimates():
    X = synthetic_sample(4, 8, seed=6)
    res = search.estimate("mh_raf", X, seed=1, position="all", options={"heads": 2}, restarts=8)
    assert len(res.profile) == 4 and res.lower == pytest.approx(max(res.profile))
    for name in VARIANTS:
        spec = registry.get(name)
        assert spec.label and spec.formula and spec.weight_law and spec.reference == (10.0, "50n")
        assert spec.ws_memory(50, 768).bytes > 0
        assert spec.ws_seconds(50, 768, method="reference") > spec.ws_seconds(50, 768)
