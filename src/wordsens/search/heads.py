"""Fast word-sensitivity searches for multi-head attention (``mh_raf``; ``trained_attention``, with biases, or
one head without output projection) and the post-LayerNorm layers (``block``; ``trained_layer``'s formula:
``LayerProblem``): a query row ``j != i`` changes by a closed form in a few inner products per head, ``O(n d h
+ d^2)`` per restart; a layer's feed-forward sublayer and LayerNorms then run in full on every row.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ..compute.map_costs import BLOCK_SCREEN_STEPS
from ..compute.swap_costs import SCREEN_PROBES
from ..maps.spec import MapSpec
from ..maps.variants import layer_norm
from .engine import ascend, unit_rows
from .variants import MovedTokenProblem, Weights, fast_prepare

Tensor = torch.Tensor


# --------------------------------------------------------------------------- multi-head attention


class _HeadsProblem(MovedTokenProblem):
    """What ``mh_raf`` and ``block`` share: per head ``h``, a query row ``j != i`` becomes ``(1 - w_hj) M_hj +
    w_hj v_h'`` (``M_hj``: its output without column ``i``, ``w_hj = sigmoid(s_hji' - logsumexp_{k != i} s_hjk)``,
    ``v_h' = x' Wv_h``), a change ``A_hj + w_hj (v_h' - M_hj)`` with ``A_hj = M_hj - out_hj``; row ``i`` is
    recomputed."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        Wq, Wk, Wv = (weights[key] for key in ("Wq", "Wk", "Wv"))
        h, d, dh = Wq.shape
        super().__init__(spec, X, weights, position, X64, W64)
        n, i = self.n, position
        self.h, self.dh = h, dh
        # without an output projection (one head of a trained layer) the heads are the output: Wo = I
        Wo = weights["Wo"] if "Wo" in weights else torch.eye(h * dh, dtype=X.dtype, device=X.device)
        s = 1.0 / math.sqrt(dh)
        Qh, Kh, self.Vh = X @ Wq, X @ Wk, X @ Wv  # (h, n, dh)
        self._b: Tensor | None = None  # the biases of k', v', q' (a trained layer's), added to their product
        if "bq" in weights:
            Qh, Kh, self.Vh = Qh + weights["bq"][:, None], Kh + weights["bk"][:, None], self.Vh + weights["bv"][:, None]
            self._b = torch.cat([weights[key].reshape(h * dh) for key in ("bk", "bv", "bq")])
        self.out0, M = torch.empty_like(self.Vh), torch.zeros_like(self.Vh)
        logz = torch.zeros((h, n), dtype=X.dtype, device=X.device)
        for head in range(h):  # one (n, n) score matrix at a time
            S = (Qh[head] @ Kh[head].T) * s
            self.out0[head] = torch.softmax(S, dim=-1) @ self.Vh[head]
            if n > 1:  # the statistics of every row without column i
                S.masked_fill_(~self.others[None, :], float("-inf"))
                logz[head] = torch.logsumexp(S, dim=-1)
                M[head] = torch.softmax(S, dim=-1) @ self.Vh[head]
            del S
        self.logz = (logz * self.mask)[:, None, :]  # (h, 1, n)
        self.M = M * self.mask[None, :, None]
        self.A = (self.M - self.out0) * self.mask[None, :, None]
        self._QhT = (Qh * s).transpose(-1, -2).contiguous()  # (h, dh, n): column scores k_h' @ QhT
        self._KhT = (Kh * s).transpose(-1, -2).contiguous()  # row scores q_h' @ KhT
        self._W = torch.cat(
            [W.permute(1, 0, 2).reshape(d, h * dh) for W in (Wk, Wv, Wq)],
            dim=1,
        ).contiguous()  # (d, 3 h dh): k', v', q'
        self.Wo, self.Wk, self.Wv, self.Qh = Wo, Wk, Wv, Qh
        self.out0_i, self.vi = self.out0[:, i : i + 1], self.Vh[:, i : i + 1]  # (h, 1, dh)

    def _heads(self, Z: Tensor) -> Tensor:
        return Z.reshape(Z.shape[0], self.h, self.dh).transpose(0, 1)  # (R, h dh) -> (h, R, dh)

    def moved(self, D: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """For moves ``D`` (R, d): the new weights ``w`` (h, R, n) of column ``i`` (0 in row ``i``),
        the new values ``v'`` (h, R, dh) and the new output of row ``i`` per head (h, R, dh)."""
        e, i = self.h * self.dh, self.i
        kvq = (self.xi + D) @ self._W
        if self._b is not None:
            kvq = kvq + self._b
        kp, vp, qp = self._heads(kvq[:, :e]), self._heads(kvq[:, e : 2 * e]), self._heads(kvq[:, 2 * e :])
        w = torch.sigmoid(kp @ self._QhT - self.logz) * self.mask
        rows = qp @ self._KhT  # (h, R, n)
        self_score = (qp * kp).sum(-1, keepdim=True) / math.sqrt(self.dh)
        att = torch.softmax(rows + self.onehot * (self_score - rows), dim=-1)
        return w, vp, att @ self.Vh + att[..., i : i + 1] * (vp - self.vi)

    def concat(self, Z: Tensor) -> Tensor:
        """Heads (h, R, dh) concatenated in order: (R, h dh)."""
        return Z.transpose(0, 1).reshape(Z.shape[1], self.h * self.dh)

    def informed(self) -> Tensor:
        """Informed unit directions (float64, CPU): ``+-x_i``; ``+-`` attract (raise the moved token's key score
        in every row of every head) and attract per head; ``+-`` the top left singular vector of ``Wv Wo``."""
        cpu: dict[str, Any] = {"device": "cpu", "dtype": torch.float64}
        d = self.d
        xi, Wk, Wv, mask = self.xi.to(**cpu), self.Wk.to(**cpu), self.Wv.to(**cpu), self.mask.to(**cpu)
        per_head = (Wk @ (self.Qh.to(**cpu) * mask[None, :, None]).sum(1)[:, :, None])[..., 0]  # (h, d)
        attract = per_head.sum(0)
        U = Wv.permute(1, 0, 2).reshape(d, Wv.shape[0] * Wv.shape[2]) @ self.Wo.to(**cpu)
        value = torch.ones(d, dtype=torch.float64)
        for _ in range(30):
            value = U @ (U.T @ value)
            value = value / torch.linalg.vector_norm(value).clamp_min(1e-300)
        return unit_rows(torch.cat([torch.stack([attract, -attract, xi, -xi, value, -value]), per_head]))


class MultiHeadProblem(_HeadsProblem):
    """``mh_raf`` with row ``i`` moved: the change of row ``j != i`` after ``Wo`` has the squared norm ``z_j G
    z_j^T`` (``z_j``: the concatenated head changes, ``G = Wo Wo^T``, ``G_hg`` its (d/h, d/h) blocks), i.e.
    ``a_j G a_j + 2 sum_h w_hj (aG_hj . v_h' - aG_hj . M_hj) + sum_{h,g} w_hj w_gj (v_h' G_hg v_g' - 2 v_h'
    G_hg M_gj + M_hj G_hg M_gj)``, where only ``v_h' . N_hgj`` (``N_hgj = G_hg M_gj``, precomputed) needs every
    (h, g, j)."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        n, h, dh, M = self.n, self.h, self.dh, self.M
        a = self.concat(self.A)
        G = self.Wo @ self.Wo.T
        aG = a @ G
        self.const = (aG * a).sum(-1)
        aG = aG.reshape(n, h, dh).transpose(0, 1)  # (h, n, dh)
        self.aGM = (aG * M).sum(-1)[:, None, :]  # (h, 1, n)
        self._aGT = aG.transpose(-1, -2).contiguous()  # (h, dh, n)
        N = torch.einsum("hagb,gjb->hagj", G.reshape(h, dh, h, dh), M)  # (h, dh, h, n)
        self._E = torch.einsum("hja,hagj->jhg", M, N).contiguous()  # (n, h, g): M_hj G_hg M_gj
        self._N = N.reshape(h, dh, h * n).contiguous()
        self._Grows = G.reshape(h, dh, h * dh).contiguous()

    def value(self, D: Tensor) -> Tensor:
        D = D.to(self.X.dtype)  # float64 moves (see search) in a float32 problem
        R, n, h, dh = D.shape[0], self.n, self.h, self.dh
        w, vp, out_i = self.moved(D)  # w: (h, R, n)
        wg = w.transpose(0, 1)  # (R, g, n)
        lin = 2 * (w * (vp @ self._aGT - self.aGM)).sum(0)  # (R, n)
        # sum_{h,g} w_hj w_gj (v_h' G_hg v_g' + M_hj G_hg M_gj - 2 v_h' G_hg M_gj), term by term
        B = ((vp @ self._Grows).reshape(h, R, h, dh) * vp.transpose(0, 1)[None]).sum(-1)  # (h, R, g)
        Bw = B.transpose(0, 1) @ wg  # (R, h, n): sum_g B_hg w_gj
        Ew = (self._E @ w.permute(2, 0, 1)).permute(1, 2, 0)  # (h, R, n): sum_g E_hgj w_gj
        C = (vp @ self._N).reshape(h, R, h, n)  # v_h' G_hg M_gj
        Cw = (C * wg[None]).sum(2)  # (h, R, n)
        quad = (w * (Bw.transpose(0, 1) + Ew - 2 * Cw)).sum(0)  # (R, n)
        others = ((self.const + lin + quad) * self.mask).sum(-1)
        diff = self.concat(out_i - self.out0_i) @ self.Wo
        return others + (diff * diff).sum(-1)


class PostLNProblem(_HeadsProblem):
    """A post-LayerNorm encoder layer with row ``i`` moved: every row's attention output from the closed form,
    then ``Y = ln1(X + attention)`` (``sublayer``) and the feed-forward sublayer with its LayerNorm
    (``second``), both given by the subclasses."""

    base: Tensor  # the layer's output on the sample, in the working dtype (set by the subclass)

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        # the float64 twin of the polish runs the feed-forward layer in float64 on every row: a short polish
        self.polish_steps = 30
        h, dh, d = self.h, self.dh, self.d
        Wo_h = self.Wo.reshape(h, dh, d)
        self.bo = weights.get("bo")
        self.attention0 = self._out(self.concat(self.out0))  # (n, d)
        self.AWo = self.concat(self.A) @ self.Wo
        self.MWo = (self.M @ Wo_h).transpose(0, 1).contiguous()  # (n, h, d): M_hj Wo_h
        self._Wo_h = Wo_h.contiguous()

    def _out(self, heads: Tensor) -> Tensor:
        out = heads @ self.Wo
        return out if self.bo is None else out + self.bo

    @abc.abstractmethod
    def ln1(self, Z: Tensor) -> Tensor:
        """The LayerNorm after attention and residual (row-wise)."""

    @abc.abstractmethod
    def second(self, Y: Tensor) -> Tensor:
        """The feed-forward sublayer, its residual and LayerNorm, on rows ``Y`` (..., d)."""

    def sublayer(self, D: Tensor) -> Tensor:
        """``Y = ln1(X + D e_i + attention)`` for moves ``D`` (R, d): (R, n, d), exact."""
        D = D.to(self.X.dtype)  # float64 moves in a float32 problem
        w, vp, out_i = self.moved(D)
        wt = w.permute(1, 2, 0)  # (R, n, h)
        u = (vp @ self._Wo_h).transpose(0, 1)  # (R, h, d): v_h' Wo_h
        change = self.AWo + wt @ u - (wt.transpose(0, 1) @ self.MWo).transpose(0, 1)  # (R, n, d)
        row_i = self._out(self.concat(out_i))  # (R, d)
        attention = self.attention0 + change + self.onehot[:, None] * (row_i[:, None] - self.attention0)
        return self.ln1(self.X + self.onehot[:, None] * D[:, None, :] + attention)

    def value(self, D: Tensor) -> Tensor:
        diff = (self.second(self.sublayer(D)) - self.base).flatten(1)
        return (diff * diff).sum(-1)

    def screener(self, seed: int) -> Callable[[Tensor], Tensor]:
        """The sublayer screen: ``Y`` exact, row ``i`` through ``second`` exactly, every other row ``j`` by
        ``||dY_j||^2`` times ``second``'s mean gain there, ``||J_j||_F^2 / d`` (its Jacobian at the unmoved row,
        estimated with ``SCREEN_PROBES`` Rademacher probes drawn with ``seed``): the moved row saturates both
        LayerNorms, the others change nearly linearly (docs/benchmarks.md, "Where the constants come from")."""
        i, d = self.i, self.d
        with torch.no_grad():
            Y0 = self.sublayer(torch.zeros((1, d), dtype=self.X.dtype, device=self.X.device))[0]
            gen = torch.Generator().manual_seed(int(seed) % 2**63)
            probes = torch.randint(0, 2, (SCREEN_PROBES, d), generator=gen).to(Y0) * 2 - 1
            gains = torch.zeros(self.n, dtype=Y0.dtype, device=Y0.device)

            def product(tangent: Tensor) -> Tensor:  # every row's Jacobian times its row of tangent
                return torch.func.jvp(self.second, (Y0,), (tangent,))[1]

            for start in range(0, SCREEN_PROBES, 8):  # forward-mode products, 8 probes at a time
                part = probes[start : start + 8, None, :].expand(-1, self.n, -1)
                gains += (torch.func.vmap(product)(part) ** 2).sum((0, 2))
            gains = gains * self.mask / (SCREEN_PROBES * d)
            base_i = self.base[i]

        def score(D: Tensor) -> Tensor:
            Y = self.sublayer(D)
            others = (((Y - Y0) ** 2).sum(-1) * gains).sum(-1)
            row = self.second(Y[:, i]) - base_i
            return others + (row * row).sum(-1)

        return score

    def search(
        self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int, momentum: float
    ) -> tuple[Tensor, int]:
        """Every start ascends ``BLOCK_SCREEN_STEPS`` steps without halving, then the best ``keep`` on to
        convergence: with the layer's many local maxima, early halving drops the restart that ends best."""
        first = min(BLOCK_SCREEN_STEPS, max_steps)
        D, taken = ascend(
            self, starts, max_steps=first, tol=tol, patience=patience, keep=starts.shape[0], momentum=momentum
        )
        if D.shape[0] > keep:
            with torch.no_grad():
                D = D[torch.argsort(self.value(D), descending=True)[:keep]]
        if taken >= max_steps:
            return D, taken
        D, more = ascend(self, D, max_steps=max_steps - taken, tol=tol, patience=patience, keep=keep, momentum=momentum)
        return D, taken + more


class BlockProblem(PostLNProblem):
    """``block`` with row ``i`` moved: LayerNorms without affine parameters, a ReLU feed-forward layer."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        self.W1, self.W2 = weights["W1"], weights["W2"]
        self.base = self.forward(X, weights)  # the block's own forward, in the working dtype

    def ln1(self, Z: Tensor) -> Tensor:
        return layer_norm(Z)

    def second(self, Y: Tensor) -> Tensor:
        return layer_norm(Y + torch.relu(Y @ self.W1) @ self.W2)


class LayerProblem(PostLNProblem):
    """``trained_layer``'s formula with row ``i`` moved (``trained_layer``, ``matched_layer``, ``ln_block``): biases,
    ``Y = LN1(X + attention)`` and ``LN2(Y + GELU(Y W1 + b1) W2 + b2)`` with affine LayerNorms."""

    def __init__(self, spec: MapSpec, X: Tensor, weights: Weights, position: int, X64: Tensor, W64: Weights) -> None:
        super().__init__(spec, X, weights, position, X64, W64)
        self.W1, self.b1, self.W2, self.b2 = (weights[key] for key in ("W1", "b1", "W2", "b2"))
        self._ln1 = (weights["ln1_w"], weights["ln1_b"])
        self._ln2 = (weights["ln2_w"], weights["ln2_b"])
        self.eps = float(weights["eps"])
        with torch.no_grad():
            self.base = self.forward(X, weights)

    def ln1(self, Z: Tensor) -> Tensor:
        return F.layer_norm(Z, (self.d,), *self._ln1, self.eps)

    def second(self, Y: Tensor) -> Tensor:
        Z = Y + F.gelu(Y @ self.W1 + self.b1) @ self.W2 + self.b2
        return F.layer_norm(Z, (self.d,), *self._ln2, self.eps)


mh_raf_prepare = fast_prepare(MultiHeadProblem)
trained_attention_prepare = fast_prepare(MultiHeadProblem)  # with biases (bo cancels), or one head without Wo
block_prepare = fast_prepare(BlockProblem)
layer_prepare = fast_prepare(LayerProblem)
