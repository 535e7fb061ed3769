"""The attention fast path: RAF and ReLU-RAF with one token moved (``AttentionProblem``), a step in
``O(d^2 + n d)`` per restart since one row and one column of the scores change; the generalisation
functionals (``wordsens.generalisation.functionals``) reuse its moved-row quantities.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .. import maps
from ..maps.attention import RELU, SOFTMAX, Normalisation
from .engine import Problem, SearchContext, informed_starts, project

Tensor = torch.Tensor


# The "isolate" start (AttentionProblem._isolated): projected steps and their decay.
_ISO_STEPS, _ISO_DECAY = 300, 20
_EXACT_BYTES = 2**27  # float64 arrays of one batch of AttentionProblem.exact


def self_score_direction(xi: Tensor, Wsym: Tensor, radius: float) -> Tensor:
    """The move that maximises the moved token's self score ``x' W x'^T`` (``Wsym = W + W^T``) over the ball, by
    fixed-point steps ``Delta <- radius * normalise(Wsym (x_i + Delta))``: the token then attends to itself."""
    self_dir = xi.clone()
    for _ in range(20):
        g = Wsym @ (xi + self_dir)
        self_dir = radius * g / torch.linalg.vector_norm(g).clamp_min(1e-300)
    return self_dir


class AttentionProblem(Problem):
    """RAF / ReLU-RAF with row ``i`` moved to ``x_i' = x_i + Delta``: a query row ``j != i`` becomes
    ``(1 - w_j) M_j + w_j x_i'`` (``M_j``: its output without column ``i``; ``w_j``: the new weight of column
    ``i``, by ``norm``'s rule), whose change ``A_j + w_j (x_i' - M_j)`` (``A_j = M_j - out_j``) has a squared
    norm in inner products of ``x_i'`` with ``A`` and ``M``; row ``i`` is recomputed (``moved_row``). The
    generalisation functionals read its fields: ``P`` (column scores ``x_i' @ P.T``), ``Q`` (row scores
    ``x_i' @ Q``), ``M``, ``logz``, ``z``, ``mask`` (1 but at row ``i``), ``onehot``, ``out0`` (the map at ``X``),
    ``X64`` and ``W64`` (the float64 sample and weights of exact evaluations)."""

    def __init__(
        self,
        X: Tensor,
        W: Tensor,
        position: int,
        norm: Normalisation,
        *,
        X64: Tensor | None = None,
        W64: Tensor | None = None,
    ) -> None:
        n, d = X.shape
        self.d, self.n, self.i, self.norm = d, n, position, norm
        self.radius = math.sqrt(d)
        c = 1.0 / math.sqrt(d)
        self.X, self.xi = X, X[position]
        self.Wc = W * c
        self.P = (X @ W) * c  # column scores of a new x_i': x_i' @ P.T
        S = self.P @ X.T
        out0 = self.out0 = norm.attend(X, W)
        others = torch.ones(n, dtype=torch.bool, device=X.device)
        others[position] = False
        self.mask = others.to(X.dtype)
        # statistics of every query row without column i (row i itself is recomputed per step)
        self.logz, self.z, M = norm.without_column(S, others, X)
        self.M = M * others[:, None]
        self.W64 = W.to(torch.float64) if W64 is None else W64.to(device=W.device, dtype=torch.float64)
        self.X64 = X.to(torch.float64) if X64 is None else X64.to(device=X.device, dtype=torch.float64)
        self.onehot = (~others).to(X.dtype)
        self.Q = (self.Wc @ X.T).contiguous()  # row scores of x_i' on the tokens: x_i' @ Q
        self.Wsym = (self.Wc + self.Wc.T).contiguous()  # gradient of the self score x_i' Wc x_i'^T
        self.out0_i = out0[position]
        A = (self.M - out0) * self.mask[:, None]
        self.A = A
        self.A2 = (A * A).sum(-1)
        self.AM = (A * self.M).sum(-1)
        self.M2 = (self.M * self.M).sum(-1)
        # phi(X) in float64: of the float64 map where one is given (not of its rounded copy), else out0's own
        self._base64: Tensor | None = (
            self.norm.attend(self.X64, self.W64)
            if X64 is not None or W64 is not None
            else out0
            if out0.dtype == torch.float64
            else None
        )
        base = out0.to(torch.float64) if self._base64 is None else self._base64
        self.phi_norm = float(torch.linalg.vector_norm(base))
        # contiguous operands of the hand-written gradient and of value: column scores, A, M and row scores
        self._PAM = torch.cat([self.P, self.A, self.M]).contiguous()  # (3n, d)
        self._PAM_T = self._PAM.T.contiguous()
        self._PAMQ = torch.cat([self._PAM_T, self.Q], dim=1).contiguous()  # (d, 4n)
        self._XT = X.T.contiguous()
        self._QT = self.Q.T.contiguous()
        self._informed_dirs: Tensor | None = None

    def column_weights(self, col: Tensor) -> Tensor:
        """New attention weight ``w_j`` of column ``i`` in every query row ``j`` from its new scores ``col``."""
        return self.norm.column_weights(col, self.logz, self.z)

    def column_weights_and_slopes(self, col: Tensor) -> tuple[Tensor, Tensor]:
        """``column_weights`` and their derivatives with respect to ``col``, both 0 at row ``i`` (the
        hand-written gradients of the search and of the generalisation functionals)."""
        return self.norm.column_weights_and_slopes(col, self.logz, self.z, self.mask)

    def self_scores(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """The moved token's new score row ``x_i' W X'^T / sqrt(d)`` (R, n), self score included, and
        ``x_i' W_sym`` (R, d), the self score's gradient."""
        xi = self.xi + D
        u = xi @ self.Wsym
        row = xi @ self.Q
        return row + self.onehot * (0.5 * (u * xi).sum(-1, keepdim=True) - row), u

    def moved_row(self, D: Tensor) -> Tensor:
        """Output row ``i`` after the move (R, d), differentiable: its new score row (``self_scores``)
        and its attention over ``X'``."""
        return self.norm.moved_output(self.self_scores(D)[0], self.X, D, self.i)[0]

    def moved_samples(self, deltas: Tensor) -> Tensor:
        """The float64 samples ``X^i(Delta)`` (R, n, d) for ``deltas`` (R, d)."""
        X = self.X64.expand(deltas.shape[0], -1, -1).clone()
        X[:, self.i] += deltas
        return X

    def value(self, D: Tensor) -> Tensor:
        """The squared change, from one product with the stacked operands (column scores, ``x_i'.A_j``,
        ``x_i'.M_j``, row scores) and one with ``W_sym`` (the self score): ``(d + 4 n) d`` multiply-adds
        per row of ``D`` (what a vocabulary scan costs per word, ``wordsens.search.swaps``)."""
        n, i = self.n, self.i
        xi = self.xi + D  # (R, d)
        stacked = xi @ self._PAMQ  # (R, 4n)
        col, xA, xM, row = stacked[:, :n], stacked[:, n : 2 * n], stacked[:, 2 * n : 3 * n], stacked[:, 3 * n :]
        w = self.column_weights(col) * self.mask  # (R, n)
        x2 = (xi * xi).sum(-1, keepdim=True)
        others = self.A2 + 2 * w * (xA - self.AM) + w * w * (x2 - 2 * xM + self.M2)
        # row i: its scores on the other tokens, and the self score x_i' Wc x_i'^T
        row = row + self.onehot * (0.5 * ((xi @ self.Wsym) * xi).sum(-1, keepdim=True) - row)
        out_i = self.norm.moved_output(row, self.X, D, i)[0]
        diff_i = out_i - self.out0_i
        return (others * self.mask).sum(-1) + (diff_i * diff_i).sum(-1)

    @torch.no_grad()
    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """``value`` with its gradient written out (seven products with stacked operands, no autograd graph)."""
        n, i = self.n, self.i
        xi = self.xi + D
        stacked = xi @ self._PAM_T  # (R, 3n): column scores, x_i'.A_j, x_i'.M_j
        col, xA, xM = stacked[:, :n], stacked[:, n : 2 * n], stacked[:, 2 * n :]
        w, dw = self.column_weights_and_slopes(col)
        x2 = (xi * xi).sum(-1, keepdim=True)
        t1 = xA - self.AM
        t2 = x2 - 2 * xM + self.M2
        w2 = w * w
        value = ((self.A2 + 2 * w * t1 + w2 * t2) * self.mask).sum(-1)
        coef = torch.cat([(2 * t1 + 2 * w * t2) * dw, 2 * w, -2 * w2], dim=1)
        grad = coef @ self._PAM + 2 * w2.sum(-1, keepdim=True) * xi
        # row i: scores on the other tokens x_i' Wc X^T, and the self score x_i' Wc x_i'^T (u: its gradient)
        row, u = self.self_scores(D)
        out_i, state = self.norm.moved_output(row, self.X, D, i)
        g_out = 2 * (out_i - self.out0_i)
        g_att = g_out @ self._XT + self.onehot * (g_out * D).sum(-1, keepdim=True)
        g_row, own = self.norm.moved_backward(state, row, out_i, g_out, g_att)
        grad = grad + own * g_out
        grad = grad + (g_row * self.mask) @ self._QT + g_row[:, i : i + 1] * u
        return value + 0.25 * (g_out * g_out).sum(-1), grad

    def exact(self, deltas: Tensor) -> Tensor:
        """Change norms with the plain map in float64, in batches of ``_EXACT_BYTES``."""
        if self._base64 is None:
            self._base64 = self.norm.attend(self.X64, self.W64)
        if deltas.shape[0] == 1:
            (X,) = self.moved_samples(deltas)
            return torch.linalg.vector_norm(self.norm.attend(X, self.W64) - self._base64)[None]
        step = max(1, _EXACT_BYTES // (8 * self.n * (3 * self.n + 2 * self.d)))
        out = []
        for start in range(0, deltas.shape[0], step):
            moved = self.norm.attend(self.moved_samples(deltas[start : start + step]), self.W64)
            out.append(torch.linalg.vector_norm((moved - self._base64).flatten(1), dim=-1))
        return torch.cat(out)

    def select(self, deltas: Tensor) -> tuple[int, float]:
        """The best of ``deltas`` by the fast value (in float64) and its change by the plain map: one full
        evaluation instead of one per candidate."""
        with torch.no_grad():
            values = self.value(deltas.to(self.X.dtype))
        j = int(torch.argmax(values))
        return j, float(self.exact(deltas[j : j + 1])[0])

    def _informed(self) -> Tensor:
        """Unit directions (m, d), float64 CPU, from the structure of attention: attract (raise every score of
        the moved token, the paper's proof) and its opposite; self (``self_score_direction``); stretch (along
        ``x_i``); isolate (lower its scores on all other tokens), alone, with stretch, and refined (``_isolated``)."""
        P = self.P.to(device="cpu", dtype=torch.float64)
        mask = self.mask.to(device="cpu", dtype=torch.float64)
        xi = self.xi.to(device="cpu", dtype=torch.float64)
        Wc = self.Wc.to(device="cpu", dtype=torch.float64)
        Wsym = Wc + Wc.T
        attract = (P * mask[:, None]).sum(0)
        self_dir = self_score_direction(xi, Wsym, self.radius)
        # isolate: lower the moved token's scores on every other token (ReLU: to zero), so that its
        # own row attends to itself
        isolate = -(Wc @ (self.X.to(device="cpu", dtype=torch.float64) * mask[:, None]).sum(0))
        isolate = isolate / torch.linalg.vector_norm(isolate).clamp_min(1e-300)
        unit_xi = xi / torch.linalg.vector_norm(xi).clamp_min(1e-300)
        dirs = torch.stack(
            [attract, -attract, self_dir, xi, isolate, isolate + unit_xi, self._isolated(isolate + unit_xi, Wc)]
        )
        norms = torch.linalg.vector_norm(dirs, dim=-1, keepdim=True)
        dirs = torch.where(norms > 0, dirs / norms.clamp_min(1e-300), torch.zeros_like(dirs))
        return dirs[norms[:, 0] > 0]

    def _isolated(self, direction: Tensor, Wc: Tensor, steps: int = _ISO_STEPS) -> Tensor:
        """A ``Delta`` whose token scores no other token, pushed far from its old output: projected steps from
        ``radius * direction`` that descend ``sum_k relu(s_ik') + relu(-s_ii')`` while it is positive, else ascend
        ``||x_i' - out_i||`` (with ReLU attention such a token attends only to itself)."""
        X = self.X.to(device="cpu", dtype=torch.float64)
        xi = X[self.i]
        out_i = self.out0_i.to(device="cpu", dtype=torch.float64)
        Y = X @ Wc.T  # s_ik' = x_i' . Y_k for k != i
        Wsym = Wc + Wc.T
        others = self.mask.to(device="cpu", dtype=torch.float64) > 0
        D = self.radius * direction / torch.linalg.vector_norm(direction).clamp_min(1e-300)
        for t in range(steps):
            x = xi + D
            u = Wsym @ x
            active = (Y @ x > 0) & others
            if bool(active.any()) or float(u @ x) <= 0:
                g = -(active.to(Y.dtype) @ Y) + (float(u @ x) <= 0) * u
            else:
                g = x - out_i
            norm = float(torch.linalg.vector_norm(g))
            if norm == 0:
                break
            D = project(D + (0.1 * self.radius / (1 + t / _ISO_DECAY)) * g / norm, self.radius)
        return D

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        """``informed_starts`` from the informed directions (``_informed``, computed once per problem)."""
        if self._informed_dirs is None:
            self._informed_dirs = self._informed()
        return informed_starts(self._informed_dirs, self.radius, restarts, gen).to(self.X.device)


def _prepare(norm: Normalisation) -> Callable[..., Callable[[int], AttentionProblem]]:
    def prepare(
        X64: Tensor, seed: int, weights: Tensor | None, ctx: SearchContext
    ) -> Callable[[int], AttentionProblem]:
        W64 = weights if weights is not None else maps.attention_weights(seed, X64.shape[1])
        X, W = X64.to(device=ctx.device, dtype=ctx.dtype), W64.to(device=ctx.device, dtype=ctx.dtype)
        exact: dict[str, Tensor] = {}
        if ctx.dtype != torch.float64:  # exact evaluations of the map itself, not of its rounded copy
            exact = {"X64": X64.to(ctx.device), "W64": W64.to(device=ctx.device, dtype=torch.float64)}
        return lambda position: AttentionProblem(X, W, position, norm, **exact)

    return prepare


raf_prepare = _prepare(SOFTMAX)  # the registry's fast paths (wordsens.maps.catalog)
relu_raf_prepare = _prepare(RELU)
