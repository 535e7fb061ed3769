"""The search on the full map, for registered maps without a fast path: every restart evaluates the whole map
on its own moved sample (R, n, d), with autograd; starts: the reference's jittered start, ``+-`` the moved
row's direction and sphere points.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from .. import maps
from ..maps import registry
from .engine import Problem, SearchContext, sphere

Tensor = torch.Tensor


def cast_weights(weights: Any, dtype: torch.dtype, device: torch.device) -> Any:
    """Weights in any of the registry's formats (a tensor, a list, a dict), moved and cast; a number (a
    LayerNorm's ``eps``) becomes a 0-d tensor."""
    if isinstance(weights, Tensor):
        return weights.to(device=device, dtype=dtype)
    if isinstance(weights, numbers.Real) and not isinstance(weights, bool):
        return torch.tensor(weights, dtype=dtype, device=device)
    if isinstance(weights, dict):
        return {key: cast_weights(value, dtype, device) for key, value in weights.items()}
    return [cast_weights(value, dtype, device) for value in weights]


class FullMapProblem(Problem):
    """``||phi(X^i(Delta)) - phi(X)||^2`` with the map evaluated in full for every restart."""

    def __init__(
        self,
        forward: Callable[..., Tensor],
        X64: Tensor,
        weights: Any,
        position: int,
        *,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        d = X64.shape[1]
        self.forward, self.i, self.d = forward, position, d
        self.radius = math.sqrt(d)
        self.X = X64.to(device=device, dtype=dtype)
        self.W = cast_weights(weights, dtype, device)
        self.X64, self.W64 = X64.to(device), cast_weights(weights, torch.float64, device)
        with torch.no_grad():
            self.base = forward(self.X, self.W)
            self.base64 = forward(self.X64, self.W64)
        self.phi_norm = float(torch.linalg.vector_norm(self.base64))

    def moved(self, X: Tensor, D: Tensor) -> Tensor:
        """The samples ``X`` with row ``i`` moved by each row of ``D`` (R, d): (R, n, d)."""
        onehot = torch.zeros((X.shape[0], 1), dtype=X.dtype, device=X.device)
        onehot[self.i] = 1.0
        return X + onehot * D[:, None, :]  # (R, n, d)

    def value(self, D: Tensor) -> Tensor:
        diff = (self.forward(self.moved(self.X, D), self.W) - self.base).flatten(1)
        return (diff * diff).sum(-1)

    def exact(self, deltas: Tensor) -> Tensor:
        moved = self.moved(self.X64, deltas.to(self.X64))
        return torch.linalg.vector_norm((self.forward(moved, self.W64) - self.base64).flatten(1), dim=-1)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        xi = self.X64[self.i].cpu()
        unit = xi / torch.linalg.vector_norm(xi).clamp_min(1e-300)
        jitter = 0.1 * torch.randn((1, self.d), generator=gen, dtype=torch.float64)
        fixed = torch.cat([jitter, self.radius * unit[None], -self.radius * unit[None]])[:restarts]
        rest = sphere(max(restarts - fixed.shape[0], 0), self.d, self.radius, gen)
        return torch.cat([fixed, rest]).to(self.X.device)


def prepare(X64: Tensor, seed: int, weights: Any, ctx: SearchContext) -> Callable[[int], FullMapProblem]:
    """The search of a map without a fast path: its weights (drawn from ``seed`` unless given) and, per
    position, the full-map problem."""
    n, d = X64.shape
    if weights is None:
        weights = maps.sample_weights(ctx.spec, seed, n, d, dtype=torch.float64, device="cpu", **ctx.options)
    forward = registry.resolve(ctx.spec.forward)
    return lambda position: FullMapProblem(forward, X64, weights, position, dtype=ctx.dtype, device=ctx.device)
