"""The authors' word-sensitivity algorithm (the baseline to beat), after the published scripts of Bombari &
Mondelli (2024) with the departures of docs/methods.md ("The authors' algorithm"): dense float64 weights, plain
gradient steps on the whole map projected on the ball of radius ``sqrt(d)`` around ``x_i``, from ``x_i + 0.1
N(0, I)``. Their generalisation algorithm is in ``wordsens.generalisation.reference``."""

from __future__ import annotations

import math
from typing import Any

import torch

from .. import maps
from ..maps import registry
from ..maps.spec import MapSpec
from ..seeds import derive_seed, generator
from .engine import Search, SearchContext, feasible, project
from .full_map import cast_weights

Tensor = torch.Tensor


def authors_start(seed: int, position: int, d: int) -> Tensor:
    """The start of the authors' search at ``position``: ``0.1 N(0, I_d)`` (float64, CPU), seeded."""
    return 0.1 * torch.randn(
        d, generator=generator(derive_seed(seed, "reference-start", position)), dtype=torch.float64
    )


def ws_search(spec: MapSpec, X: Tensor, weights: Any, position: int, seed: int) -> tuple[Tensor, float, int]:
    """The authors' algorithm on the full map (its spec) in float64; returns (best delta, its change, steps)."""
    n, d = X.shape
    r = math.sqrt(d)
    lr, steps = spec.reference[0], spec.reference_steps(n)
    phi0 = maps.apply(spec, X, weights, check=True)
    onehot = torch.zeros((n, 1), dtype=X.dtype, device=X.device)
    onehot[position] = 1.0
    delta = authors_start(seed, position, d).to(X.device)
    best_delta, best_change = delta.clone(), -1.0
    for _ in range(steps):
        delta.requires_grad_(True)
        phi = maps.apply(spec, X + onehot * delta, weights)
        diff = phi - phi0
        rmse = torch.sqrt(torch.mean(diff * diff))
        (grad,) = torch.autograd.grad(rmse, delta)
        change = float(torch.linalg.vector_norm(diff.detach()))
        if change > best_change:
            best_change, best_delta = change, delta.detach().clone()
        with torch.no_grad():
            delta = project(delta.detach() + lr * grad, r)
    with torch.no_grad():
        change = float(torch.linalg.vector_norm(maps.apply(spec, X + onehot * delta, weights) - phi0))
    if change > best_change:
        best_change, best_delta = change, delta.detach().clone()
    return best_delta, best_change, steps


def ws_estimate(
    spec: MapSpec, X64: Tensor, seed: int, positions: list[int], weights: Any, ctx: SearchContext
) -> Search:
    """``ws_search`` at every position of ``positions`` on dense float64 weights (drawn from ``seed`` unless
    given), with the map's certificate where it has one (``MapSpec.upper``)."""
    n, d = X64.shape
    if weights is None:
        weights = maps.sample_weights(
            spec, seed, n, d, dtype=torch.float64, device=ctx.device, draw_on=ctx.draw_on, **ctx.options
        )
    else:
        weights = cast_weights(weights, torch.float64, ctx.device)
    X = X64.to(ctx.device)
    phi_norm = float(torch.linalg.vector_norm(maps.apply(spec, X, weights, check=True)))
    best: Search | None = None
    profile, total = [], 0
    for pos in positions:
        delta, change, steps = ws_search(spec, X, weights, pos, seed)
        total += steps
        if best is None or change > best.change:
            best = Search(pos, feasible(delta, math.sqrt(d)), change, phi_norm)
        profile.append(change / phi_norm if phi_norm > 0 else 0.0)
    assert best is not None
    best.steps, best.profile = total, profile
    if spec.upper is not None:
        certificate = registry.resolve(spec.upper)
        best.upper = max(certificate(X, weights, p) for p in positions)
    return best
