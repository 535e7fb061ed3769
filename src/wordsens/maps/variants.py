"""Attention variants beyond the paper (sigmoid, linear and multi-head attention, a transformer
block): their forward formulas, weight samplers and shapes.

Rows of ``X`` (..., n, d) have norm ``sqrt(d)``; every weight is i.i.d. Gaussian and every map holds
its weights in a dict of named tensors:

===========  ===============================================================  ==========================
map          formula                                                          weights
===========  ===============================================================  ==========================
sigmoid_raf  ``sigmoid(X W X^T / sqrt(d) - log n) X`` (no row normalisation)    W (d, d) N(0, 1/d)
linear_raf   ``A X``, ``A_jk = q_j.k_k / sum_k q_j.k_k``, ``q_j = f(x_j Wq)``,    Wq, Wk (d, d) N(0, 1/d)
             ``k_k = f(x_k Wk)``, ``f = elu + 1``
mh_raf       ``concat_h softmax(X Wq_h (X Wk_h)^T / sqrt(d/h)) X Wv_h`` ``Wo``  Wq, Wk, Wv (h, d, d/h),
                                                                              Wo (d, d), all N(0, 1/d)
block        ``Y = LN(X + mh_raf(X))``, ``LN(Y + relu(Y W1) W2)``, LN without   mh_raf's, W1 (d, 4d)
             affine parameters (eps 1e-5, over the last dimension)            N(0, 2/d), W2 (4d, d)
                                                                              N(0, 1/(4d))
===========  ===============================================================  ==========================

``mh_raf`` and ``block`` take the option ``heads`` (default 12; ``d`` must be a multiple of it). The
samplers draw every tensor from its own seed derived from the run's seed, the map and the tensor's
name, in float32 on a CPU generator, then cast (like ``wordsens.maps.sampling``): the same seed gives
the same weights in every dtype, and ``block`` has the very attention weights of ``mh_raf`` of the same
seed (``mh_raf`` tensors are named after ``mh_raf`` in both). The fast searches live in
``wordsens.search.variants`` and ``wordsens.search.heads``; the registry entries in
``wordsens.maps.catalog``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from ..seeds import derive_seed
from . import registry
from .checks import check_weight
from .sampling import base_seed, draw_gaussian

Tensor = torch.Tensor

__all__ = [
    "DEFAULT_HEADS",
    "LN_EPS",
    "block_check",
    "block_forward",
    "block_sample",
    "elu1",
    "layer_norm",
    "linear_raf_forward",
    "linear_raf_sample",
    "mh_raf_check",
    "mh_raf_forward",
    "mh_raf_sample",
    "sigmoid_raf_forward",
    "sigmoid_raf_sample",
]

DEFAULT_HEADS = 12
LN_EPS = 1e-5
_MH_KEYS = ("Wq", "Wk", "Wv", "Wo")


# --------------------------------------------------------------------------- weight checks


def _check_heads_weights(map_name: str, weights: Any, n: int, d: int) -> None:
    """The registry's check of a multi-head map: the number of heads is read from ``Wq`` (weights of
    any valid ``heads`` pass, also through ``maps.<name>(X, weights)``, which knows no options), then
    every tensor must have the shape the registry's ``shapes`` gives for it."""
    keys = sorted(_shapes(map_name, n, d, 1))  # the names do not depend on the heads
    if not isinstance(weights, Mapping) or sorted(weights) != keys:
        got = sorted(weights) if isinstance(weights, Mapping) else type(weights).__name__
        raise ValueError(f"{map_name} weights must be a dict with the tensors {keys}, got {got}")
    Wq = weights["Wq"]
    if not isinstance(Wq, Tensor) or Wq.ndim != 3:
        got_shape = tuple(Wq.shape) if isinstance(Wq, Tensor) else type(Wq).__name__
        raise ValueError(f"{map_name} weight 'Wq' must have shape (heads, d, d/heads), got {got_shape}")
    heads = int(Wq.shape[0])
    shapes = _shapes(map_name, n, d, heads)
    for key, shape in shapes.items():
        check_weight(map_name, key, weights[key], shape, f"n = {n}, d = {d}, heads = {heads} read from Wq")


def mh_raf_check(weights: Any, n: int, d: int) -> None:
    """``mh_raf`` weights: Wq, Wk, Wv (heads, d, d/heads) and Wo (d, d), heads read from Wq."""
    _check_heads_weights("mh_raf", weights, n, d)


def block_check(weights: Any, n: int, d: int) -> None:
    """``block`` weights: those of ``mh_raf`` (heads read from Wq), W1 (d, 4d) and W2 (4d, d)."""
    _check_heads_weights("block", weights, n, d)


# --------------------------------------------------------------------------- forward formulas


def sigmoid_raf_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """``sigmoid(X W X^T / sqrt(d) - log n) X``: (..., n, d) -> (..., n, d); no input checks."""
    n, d = X.shape[-2], X.shape[-1]
    scores = (X @ weights["W"]) @ X.transpose(-1, -2) / math.sqrt(d)
    return torch.sigmoid(scores - math.log(n)) @ X


def elu1(z: Tensor) -> Tensor:
    """The positive feature map of linear attention, ``elu(z) + 1``."""
    return F.elu(z) + 1.0


def linear_raf_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """Linear attention ``A X`` with ``A_jk = q_j.k_k / sum_k q_j.k_k``: (..., n, d) -> (..., n, d).

    Computed as ``q_j^T (K^T X) / q_j^T (K^T 1)`` (``O(n d^2)``, no (n, n) matrix); no input checks.
    """
    Q = elu1(X @ weights["Wq"])
    K = elu1(X @ weights["Wk"])
    num = Q @ (K.transpose(-1, -2) @ X)
    den = Q @ K.sum(-2).unsqueeze(-1)
    return num / den


