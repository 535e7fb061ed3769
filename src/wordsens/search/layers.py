"""The fast word-sensitivity search of a post-LayerNorm encoder layer with ``trained_layer``'s formula
(``wordsens.maps.trained``): the checkpoint's own layer (``trained_layer``) and the random layers built
from it (``matched_layer``: random singular vectors; ``ln_block``: ``block``'s weights with the
checkpoint's LayerNorms).

Moving token ``i`` changes the attention output of every row by the closed form of
``wordsens.search.heads`` (``O(n d h)`` per restart, the queries', keys' and values' biases
included); the residual, both LayerNorms (their gamma, beta and eps) and the feed-forward layer
(exact GELU, biases) then run on every row, since attention changes all of them. A full-map
search with autograd and few restarts (4 halved to 2) ends far below a 16-restart search on MiniLM's
layer 6 (docs/benchmarks.md, "Where the constants come from"), so this one screens many starts
(``PostLNProblem.search``, shared with ``block``).
``tests/unit/experiments/test_trained_conventions.py`` checks values and gradients against the plain map.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F

from ..maps.spec import MapSpec
from .heads import PostLNProblem
from .variants import fast_prepare

Tensor = torch.Tensor

__all__ = ["LayerProblem", "layer_prepare"]


class LayerProblem(PostLNProblem):
    """``trained_layer``'s formula with row ``i`` moved (``PostLNProblem``, with the biases of the
    queries, keys, values and ``bo``): ``Y = LN1(X + attention)`` and ``LN2(Y + GELU(Y W1 + b1) W2 +
    b2)`` on every row, the LayerNorms with their gamma, beta and eps."""

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


layer_prepare = fast_prepare(LayerProblem)
