"""Fast word-sensitivity searches for the attention variants (``wordsens.maps.variants``): what their problems
share (``MovedTokenProblem``, ``fast_prepare``) and the single-head maps (multi-head: ``wordsens.search.heads``).
A query row ``j != i`` changes by a closed form in inner products of ``x' = x_i + Delta`` with quantities
computed once per position, row ``i`` is recomputed: ``O(n d + d^2)`` per restart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch

from .. import maps
from ..maps import registry
from ..maps.spec import MapSpec
from ..maps.variants import elu1
from .attention import self_score_direction
from .engine import Problem, SearchContext, ascend, informed_starts, unit_rows
from .full_map import cast_weights

Tensor = torch.Tensor
Weights = Mapping[str, Tensor]


_EXACT_BYTES = 2**28  # float64 working memory of one chunk of exact evaluations
_POLISH_PATIENCE = 40  # the polish of MovedTokenProblem


class OnSphere(Problem):
    """``problem`` with its gradient, on the sphere where it points outwards, replaced by its component along
    the sphere: ``ascend`` then follows the sphere and converges in about half the steps, tighter."""

    def __init__(self, problem: Problem) -> None:
        self.problem, self.radius, self.d, self.phi_norm = problem, problem.radius, problem.d, problem.phi_norm

    def value(self, D: Tensor) -> Tensor:
        return self.problem.value(D)

    def exact(self, deltas: Tensor) -> Tensor:
        return self.problem.exact(deltas)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.problem.starts(restarts, gen)

    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        value, grad = self.problem.value_and_grad(D)
        norm = torch.linalg.vector_norm(D, dim=-1, keepdim=True)
        unit = D / norm.clamp_min(1e-300)
        outward = (grad * unit).sum(-1, keepdim=True)
        on = (norm >= self.radius * (1 - 1e-9)) & (outward > 0)
        return value, torch.where(on, grad - outward * unit, grad)


class MovedTokenProblem(Problem):
    """What the variants' problems share: the moved row, the float64 evaluation with the plain map (in chunks)
    and the starts from ``informed`` directions. Built as ``(spec, X, weights, position, X64, W64)``: the
    sample and weights in the working dtype, and in float64 for the exact evaluations."""

    h = 1  # attention heads (the chunks of exact evaluations hold h (n, n) score matrices)

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        n, d = X.shape
        self.spec, self.n, self.d, self.i = spec, n, d, position
        self.radius = math.sqrt(d)
        self.X, self.xi = X, X[position]
        self.X64, self.W64 = X64, W64
        self.forward = registry.resolve(spec.forward)
        with torch.no_grad():
            self.base64 = self.forward(X64, W64)
        self.phi_norm = float(torch.linalg.vector_norm(self.base64))
        others = torch.ones(n, dtype=torch.bool, device=X.device)
        others[position] = False
        self.others = others
        self.mask = others.to(X.dtype)
        self.onehot = (~others).to(X.dtype)

    def exact(self, deltas: Tensor) -> Tensor:
        deltas = deltas.to(self.X64)
        out = []
        chunk = max(1, _EXACT_BYTES // (8 * self.n * (self.h * self.n + 12 * self.d)))
        for start in range(0, deltas.shape[0], chunk):
            part = deltas[start : start + chunk]
            X = self.X64.expand(part.shape[0], -1, -1).clone()
            X[:, self.i] += part
            out.append(torch.linalg.vector_norm((self.forward(X, self.W64) - self.base64).flatten(1), dim=-1))
        return torch.cat(out)

    def polish(self, D: Tensor, *, max_steps: int, momentum: float) -> tuple[Tensor, int]:
        """The point ``D`` (1, d) converged to float64 precision by ``ascend`` on the float64 problem
        along the sphere (``OnSphere``), which never lowers its value."""
        make: Callable[..., MovedTokenProblem] = type(self)  # (spec, X, weights, position, X64, W64)
        twin = (
            self if self.X.dtype == torch.float64 else make(self.spec, self.X64, self.W64, self.i, self.X64, self.W64)
        )
        twin.radius = self.radius  # a search of another ball (``estimate(..., radius=...)``) polishes on it
        return ascend(
            OnSphere(twin),
            D.to(torch.float64),
            max_steps=max_steps,
            tol=1e-12,
            patience=_POLISH_PATIENCE,
            keep=1,
            momentum=momentum,
            eta_min=1e-9,
        )

    def informed(self) -> Tensor:
        """Unit directions (m, d), float64 on the CPU, suggested by the map's structure."""
        xi = self.xi.to(device="cpu", dtype=torch.float64)
        return unit_rows(torch.stack([xi, -xi]))

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return informed_starts(self.informed(), self.radius, restarts, gen).to(self.X.device)


