"""Word-sensitivity estimates: the authors' search, a better one, and RF certificates.

The word sensitivity of a feature map ``phi`` at a sample ``X`` (n, d) is

    S(X) = sup_{i, ||Delta|| <= sqrt(d)} ||phi(X^i(Delta)) - phi(X)|| / ||phi(X)||,

where ``X^i(Delta)`` adds ``Delta`` to row ``i``. A search over ``Delta`` gives a lower bound
(``lower``); for RF a certificate gives an upper bound (``upper``), since ReLU is 1-Lipschitz:
``S <= ||B||_op sqrt(d) / ||phi(X)||`` with ``B`` the block of ``V`` that multiplies row ``i``.

Methods (``estimate(..., method=...)``):

* ``"reference"``: the authors' algorithm, fixed: float64 dense weights, start at
  ``x_i + 0.1 N(0, I)``, plain gradient steps on ``RMSE(phi(X') - phi(X))`` (step 100 for 300
  steps for RF/DRF, step 10 for ``50 n`` steps for the attention maps), projection on the ball of
  radius ``sqrt(d)`` around ``x_i``. Its ``lower`` is the best iterate.
* ``"default"``: batched restarts from informed starts (RF/DRF: top right singular vectors of the
  active first-layer block; attention: the direction that makes the token attract all attention,
  its opposite, the reference's jittered start, random points of the sphere), projected
  normalised-gradient ascent with a per-restart step that grows on success and halves on failure,
  stopping on convergence. Work runs on cheap equivalent forms: RF and DRF draw only the
  perturbed token's block (exact in law, see ``estimate``), attention maps update one row and one
  column of the score matrix per step. The final ``lower`` is re-evaluated in float64 with the
  plain map formula.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from . import maps
from .resources import SAMPLERS, check_fits, choose_sampler, resolve_device, ws_memory
from .seeds import derive_seed, generator

Tensor = torch.Tensor

__all__ = ["METHODS", "SAMPLERS", "WSResult", "estimate"]

METHODS = ("default", "reference")
# Ascent settings (see _ascend and _AttentionProblem._isolated), chosen on synthetic RAF and
# ReLU-RAF instances against the reference method (benchmarks/bench_ws.py).
_ETA0, _ETA_MAX = 0.5, 64.0
_HALVE_EVERY = 10
_ISO_STEPS, _ISO_DECAY = 300, 20
_CHUNK_BYTES = 4 * 1024**2  # float64 chunk size of exact evaluations and Gram matrices


@dataclass(frozen=True)
class _Settings:
    """Per-map defaults of the default search (see ``_ascend``)."""

    restarts: int  # starts searched as one batch
    keep: int  # restarts left after successive halvings
    patience: int  # steps over which the best value must gain ``tol``
    tol: float
    momentum: float  # weight of the previous unit step in the step direction
    polish: bool  # converge the leader tightly at the end


# RF/DRF steps stream large matrices and their landscape is benign (the top singular start is
# nearly optimal; momentum only slows the creep to the maximum): few restarts, no momentum. RF
# uses the subspace ascent of _RFProblem.search, whose iterations are few, so a tight tolerance.
# Attention steps are cheap and ReLU attention has many local maxima with kinks: many restarts,
# momentum along ridges, and a final polish.
_SETTINGS = {
    "rf": _Settings(restarts=5, keep=5, patience=10, tol=1e-5, momentum=0.0, polish=False),
    "drf": _Settings(restarts=5, keep=5, patience=10, tol=1e-4, momentum=0.0, polish=False),
    "raf": _Settings(restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True),
    "relu_raf": _Settings(restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True),
}


@dataclass
class WSResult:
    """One word-sensitivity estimate; ``lower`` and ``upper`` are relative changes."""

    map: str
    method: str
    n: int
    d: int
    position: int
    lower: float
    upper: float | None
    delta: Tensor = field(repr=False)
    delta_norm: float
    phi_norm: float
    steps: int
    seconds: float
    sampler: str
    restarts: int
    device: str
    dtype: str
    L: int | None = None
    k: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """All fields but ``delta``, as plain JSON-able values."""
        out = asdict(self)
        out.pop("delta")
        return out


# --------------------------------------------------------------------------- problems


class _Problem(abc.ABC):
    """The search problem at one position: value (differentiable, batched) and exact value."""

    radius: float
    phi_norm: float
    d: int

    @abc.abstractmethod
    def value(self, D: Tensor) -> Tensor:
        """Squared change ``||phi(X^i(D_r)) - phi(X)||^2`` for each row ``D_r`` of ``D`` (R, d)."""

    @abc.abstractmethod
    def exact(self, deltas: Tensor) -> Tensor:
        """Change norms for float64 ``deltas`` (R, d), evaluated in float64 with the plain formula."""

    @abc.abstractmethod
    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        """``restarts`` starting points (R, d) in the ball."""

    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """``value(D)`` and its gradient with respect to ``D`` (autograd unless overridden)."""
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.value(D)
            (grad,) = torch.autograd.grad(val.sum(), D)
        return val.detach(), grad

    def search(self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int,
               momentum: float) -> tuple[Tensor, int]:
        """The default search from ``starts``: ``_ascend`` unless a problem knows better."""
        return _ascend(self, starts, max_steps=max_steps, tol=tol, patience=patience, keep=keep, momentum=momentum)

    def upper(self) -> float | None:
        return None


def _chunked_rows64(M: Tensor, fn) -> None:
    """Call ``fn(rows, M[rows] as float64)`` over row chunks of at most ``_CHUNK_BYTES``."""
    step = max(1, _CHUNK_BYTES // (8 * M.shape[1]))
    for start in range(0, M.shape[0], step):
        fn(slice(start, start + step), M[start:start + step].to(torch.float64))


def _sphere(restarts: int, d: int, radius: float, gen: torch.Generator) -> Tensor:
    G = torch.randn((restarts, d), generator=gen, dtype=torch.float64)
    return G * (radius / torch.linalg.vector_norm(G, dim=-1, keepdim=True))


class _FirstLayer:
    """A ReLU layer ``relu(u + B Delta)`` with ``B`` (rows, d) and the float64 pre-activation ``u``."""

    def __init__(self, B: Tensor, u64: Tensor, with_gram: bool) -> None:
        self.B = B
        self.u64 = u64
        self.u = u64.to(B.dtype)
        active = u64 > 0
        d = B.shape[1]
        dev = B.device
        self.gram_active = torch.zeros((d, d), dtype=torch.float64, device=dev)
        self.gram = torch.zeros((d, d), dtype=torch.float64, device=dev) if with_gram else None

        def accumulate(rows: slice, chunk: Tensor) -> None:
            masked = chunk * active[rows, None]
            self.gram_active.addmm_(masked.T, masked)
            if self.gram is not None:
                self.gram.addmm_(chunk.T, chunk)

        _chunked_rows64(B, accumulate)

    def forward(self, D: Tensor) -> Tensor:
        return torch.relu(self.u + D @ self.B.T)

    def forward64(self, deltas: Tensor) -> Tensor:  # (R, d) -> (R, rows)
        out = torch.empty((deltas.shape[0], self.B.shape[0]), dtype=torch.float64, device=deltas.device)

        def fill(rows: slice, chunk: Tensor) -> None:
            out[:, rows] = torch.relu(self.u64[rows] + deltas @ chunk.T)

        _chunked_rows64(self.B, fill)
        return out

    def top_directions(self, m: int) -> Tensor:
        """The top ``m`` right singular vectors of the active block (rows, float64)."""
        _, vecs = torch.linalg.eigh(self.gram_active)
        return vecs[:, -m:].flip(-1).T.contiguous()

    def singular_starts(self, restarts: int, radius: float, gen: torch.Generator) -> Tensor:
        """The reference's jittered start ``0.1 N(0, I)``, ``+-`` the top right singular vectors of
        the active block, then random sphere points."""
        _, vecs = torch.linalg.eigh(self.gram_active)
        d = vecs.shape[0]
        m = min(restarts // 2, d)
        top = vecs[:, -m:].flip(-1).T * radius
        jitter = 0.1 * torch.randn((1, d), generator=gen, dtype=torch.float64).to(top.device)
        starts = torch.cat([jitter, torch.stack([top, -top], dim=1).reshape(2 * m, d)])[:restarts]
        if starts.shape[0] < restarts:
            extra = _sphere(restarts - starts.shape[0], d, radius, gen).to(starts.device)
            starts = torch.cat([starts, extra])
        return starts


class _SubspaceRF(_Problem):
    """RF restricted to subspaces, one per restart: ``Delta_r = c_r V_r``, so the change is
    ``||relu(u + c_r Y_r) - relu(u)||^2`` with ``Y_r = V_r B^T`` (m, k)."""

    def __init__(self, Y: Tensor, u: Tensor, base: Tensor, radius: float) -> None:
        self.Y, self.u, self.base, self.radius = Y, u, base, radius
        self.d = Y.shape[1]
        self.phi_norm = 1.0

    def value(self, D: Tensor) -> Tensor:
        diff = torch.relu(self.u + torch.einsum("rm,rmk->rk", D, self.Y)) - self.base
        return (diff * diff).sum(-1)

    def exact(self, deltas: Tensor) -> Tensor:  # pragma: no cover - never evaluated exactly
        return self.value(deltas.to(self.Y.dtype)).sqrt().to(torch.float64)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:  # pragma: no cover - started explicitly
        return _sphere(restarts, self.d, self.radius, gen)


class _RFProblem(_Problem):
    def __init__(self, B: Tensor, u64: Tensor) -> None:
        self.d = B.shape[1]
        self.radius = math.sqrt(self.d)
        self.layer = _FirstLayer(B, u64, with_gram=True)
        self.base = torch.relu(self.layer.u)
        self.phi_norm = float(torch.linalg.vector_norm(torch.relu(u64)))

    def value(self, D: Tensor) -> Tensor:
        diff = self.layer.forward(D) - self.base
        return (diff * diff).sum(-1)

    def exact(self, deltas: Tensor) -> Tensor:
        return torch.linalg.vector_norm(self.layer.forward64(deltas) - torch.relu(self.layer.u64), dim=-1)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, self.radius, gen)

    def search(self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int = 1,
               momentum: float = 0.0) -> tuple[Tensor, int]:
        """Subspace ascent from every start: each iteration maximises over span{Delta, gradient,
        last step, two top singular directions} (an inner ascent on the (m, k) image ``V B^T``),
        which converges in far fewer passes over ``B`` than gradient steps; an iteration streams
        ``B`` twice, like one gradient step. Returns the points reached and the iterations."""
        B, u, base, r = self.layer.B, self.layer.u, self.base, self.radius
        with torch.no_grad():
            D = _project(starts, r)
            BD = D @ B.T
            val = ((torch.relu(u + BD) - base) ** 2).sum(-1)
            R = D.shape[0]
            top = self.layer.top_directions(2).to(D).expand(R, -1, -1)
            prev = torch.zeros_like(D)
            history = [float(val.max())]
            steps = 0
            while steps < max_steps:
                pre = u + BD
                grad = (2 * (torch.relu(pre) - base) * (pre > 0)) @ B
                vectors = torch.cat([D[:, None], grad[:, None], prev[:, None], top], dim=1)  # (R, m, d)
                basis = torch.linalg.qr(vectors.transpose(1, 2).to(torch.float64))[0].transpose(1, 2).to(D.dtype)
                m = basis.shape[1]
                Y = (basis.reshape(R * m, -1) @ B.T).reshape(R, m, -1)  # the map on each subspace
                sub = _SubspaceRF(Y, u, base, r)
                c, _ = _ascend(sub, torch.einsum("rd,rmd->rm", D, basis), max_steps=60, tol=1e-9, patience=10,
                               keep=R, momentum=0.0, eta_min=1e-9)
                steps += 1
                new_BD = torch.einsum("rm,rmk->rk", c, Y)
                new_val = ((torch.relu(u + new_BD) - base) ** 2).sum(-1)
                ok = new_val >= val
                new_D = torch.einsum("rm,rmd->rd", c, basis)
                prev = torch.where(ok[:, None], new_D - D, torch.zeros_like(D))
                D = torch.where(ok[:, None], new_D, D)
                BD = torch.where(ok[:, None], new_BD, BD)
                val = torch.where(ok, new_val, val)
                history.append(float(val.max()))
                if len(history) > patience and history[-1] - history[-1 - patience] <= tol * history[-1]:
                    break
        return D, steps

    def upper(self) -> float | None:
        assert self.layer.gram is not None
        lam = float(torch.linalg.eigvalsh(self.layer.gram)[-1])
        # float64 Gram and eigenvalue errors are below 1e-9 relative at any size used here
        op_norm = math.sqrt(max(lam, 0.0) * (1 + 1e-8))
        return op_norm * self.radius / self.phi_norm


class _DRFProblem(_Problem):
    def __init__(self, B1: Tensor, u1_64: Tensor, rest: Sequence[Tensor]) -> None:
        self.d = B1.shape[1]
        self.radius = math.sqrt(self.d)
        self.layer = _FirstLayer(B1, u1_64, with_gram=False)
        self.rest = list(rest)
        with torch.no_grad():
            self.base = self._tail(torch.relu(self.layer.u)[None])[0]
            self.base64 = self._tail64(torch.relu(u1_64)[None])[0]
        self.phi_norm = float(torch.linalg.vector_norm(self.base64))

    def _tail(self, h: Tensor) -> Tensor:
        for V in self.rest:
            h = torch.relu(h @ V.T)
        return h

    def _tail64(self, h: Tensor) -> Tensor:
        for V in self.rest:
            out = torch.empty((h.shape[0], V.shape[0]), dtype=torch.float64, device=h.device)

            def fill(rows: slice, chunk: Tensor, h: Tensor = h, out: Tensor = out) -> None:
                out[:, rows] = torch.relu(h @ chunk.T)

            _chunked_rows64(V, fill)
            h = out
        return h

    def value(self, D: Tensor) -> Tensor:
        diff = self._tail(self.layer.forward(D)) - self.base
        return (diff * diff).sum(-1)

    def exact(self, deltas: Tensor) -> Tensor:
        return torch.linalg.vector_norm(self._tail64(self.layer.forward64(deltas)) - self.base64, dim=-1)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, self.radius, gen)


class _AttentionProblem(_Problem):
    """RAF / ReLU-RAF with row ``i`` moved: one row and one column of the scores change.

    For a query row ``j != i`` the new output is ``(1 - w_j) M_j + w_j x_i'``, where ``M_j`` is the
    output of row ``j`` with column ``i`` left out and ``w_j`` the new weight of column ``i``
    (softmax: ``sigmoid(s_ji' - logsumexp_{k != i} s_jk)``; ReLU: ``a / (z_j + a)`` with
    ``a = relu(s_ji')``, ``z_j`` the row sum without column ``i``, and 0 when both vanish). So the
    change of row ``j`` is ``A_j + w_j (x_i' - M_j)`` with ``A_j = M_j - out_j``, and its squared
    norm needs only inner products of ``x_i'`` with ``A`` and ``M``: each step costs
    ``O(d^2 + n d)`` per restart instead of ``O(n^2 d)``.
    """

    def __init__(self, X: Tensor, W: Tensor, position: int, kind: str) -> None:
        n, d = X.shape
        self.d, self.n, self.i, self.kind = d, n, position, kind
        self.radius = math.sqrt(d)
        c = 1.0 / math.sqrt(d)
        self.X, self.xi = X, X[position]
        self.Wc = W * c
        self.P = (X @ W) * c  # column scores of a new x_i': x_i' @ P.T
        S = self.P @ X.T
        out0 = maps._raf(X, W) if kind == "softmax" else maps._relu_raf(X, W)
        self.out0_i = out0[position]
        others = torch.ones(n, dtype=torch.bool, device=X.device)
        others[position] = False
        self.mask = others.to(X.dtype)
        if kind == "softmax":
            # statistics of every query row without column i (row i itself is recomputed per step)
            S_wo = S.masked_fill(~others[None, :], float("-inf"))
            if n > 1:
                logz, M = torch.logsumexp(S_wo, dim=-1), torch.softmax(S_wo, dim=-1) @ X
            else:
                logz, M = torch.zeros(n, dtype=X.dtype, device=X.device), torch.zeros_like(X)
            self.logz, self.z = logz.masked_fill(~others, 0.0), None
        else:
            Z = torch.relu(S) * others[None, :]
            self.z, self.logz = Z.sum(-1), None
            M = torch.where((self.z > 0)[:, None], (Z @ X) / torch.where(self.z > 0, self.z, 1.0)[:, None], 0.0)
        self.M = M * others[:, None]
        A = (self.M - out0) * others[:, None]
        self.A = A
        self.A2 = (A * A).sum(-1)
        self.AM = (A * self.M).sum(-1)
        self.M2 = (self.M * self.M).sum(-1)
        self.phi_norm = float(torch.linalg.vector_norm(out0.to(torch.float64)))
        self._W64 = W.to(torch.float64)
        self._X64 = X.to(torch.float64)
        self.onehot = (~others).to(X.dtype)
        # contiguous operands of the hand-written gradient
        self._PAM = torch.cat([self.P, self.A, self.M]).contiguous()  # (3n, d)
        self._PAM_T = self._PAM.T.contiguous()
        self._XT = X.T.contiguous()
        self._Q = (self.Wc @ X.T).contiguous()  # row scores of x_i' on the tokens: x_i' @ Q
        self._QT = self._Q.T.contiguous()
        self._Wsym = (self.Wc + self.Wc.T).contiguous()

    def _weights(self, col: Tensor) -> Tensor:
        if self.kind == "softmax":
            return torch.sigmoid(col - self.logz)
        a = torch.relu(col)
        den = self.z + a
        return torch.where(den > 0, a / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(den))

    def value(self, D: Tensor) -> Tensor:
        xi = self.xi + D  # (R, d)
        w = self._weights(xi @ self.P.T) * self.mask  # (R, n)
        xA = xi @ self.A.T
        xM = xi @ self.M.T
        x2 = (xi * xi).sum(-1, keepdim=True)
        others = self.A2 + 2 * w * (xA - self.AM) + w * w * (x2 - 2 * xM + self.M2)
        diff_i = self.moved_row(D) - self.out0_i
        return (others * self.mask).sum(-1) + (diff_i * diff_i).sum(-1)

    def moved_row(self, D: Tensor) -> Tensor:
        """Output row ``i`` after the move (R, d), differentiable: a full new score row
        ``x_i' W X'^T / sqrt(d)`` (self score included) and its attention over ``X'``."""
        i = self.i
        xi = self.xi + D
        row = xi @ self._Q
        row = row + self.onehot * (0.5 * ((xi @ self._Wsym) * xi).sum(-1, keepdim=True) - row)
        if self.kind == "softmax":
            a = torch.softmax(row, dim=-1)
            return a @ self.X + a[:, i:i + 1] * D
        a = torch.relu(row)
        den = a.sum(-1, keepdim=True)
        num = a @ self.X + a[:, i:i + 1] * D
        return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(num))

    @torch.no_grad()
    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """``value`` with its gradient written out: seven matrix products with contiguous,
        stacked operands, one of them (R, d) x (d, d), and no autograd graph.
        ``tests/test_ws.py`` checks it against autograd.
        """
        n, i = self.n, self.i
        xi = self.xi + D
        stacked = xi @ self._PAM_T  # (R, 3n): column scores, x_i'.A_j, x_i'.M_j
        col, xA, xM = stacked[:, :n], stacked[:, n:2 * n], stacked[:, 2 * n:]
        if self.kind == "softmax":
            w = torch.sigmoid(col - self.logz) * self.mask
            dw = w * (1 - w)
        else:
            a = torch.relu(col)
            den = self.z + a
            safe = torch.where(den > 0, den, torch.ones_like(den))
            w = torch.where(den > 0, a / safe, torch.zeros_like(den)) * self.mask
            dw = torch.where((den > 0) & (col > 0), self.z / (safe * safe), torch.zeros_like(den)) * self.mask
        x2 = (xi * xi).sum(-1, keepdim=True)
        t1 = xA - self.AM
        t2 = x2 - 2 * xM + self.M2
        w2 = w * w
        value = ((self.A2 + 2 * w * t1 + w2 * t2) * self.mask).sum(-1)
        coef = torch.cat([(2 * t1 + 2 * w * t2) * dw, 2 * w, -2 * w2], dim=1)
        grad = coef @ self._PAM + 2 * w2.sum(-1, keepdim=True) * xi
        # row i: scores on the other tokens x_i' Wc X^T, and the self score x_i' Wc x_i'^T
        u = xi @ self._Wsym  # gradient of the self score
        row = xi @ self._Q
        row = row + self.onehot * (0.5 * (u * xi).sum(-1, keepdim=True) - row)
        if self.kind == "softmax":
            att = torch.softmax(row, dim=-1)
            out_i = att @ self.X + att[:, i:i + 1] * D
            g_out = 2 * (out_i - self.out0_i)
            g_att = g_out @ self._XT + self.onehot * (g_out * D).sum(-1, keepdim=True)
            g_row = att * (g_att - (att * g_att).sum(-1, keepdim=True))
            grad = grad + att[:, i:i + 1] * g_out
        else:
            r = torch.relu(row)
            den = r.sum(-1, keepdim=True)
            safe = torch.where(den > 0, den, torch.ones_like(den))
            num = r @ self.X + r[:, i:i + 1] * D
            out_i = torch.where(den > 0, num / safe, torch.zeros_like(num))
            g_out = 2 * (out_i - self.out0_i)
            g_r = (g_out @ self._XT + self.onehot * (g_out * D).sum(-1, keepdim=True)
                   - (g_out * out_i).sum(-1, keepdim=True)) / safe
            g_row = torch.where((den > 0) & (row > 0), g_r, torch.zeros_like(g_r))
            grad = grad + torch.where(den > 0, r[:, i:i + 1] / safe, torch.zeros_like(den)) * g_out
        grad = grad + (g_row * self.mask) @ self._QT + g_row[:, i:i + 1] * u
        return value + 0.25 * (g_out * g_out).sum(-1), grad

    def exact(self, deltas: Tensor) -> Tensor:
        f = maps._raf if self.kind == "softmax" else maps._relu_raf
        X = self._X64.expand(deltas.shape[0], -1, -1).clone()
        X[:, self.i] += deltas
        base = f(self._X64, self._W64)
        return torch.linalg.vector_norm((f(X, self._W64) - base).flatten(1), dim=-1)

    def _informed(self) -> Tensor:
        """Directions (m, d), float64 on the CPU, suggested by the structure of attention.

        * attract: raise every score ``s_ji'`` of the moved token (the paper's proof), and its
          opposite;
        * self: make the moved token attend to itself, which turns its own output into ``x_i'``
          (norm up to ``2 sqrt(d)``): the maximiser of the self score ``x_i' W x_i'^T`` over the
          ball, by a few fixed-point steps ``Delta <- r * normalise(W_sym x_i')``;
        * stretch: ``Delta`` along ``x_i`` (the longest ``x_i'``);
        * isolate: lower the moved token's scores on all other tokens, alone, with stretch, and
          refined until no other score is positive (``_isolated``).
        """
        P = self.P.to(device="cpu", dtype=torch.float64)
        mask = self.mask.to(device="cpu", dtype=torch.float64)
        xi = self.xi.to(device="cpu", dtype=torch.float64)
        Wc = self.Wc.to(device="cpu", dtype=torch.float64)
        Wsym = Wc + Wc.T
        attract = (P * mask[:, None]).sum(0)
        self_dir = xi.clone()
        for _ in range(20):
            g = Wsym @ (xi + self_dir)
            self_dir = self.radius * g / torch.linalg.vector_norm(g).clamp_min(1e-300)
        # isolate: lower the moved token's scores on every other token (ReLU: to zero), so that its
        # own row attends to itself
        isolate = -(Wc @ (self.X.to(device="cpu", dtype=torch.float64) * mask[:, None]).sum(0))
        isolate = isolate / torch.linalg.vector_norm(isolate).clamp_min(1e-300)
        unit_xi = xi / torch.linalg.vector_norm(xi).clamp_min(1e-300)
        dirs = torch.stack([attract, -attract, self_dir, xi, isolate, isolate + unit_xi,
                            self._isolated(isolate + unit_xi, Wc)])
        norms = torch.linalg.vector_norm(dirs, dim=-1, keepdim=True)
        dirs = torch.where(norms > 0, dirs / norms.clamp_min(1e-300), torch.zeros_like(dirs))
        return dirs[norms[:, 0] > 0]

    def _isolated(self, direction: Tensor, Wc: Tensor, steps: int = _ISO_STEPS) -> Tensor:
        """A ``Delta`` whose token scores no other token, pushed far from its old output.

        Projected steps on the ball from ``radius * direction``: while some ``s_ik'`` (k != i) is
        positive or the self score ``s_ii'`` is not, descend ``sum_k relu(s_ik') + relu(-s_ii')``;
        otherwise ascend ``||x_i' - out_i||``. With ReLU attention such a token attends only to
        itself, so its own output becomes ``x_i'`` (the proof's mechanism, turned inward).
        """
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
                g = -Y[active].sum(0) + (float(u @ x) <= 0) * u
            else:
                g = x - out_i
            norm = float(torch.linalg.vector_norm(g))
            if norm == 0:
                break
            D = _project(D + (0.1 * self.radius / (1 + t / _ISO_DECAY)) * g / norm, self.radius)
        return D

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        """The informed directions (see ``_informed``) on the sphere, the reference's jittered start,
        random mixtures of informed and random directions, and uniform points of the sphere."""
        informed = self._informed()
        jitter = 0.1 * torch.randn((1, self.d), generator=gen, dtype=torch.float64)
        fixed = torch.cat([self.radius * informed, jitter])[:restarts]
        rest = max(restarts - fixed.shape[0], 0)
        mixed = rest // 2
        G = torch.randn((mixed, self.d), generator=gen, dtype=torch.float64)
        G = G / torch.linalg.vector_norm(G, dim=-1, keepdim=True)
        coef = torch.rand((mixed, informed.shape[0]), generator=gen, dtype=torch.float64)
        M = 1.5 * coef @ informed + G
        M = M * (self.radius / torch.linalg.vector_norm(M, dim=-1, keepdim=True))
        uniform = _sphere(rest - mixed, self.d, self.radius, gen)
        return torch.cat([fixed, M, uniform]).to(self.X.device)


# --------------------------------------------------------------------------- search engines


def _project(D: Tensor, radius: float) -> Tensor:
    norm = torch.linalg.vector_norm(D, dim=-1, keepdim=True)
    return D * torch.clamp(radius / norm.clamp_min(1e-30), max=1.0)


def _ascend(
    problem: _Problem, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int,
    momentum: float, eta_min: float = 1e-4,
) -> tuple[Tensor, int]:
    """Projected normalised-gradient ascent from every start; returns the point reached by each survivor.

    Each restart moves by ``eta * radius`` along its normalised gradient (plus ``momentum`` times
    its previous unit step, which follows ridges instead of zig-zagging across them) and is
    projected back on the ball; ``eta`` doubles (up to 64, where a step is nearly the jump to
    ``radius * g / ||g||`` that maximises the linearisation) after a gain and halves after a
    loss, which is rejected, so every restart's value never decreases. Every ``_HALVE_EVERY``
    steps the worse half of the batch is dropped until ``keep`` restarts remain. The search stops when the best value gains
    less than ``tol`` (relative) in ``patience`` steps, when every step size has collapsed, or
    after ``max_steps`` steps.
    """
    r = problem.radius
    D = _project(starts, r)
    val, grad = problem.value_and_grad(D)
    eta = torch.full_like(val, _ETA0)
    mom = torch.zeros_like(D)
    history = [float(val.max())]
    halve_every = _HALVE_EVERY
    steps = 0
    while steps < max_steps:
        direction = grad / torch.linalg.vector_norm(grad, dim=-1, keepdim=True).clamp_min(1e-30) + momentum * mom
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True).clamp_min(1e-30)
        cand = _project(D + (eta * r)[:, None] * direction, r)
        cval, cgrad = problem.value_and_grad(cand)
        steps += 1
        ok = torch.isfinite(cval) & (cval >= val)
        moved = cand - D
        moved = moved / torch.linalg.vector_norm(moved, dim=-1, keepdim=True).clamp_min(1e-30)
        mom = torch.where(ok[:, None], moved, torch.zeros_like(mom))
        D = torch.where(ok[:, None], cand, D)
        val = torch.where(ok, cval, val)
        grad = torch.where(ok[:, None], cgrad, grad)
        eta = torch.where(ok, torch.clamp(eta * 2.0, max=_ETA_MAX), eta * 0.5)
        history.append(float(val.max()))
        if steps % halve_every == 0 and val.shape[0] > keep:
            survivors = torch.argsort(val, descending=True)[: max(keep, val.shape[0] // 2)]
            D, val, grad, eta, mom = D[survivors], val[survivors], grad[survivors], eta[survivors], mom[survivors]
        if bool((eta < eta_min).all()):
            break
        if len(history) > patience:
            old, new = history[-patience - 1], history[-1]
            if new - old <= tol * max(abs(new), 1e-30):
                break
    return D, steps


# --------------------------------------------------------------------------- reference


def _reference_search(
    map_name: str, X: Tensor, weights: Any, position: int, seed: int
) -> tuple[Tensor, float, int]:
    """The authors' algorithm on the full map in float64; returns (best delta, its change, steps)."""
    f = maps.feature_map(map_name)
    inner = {"rf": maps._rf, "drf": maps._drf, "raf": maps._raf, "relu_raf": maps._relu_raf}[map_name]
    n, d = X.shape
    r = math.sqrt(d)
    lr, steps = (100.0, 300) if map_name in ("rf", "drf") else (10.0, 50 * n)
    phi0 = f(X, weights)
    onehot = torch.zeros((n, 1), dtype=X.dtype, device=X.device)
    onehot[position] = 1.0
    gen = generator(derive_seed(seed, "reference-start", position))
    delta = (0.1 * torch.randn(d, generator=gen, dtype=torch.float64)).to(X.device)
    best_delta, best_change = delta.clone(), -1.0
    for _ in range(steps):
        delta.requires_grad_(True)
        phi = inner(X + onehot * delta, weights)
        diff = phi - phi0
        rmse = torch.sqrt(torch.mean(diff * diff))
        (grad,) = torch.autograd.grad(rmse, delta)
        change = float(torch.linalg.vector_norm(diff.detach()))
        if change > best_change:
            best_change, best_delta = change, delta.detach().clone()
        with torch.no_grad():
            delta = _project(delta.detach() + lr * grad, r)
    with torch.no_grad():
        change = float(torch.linalg.vector_norm(inner(X + onehot * delta, weights) - phi0))
    if change > best_change:
        best_change, best_delta = change, delta.detach().clone()
    return best_delta, best_change, steps


# --------------------------------------------------------------------------- building problems


def _rest_gaussian(seed: int, tag: str, position: int, k: int, std: float, device: torch.device) -> Tensor:
    gen = generator(derive_seed(seed, tag, position))
    draw = torch.randn(k, generator=gen, dtype=torch.float32).to(torch.float64)
    return (draw * std).to(device)


def _matvec64(M: Tensor, x: Tensor) -> Tensor:
    out = torch.empty(M.shape[0], dtype=torch.float64, device=M.device)

    def fill(rows: slice, chunk: Tensor) -> None:
        out[rows] = chunk @ x

    _chunked_rows64(M, fill)
    return out


def _first_layer_problem(
    map_name: str, X64: Tensor, position: int, seed: int, *, sampler: str, weights: Any,
    k: int, L: int, dtype: torch.dtype, device: torch.device, u_all: Tensor | None = None,
) -> _Problem:
    """RF or DRF problem at ``position``; the first layer is reduced to its block ``B`` and ``u``."""
    n, d = X64.shape
    D = n * d
    xi = X64[position].to(device)
    rest_norm2 = float((X64 * X64).sum() - (X64[position] * X64[position]).sum())
    cols = slice(position * d, (position + 1) * d)
    tail: list[Tensor] = []
    if map_name == "rf":
        if weights is not None:
            V = weights.to(device)
            B = V[:, cols].to(dtype)
            u = _matvec64(V, X64.reshape(-1).to(device))
        else:
            B = maps.rf_block(seed, position, n, d, k, dtype=dtype, device=device)
            if sampler == "exact":
                u = _matvec64(B, xi) + _rest_gaussian(seed, "rf-rest", position, k, math.sqrt(rest_norm2 / D), device)
            else:
                u = u_all if u_all is not None else _matvec64(maps.rf_weights(seed, n, d, k, dtype=dtype, device=device),
                                                               X64.reshape(-1).to(device))
        return _RFProblem(B, u)
    if weights is not None:
        V1 = weights[0].to(device)
        B = V1[:, cols].to(dtype)
        u = _matvec64(V1, X64.reshape(-1).to(device))
        tail = [V.to(device=device, dtype=dtype) for V in weights[1:]]
    else:
        B = maps.drf_block(seed, 1, position, n, d, dtype=dtype, device=device)
        if sampler == "exact":
            u = _matvec64(B, xi) + _rest_gaussian(seed, "drf-rest", position, D, math.sqrt(2 * rest_norm2 / D), device)
        else:
            assert u_all is not None
            u = u_all
        tail = [maps.drf_layer(seed, layer, n, d, dtype=dtype, device=device) for layer in range(2, L + 1)]
    return _DRFProblem(B, u, tail)


def _blockwise_u(map_name: str, X64: Tensor, seed: int, k: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """First-layer pre-activation ``V flat(X)`` accumulated one column block at a time."""
    n, d = X64.shape
    rows = k if map_name == "rf" else n * d
    u = torch.zeros(rows, dtype=torch.float64, device=device)
    for j in range(n):
        if map_name == "rf":
            block = maps.rf_block(seed, j, n, d, k, dtype=dtype, device=device)
        else:
            block = maps.drf_block(seed, 1, j, n, d, dtype=dtype, device=device)
        u += _matvec64(block, X64[j].to(device))
        del block
    return u


# --------------------------------------------------------------------------- public entry point


def _check_weights(map_name: str, weights: Any, n: int, d: int) -> None:
    D = n * d
    if map_name == "rf":
        if not isinstance(weights, Tensor) or weights.ndim != 2 or weights.shape[1] != D:
            raise ValueError(f"RF weights must be a (k, n*d) = (k, {D}) tensor")
        maps._check_matrix(weights, tuple(weights.shape), "V", "RF weights")
    elif map_name == "drf":
        if isinstance(weights, Tensor) or not isinstance(weights, Sequence) or len(weights) == 0:
            raise ValueError("DRF weights must be a non-empty list of (D, D) tensors")
        for layer, V in enumerate(weights, start=1):
            maps._check_matrix(V, (D, D), f"weights[{layer - 1}]", f"DRF layer {layer}, D = {D}")
    else:
        maps._check_matrix(weights, (d, d), "W", f"attention weights for d = {d}")


def estimate(
    map_name: str,
    X: Tensor,
    *,
    seed: int,
    position: int | str = 0,
    weights: Any = None,
    method: str = "default",
    L: int = 2,
    k: int | None = None,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "auto",
    sampler: str = "auto",
    restarts: int | None = None,
    max_steps: int = 1000,
    tol: float | None = None,
    patience: int | None = None,
) -> WSResult:
    """Estimate the word sensitivity of ``map_name`` at ``X`` (n, d).

    Args:
        map_name: ``"rf"``, ``"drf"``, ``"raf"`` or ``"relu_raf"``.
        X: the sample (n, d); rows should have norm sqrt(d) (see ``wordsens.preprocess``).
        seed: seeds the weights (when ``weights`` is None) and the search.
        position: 0-based token index of the perturbed row, or ``"all"`` for the true sup over
            every position (one position at a time; the result names the maximising one).
        weights: explicit weights in the map's format (RF: ``V``; DRF: list; RAF maps: ``W``).
        method: ``"default"`` (the fast search) or ``"reference"`` (the authors' algorithm).
        L: DRF depth. k: RF width (default ``n * d``).
        dtype: working dtype of the default search (float32 for RF/DRF, float64 for attention).
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
        sampler: how RF/DRF weights are drawn when ``weights`` is None: ``"exact"`` (only the
            perturbed token's block ``B`` and, independently, ``V_rest flat(X_rest)`` as its exact
            law ``N(0, ||X_rest||^2 / D)`` per row; a fixed position only), ``"blockwise"`` (the
            dense matrix's blocks one at a time: same numbers as ``"dense"``, never the whole
            matrix), ``"dense"`` (the whole matrix); ``"auto"``: exact for one position,
            blockwise for ``"all"``, dense when ``weights`` are given.
        restarts, max_steps, tol, patience: the default search's batch of starts (default 5 for
            RF/DRF, 64 for attention, of which the best 8 survive successive halvings), step cap
            and convergence rule: stop when the best squared change gains less than ``tol``
            relative in ``patience`` steps (defaults: 1e-5 in 10 iterations for RF, 1e-4 in 10
            steps for DRF, 1e-4 in 40 steps for attention, whose leader is then polished to 1e-12).

    Raises:
        ValueError: bad map, shapes, NaN/Inf, position, method or options.
        InsufficientResources: the job cannot fit the device's memory.
    """
    maps.feature_map(map_name)
    n, d = maps.check_sample(X)
    if X.ndim != 2:
        raise ValueError(f"X must be one sample of shape (n, d), got {tuple(X.shape)}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    maps.feature_map(map_name)
    settings = _SETTINGS[map_name]
    restarts = settings.restarts if restarts is None else restarts
    patience = settings.patience if patience is None else patience
    tol = settings.tol if tol is None else tol
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    for key, value in (("L", L), ("restarts", restarts), ("max_steps", max_steps), ("patience", patience)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if not seed == int(seed):
        raise ValueError(f"seed must be an int, got {seed!r}")
    seed = int(seed)
    if position == "all":
        positions = list(range(n))
    elif isinstance(position, int) and not isinstance(position, bool) and 0 <= position < n:
        positions = [position]
    else:
        raise ValueError(f"position must be a token index in [0, {n - 1}] or 'all', got {position!r}")
    if weights is not None:
        _check_weights(map_name, weights, n, d)
        if map_name == "rf":
            k = int(weights.shape[0])
        if map_name == "drf":
            L = len(weights)
    k = n * d if k is None else k
    dev = resolve_device(device)
    if dtype is None:
        dtype = torch.float64 if map_name in ("raf", "relu_raf") or method == "reference" else torch.float32
    sampler = choose_sampler(map_name, position=position, method=method, sampler=sampler,
                             explicit_weights=weights is not None)
    what = f"word sensitivity of {map_name} at n = {n}, d = {d}" + (f", L = {L}" if map_name == "drf" else "")
    check_fits(ws_memory(map_name, n, d, L=L, k=k, method=method, sampler=sampler, dtype=dtype, restarts=restarts),
               dev, what)

    X64 = X.detach().to(torch.float64)
    started = time.perf_counter()
    if method == "reference":
        result = _run_reference(map_name, X64, seed, positions, weights, L=L, k=k, device=dev)
    else:
        result = _run_default(map_name, X64, seed, positions, weights, L=L, k=k, dtype=dtype, device=dev,
                              sampler=sampler, restarts=restarts, max_steps=max_steps, tol=tol, patience=patience)
    best_pos, delta, change, phi_norm, upper, steps = result
    return WSResult(
        map=map_name, method=method, n=n, d=d, position=best_pos,
        lower=change / phi_norm if phi_norm > 0 else 0.0, upper=upper,
        delta=delta.cpu(), delta_norm=float(torch.linalg.vector_norm(delta)), phi_norm=phi_norm,
        steps=steps, seconds=time.perf_counter() - started, sampler=sampler,
        restarts=1 if method == "reference" else restarts, device=str(dev),
        dtype=str(torch.float64 if method == "reference" else dtype).replace("torch.", ""),
        L=L if map_name == "drf" else None, k=k if map_name == "rf" else None,
    )


def _feasible(delta: Tensor, radius: float) -> Tensor:
    delta = delta.to(torch.float64)
    norm = float(torch.linalg.vector_norm(delta))
    if norm > radius:
        delta = delta * (radius / norm * (1 - 1e-12))
    return delta


def _run_default(map_name, X64, seed, positions, weights, *, L, k, dtype, device, sampler, restarts,
                 max_steps, tol, patience):
    n, d = X64.shape
    settings = _SETTINGS[map_name]
    keep = min(settings.keep, restarts)
    best = None
    total_steps = 0
    upper_max: float | None = None
    u_all = _blockwise_u(map_name, X64, seed, k, dtype, device) if sampler == "blockwise" else None
    for pos in positions:
        if map_name in ("rf", "drf"):
            problem = _first_layer_problem(map_name, X64, pos, seed, sampler=sampler, weights=weights, k=k, L=L,
                                           dtype=dtype, device=device, u_all=u_all)
        else:
            W = weights if weights is not None else maps.attention_weights(seed, d)
            problem = _AttentionProblem(X64.to(device=device, dtype=dtype), W.to(device=device, dtype=dtype), pos,
                                        "softmax" if map_name == "raf" else "relu")
        gen = generator(derive_seed(seed, "search", pos))
        starts = problem.starts(restarts, gen).to(device=device, dtype=dtype)
        best_D, steps = problem.search(starts, max_steps=max_steps, tol=tol, patience=patience, keep=keep,
                                       momentum=settings.momentum)
        total_steps += steps
        if settings.polish and steps < max_steps:
            # converge the leader tightly: a tie with another algorithm's local maximum is not lost
            # to a loose stopping rule
            with torch.no_grad():
                lead = int(torch.argmax(problem.value_and_grad(best_D)[0]))
            polished, extra = _ascend(problem, best_D[lead:lead + 1], max_steps=min(300, max_steps - steps),
                                      tol=1e-12, patience=10, keep=1, momentum=settings.momentum,
                                      eta_min=1e-9)
            best_D = torch.cat([best_D, polished])
            total_steps += extra
        deltas = torch.stack([_feasible(D, problem.radius) for D in best_D])
        with torch.no_grad():
            changes = problem.exact(deltas)
        j = int(torch.argmax(changes))
        upper = problem.upper()
        if upper is not None:
            upper_max = upper if upper_max is None else max(upper_max, upper)
        rel = float(changes[j]) / problem.phi_norm if problem.phi_norm > 0 else 0.0
        if best is None or rel > best[0]:
            best = (rel, pos, deltas[j], float(changes[j]), problem.phi_norm)
        del problem
    _, pos, delta, change, phi_norm = best
    return pos, delta, change, phi_norm, upper_max, total_steps


def _run_reference(map_name, X64, seed, positions, weights, *, L, k, device):
    n, d = X64.shape
    if weights is None:
        weights = maps.sample_weights(map_name, seed, n, d, L=L, k=k, dtype=torch.float64, device=device)
    elif isinstance(weights, Tensor):
        weights = weights.to(device=device, dtype=torch.float64)
    else:
        weights = [V.to(device=device, dtype=torch.float64) for V in weights]
    X = X64.to(device)
    f = maps.feature_map(map_name)
    phi_norm = float(torch.linalg.vector_norm(f(X, weights)))
    best = None
    total = 0
    for pos in positions:
        delta, change, steps = _reference_search(map_name, X, weights, pos, seed)
        total += steps
        if best is None or change > best[2]:
            best = (pos, _feasible(delta, math.sqrt(d)), change)
    pos, delta, change = best
    upper = None
    if map_name == "rf":
        upper = max(_RFProblem(weights[:, p * d:(p + 1) * d], _matvec64(weights, X.reshape(-1))).upper()
                    for p in positions)
    return pos, delta, change, phi_norm, upper, total