def mh_raf_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """Multi-head attention with value and output projections: (..., n, d) -> (..., n, d); no checks.

    Head ``h`` is ``softmax((X Wq_h)(X Wk_h)^T / sqrt(d_h)) X Wv_h`` with ``d_h = d / heads``; the
    heads are concatenated in order (head 0 first) and multiplied by ``Wo``. The queries, keys and
    values come from one product with the stacked matrices, the heads from torch's
    ``scaled_dot_product_attention`` (no mask, scale ``1 / sqrt(d_h)``: this very formula).

    The same formula serves a trained encoder's attention (``wordsens.maps.trained``): biases
    ``bq``, ``bk``, ``bv`` (heads, d_h) are added to the queries, keys and values and ``bo`` (d,)
    after ``Wo`` when the dict has them, and without ``Wo`` the heads are returned concatenated
    (no output projection).
    """
    Wq = weights["Wq"]
    heads, d, dh = Wq.shape
    stacked = torch.cat([Wq, weights["Wk"], weights["Wv"]]).permute(1, 0, 2).reshape(d, 3 * heads * dh)
    QKV = X @ stacked
    if "bq" in weights:
        QKV = QKV + torch.cat([weights["bq"], weights["bk"], weights["bv"]]).reshape(3 * heads * dh)
    QKV = QKV.unflatten(-1, (3 * heads, dh)).transpose(-3, -2)  # (..., 3 heads, n, dh)
    batch, n = QKV.shape[:-3], QKV.shape[-2]
    # as 4-D tensors (batch, heads, n, dh): torch's fused kernel, whose memory grows like n, not n^2
    Q, K, V = (T.reshape(-1, heads, n, dh) for T in QKV.split(heads, dim=-3))
    H = F.scaled_dot_product_attention(Q, K, V).reshape(*batch, heads, n, dh).transpose(-3, -2)  # (..., n, heads, dh)
    out = H.reshape(*H.shape[:-2], heads * dh)
    if "Wo" not in weights:
        return out
    out = out @ weights["Wo"]
    return out + weights["bo"] if "bo" in weights else out


def layer_norm(Z: Tensor) -> Tensor:
    """LayerNorm over the last dimension without affine parameters (biased variance, eps 1e-5)."""
    return F.layer_norm(Z, (Z.shape[-1],), eps=LN_EPS)


def block_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """A random post-LayerNorm transformer block: ``Y = LN(X + mh_raf(X))``, ``LN(Y + relu(Y W1) W2)``."""
    Y = layer_norm(X + mh_raf_forward(X, weights))
    return layer_norm(Y + torch.relu(Y @ weights["W1"]) @ weights["W2"])


# --------------------------------------------------------------------------- samplers


def _shapes(map_name: str, n: int, d: int, heads: int) -> Mapping[str, tuple[int, ...]]:
    """The registry's shapes of a multi-head map (they check ``heads``)."""
    shapes = registry.get(map_name).shapes
    assert shapes is not None
    return shapes(n, d, heads=heads)


def _tensor(
    base: int,
    map_name: str,
    key: str,
    shape: tuple[int, ...],
    var: float,
    dtype: torch.dtype,
    device: str | torch.device,
) -> Tensor:
    """One weight tensor, i.i.d. N(0, var), from its own seed (float32 CPU draws, then cast)."""
    return draw_gaussian(shape, math.sqrt(var), derive_seed(base, map_name, key), dtype, device)


def sigmoid_raf_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> dict[str, Tensor]:
    """``{"W"}``, i.i.d. N(0, 1/d) (small: always drawn on the CPU, ``draw_on`` is ignored)."""
    return {"W": _tensor(base_seed(seed), "sigmoid_raf", "W", (d, d), 1.0 / d, dtype, device)}


def linear_raf_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> dict[str, Tensor]:
    """``{"Wq", "Wk"}``, each (d, d) i.i.d. N(0, 1/d), drawn on the CPU."""
    base = base_seed(seed)
    return {key: _tensor(base, "linear_raf", key, (d, d), 1.0 / d, dtype, device) for key in ("Wq", "Wk")}


def mh_raf_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    heads: int = DEFAULT_HEADS,
) -> dict[str, Tensor]:
    """``{"Wq", "Wk", "Wv"}`` (heads, d, d/heads) and ``{"Wo"}`` (d, d), all i.i.d. N(0, 1/d), drawn on the CPU."""
    shapes = _shapes("mh_raf", n, d, heads)
    base = base_seed(seed)
    return {key: _tensor(base, "mh_raf", key, shapes[key], 1.0 / d, dtype, device) for key in _MH_KEYS}


def block_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    heads: int = DEFAULT_HEADS,
) -> dict[str, Tensor]:
    """``mh_raf``'s weights of the same seed, ``W1`` (d, 4d) N(0, 2/d) and ``W2`` (4d, d) N(0, 1/(4d))."""
    _shapes("block", n, d, heads)
    base = base_seed(seed)
    weights = mh_raf_sample(base, n, d, dtype=dtype, device=device, heads=heads)
    weights["W1"] = _tensor(base, "block", "W1", (d, 4 * d), 2.0 / d, dtype, device)
    weights["W2"] = _tensor(base, "block", "W2", (4 * d, d), 1.0 / (4 * d), dtype, device)
    return weights
