"""The fast word-sensitivity search of a post-LayerNorm encoder layer with ``trained_layer``'s formula
(``wordsens.maps.trained``): the checkpoint's own layer (``trained_layer``) and the random layers built
from it (``matched_layer``: random singular vectors; ``ln_block``: ``block``'s weights with the
checkpoint's LayerNorms).

Moving token ``i`` changes the attention output of every row by the closed form of
``wordsens.search.heads`` (``O(n d h)`` per restart, the queries', keys' and values' biases
included); the residual, both LayerNorms (their gamma, beta and eps) and the feed-forward layer
(exact GELU, biases) then run on every row, since attention changes all of them. The full-map
search with autograd (4 restarts halved to 2) stopped up to 30% below a 16-restart search on MiniLM's
layer 6 (measured: 1.318 against 1.884); this one screens many starts (``search``).
``tests/unit/experiments/test_trained_conventions.py`` checks values and gradients against the plain map.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F

from ..maps.spec import MapSpec
from .engine import ascend
from .heads import TrainedAttentionProblem
from .variants import fast_prepare

Tensor = torch.Tensor

__all__ = ["LayerProblem", "layer_prepare"]


class LayerProblem(TrainedAttentionProblem):
    """``trained_layer``'s formula with row ``i`` moved: the attention output of every row from the
    multi-head closed form (row ``j != i`` changes by ``A_j Wo + sum_h w_hj (v_h' Wo_h - M_hj Wo_h)``;
    ``bo`` cancels), row ``i`` recomputed, then ``Y = LN1(X + attention)`` and
    ``LN2(Y + GELU(Y W1 + b1) W2 + b2)`` on every row."""

    SCREEN_STEPS = 20  # steps every start ascends before the best ``keep`` go on (``search``)

    def __init__(
        self,
        spec: MapSpec,
        X: Tensor,
        weights: Mapping[str, Tensor],
        position: int,
        X64: Tensor,
        W64: Mapping[str, Tensor],
    ) -> None:
        # spec: the map searched (its forward: trained_layer's formula, which every map of this kind shares)
        super().__init__(spec, X, weights, position, X64, W64)
        self.polish_steps = 30  # the float64 twin runs the feed-forward layer on every row: a short polish
        h, dh, d = self.h, self.dh, self.d
        Wo_h = self.Wo.reshape(h, dh, d)
        self.bo = weights["bo"]
        self.attention0 = self.concat(self.out0) @ self.Wo + self.bo  # (n, d)
        self.AWo = self.concat(self.A) @ self.Wo
        self.MWo = (self.M @ Wo_h).transpose(0, 1).contiguous()  # (n, h, d): M_hj Wo_h
        self._Wo_h = Wo_h.contiguous()
        self.W1, self.b1, self.W2, self.b2 = (weights[key] for key in ("W1", "b1", "W2", "b2"))
        self.ln1 = (weights["ln1_w"], weights["ln1_b"])
        self.ln2 = (weights["ln2_w"], weights["ln2_b"])
        self.eps = float(weights["eps"])
        with torch.no_grad():
            self.base = self.forward(X, weights)

    def value(self, D: Tensor) -> Tensor:
        D = D.to(self.X.dtype)
        d = self.d
        w, vp, out_i = self.moved(D)
        wt = w.permute(1, 2, 0)  # (R, n, h)
        u = (vp @ self._Wo_h).transpose(0, 1)  # (R, h, d): v_h' Wo_h
        change = self.AWo + wt @ u - (wt.transpose(0, 1) @ self.MWo).transpose(0, 1)  # (R, n, d)
        row_i = self.concat(out_i) @ self.Wo + self.bo  # (R, d)
        attention = self.attention0 + change + self.onehot[:, None] * (row_i[:, None] - self.attention0)
        Z = self.X + self.onehot[:, None] * D[:, None, :] + attention
        Y = F.layer_norm(Z, (d,), *self.ln1, self.eps)
        out = F.layer_norm(Y + F.gelu(Y @ self.W1 + self.b1) @ self.W2 + self.b2, (d,), *self.ln2, self.eps)
        diff = (out - self.base).flatten(1)
        return (diff * diff).sum(-1)

    def search(
        self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int, momentum: float
    ) -> tuple[Tensor, int]:
        """Every start ascends ``SCREEN_STEPS`` steps side by side (``ascend`` without halving), then the
        best ``keep`` ascend on to convergence: the layer has many local maxima, and a restart's value
        after a few halving rounds says little about where it ends (as ``block``'s search)."""
        first = min(self.SCREEN_STEPS, max_steps)
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


layer_prepare = fast_prepare(LayerProblem)