# --------------------------------------------------------------------------- sigmoid attention


class SigmoidProblem(MovedTokenProblem):
    """``sigmoid_raf`` with row ``i`` moved: row ``j != i`` changes by ``(g_j - g0_j) x' + g0_j Delta``
    (``g_j = sigmoid(P_j . x' - log n)``, ``P = X W / sqrt(d)``; ``g0_j`` the old weight), a squared norm in
    ``x'.x'``, ``x'.Delta`` and ``Delta.Delta``."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        n, d = X.shape
        self.b = math.log(n)
        self.Wc = weights["W"] / math.sqrt(d)
        self.P = X @ self.Wc  # column scores of x': P @ x'
        Q = self.Wc @ X.T  # row scores of x' on the tokens: x' @ Q (the self score replaced)
        self._PQ = torch.cat([self.P.T, Q], dim=1).contiguous()  # (d, 2n)
        self.g0 = torch.sigmoid(self.P @ self.xi - self.b) * self.mask
        self.out0_i = torch.sigmoid(self.xi @ Q - self.b) @ X

    def value(self, D: Tensor) -> Tensor:
        n, i = self.n, self.i
        x = self.xi + D
        scores = x @ self._PQ
        g = torch.sigmoid(scores[:, :n] - self.b) * self.mask
        dg = g - self.g0
        xx, xD, DD = ((x * x).sum(-1, keepdim=True), (x * D).sum(-1, keepdim=True), (D * D).sum(-1, keepdim=True))
        others = (dg * dg * xx + 2 * dg * self.g0 * xD + self.g0 * self.g0 * DD).sum(-1)
        row = scores[:, n:]
        self_score = ((x @ self.Wc) * x).sum(-1, keepdim=True)
        a = torch.sigmoid(row + self.onehot * (self_score - row) - self.b)
        diff = a @ self.X + a[:, i : i + 1] * D - self.out0_i
        return others + (diff * diff).sum(-1)

    def informed(self) -> Tensor:
        """``+-x_i``, ``+-`` attract (raise every score of the moved token) and ``self_score_direction``."""
        xi = self.xi.to(device="cpu", dtype=torch.float64)
        Wc = self.Wc.to(device="cpu", dtype=torch.float64)
        attract = (self.P * self.mask[:, None]).sum(0).to(device="cpu", dtype=torch.float64)
        self_dir = self_score_direction(xi, Wc + Wc.T, self.radius)
        return unit_rows(torch.stack([attract, -attract, xi, -xi, self_dir]))


# --------------------------------------------------------------------------- linear attention


class LinearProblem(MovedTokenProblem):
    """``linear_raf`` with row ``i`` moved: row ``j`` is ``o_j = q_j^T KX / q_j.ks`` (``KX = sum_k k_k x_k^T``,
    ``ks = sum_k k_k``); for ``j != i`` the change is ``w_j (x' - o_j) + v_j Delta`` with ``w_j = (a_j - b_j) /
    den_j'``, ``v_j = b_j / den_j'`` (``a_j = q_j.k'``, ``b_j = q_j.k_i``, ``den_j' = q_j.ks + a_j - b_j``); row
    ``i`` through the rank-one update of ``KX``."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        Wq, Wk = weights["Wq"], weights["Wk"]
        self.Wk = Wk
        self.Qm, Km = elu1(X @ Wq), elu1(X @ Wk)
        self.KX, self.ks = Km.T @ X, Km.sum(0)
        self.den = self.Qm @ self.ks
        self.O = (self.Qm @ self.KX) / self.den[:, None]
        self.ki = Km[position]
        self.beta = self.Qm @ self.ki
        self.xio = self.O @ self.xi
        self.O2 = (self.O * self.O).sum(-1)
        self._Wkq = torch.cat([Wk, Wq], dim=1).contiguous()  # (d, 2d)
        self._QmT, self._OT = self.Qm.T.contiguous(), self.O.T.contiguous()

    def value(self, D: Tensor) -> Tensor:
        d = self.d
        x = self.xi + D
        kq = elu1(x @ self._Wkq)
        kp, qp = kq[:, :d], kq[:, d:]
        alpha = kp @ self._QmT
        xo = x @ self._OT
        den = self.den + alpha - self.beta
        w, v = (alpha - self.beta) / den, self.beta / den
        xx, xD, DD = ((x * x).sum(-1, keepdim=True), (x * D).sum(-1, keepdim=True), (D * D).sum(-1, keepdim=True))
        dist2 = xx - 2 * xo + self.O2  # ||x' - o_j||^2
        cross = xD - xo + self.xio  # Delta . (x' - o_j)
        others = ((w * w * dist2 + 2 * w * v * cross + v * v * DD) * self.mask).sum(-1)
        qk_old = (qp * self.ki).sum(-1, keepdim=True)
        qk_new = (qp * kp).sum(-1, keepdim=True)
        num = qp @ self.KX - qk_old * self.xi + qk_new * x
        out_i = num / ((qp * self.ks).sum(-1, keepdim=True) - qk_old + qk_new)
        diff = out_i - self.O[self.i]
        return others + (diff * diff).sum(-1)

    def informed(self) -> Tensor:
        """``+-x_i`` and ``+-`` attract (the gradient at ``x_i`` of ``sum_{j != i} q_j . f(x' Wk)``)."""
        xi = self.xi.to(device="cpu", dtype=torch.float64)
        z = self.xi @ self.Wk
        fprime = torch.where(z > 0, torch.ones_like(z), torch.exp(torch.clamp(z, max=0.0)))
        attract = (self.Wk @ (fprime * (self.Qm * self.mask[:, None]).sum(0))).to(device="cpu", dtype=torch.float64)
        return unit_rows(torch.stack([attract, -attract, xi, -xi]))


# --------------------------------------------------------------------------- prepare (MapSpec.fast)


def search_weights(X64: Tensor, seed: int, weights: Any, ctx: SearchContext) -> dict[str, Tensor]:
    """The weights of the search: drawn from ``seed`` and the map's options unless given (with the number of
    heads the options say)."""
    n, d = X64.shape
    if weights is None:
        return maps.sample_weights(ctx.spec, seed, n, d, dtype=torch.float64, device="cpu", **ctx.options)
    heads = ctx.options.get("heads")
    if heads is not None and int(weights["Wq"].shape[0]) != heads:
        raise ValueError(
            f"the {ctx.spec.name} weights have {int(weights['Wq'].shape[0])} heads but the map's options "
            f"say heads = {heads}; pass options={{'heads': {int(weights['Wq'].shape[0])}}}"
        )
    return dict(weights)


def fast_prepare(cls: Callable[..., MovedTokenProblem]) -> Callable[..., Callable[[int], MovedTokenProblem]]:
    def prepare(X64: Tensor, seed: int, weights: Any, ctx: SearchContext) -> Callable[[int], MovedTokenProblem]:
        W = search_weights(X64, seed, weights, ctx)
        X, Wd = X64.to(device=ctx.device, dtype=ctx.dtype), cast_weights(W, ctx.dtype, ctx.device)
        X64d, W64 = X64.to(ctx.device), cast_weights(W, torch.float64, ctx.device)
        return lambda position: cls(ctx.spec, X, Wd, position, X64d, W64)

    prepare.__doc__ = (
        f"The fast search ({getattr(cls, '__name__', cls)}): the weights (drawn from ``seed`` unless "
        "given) and, per position, its problem."
    )
    return prepare


sigmoid_raf_prepare = fast_prepare(SigmoidProblem)
linear_raf_prepare = fast_prepare(LinearProblem)
