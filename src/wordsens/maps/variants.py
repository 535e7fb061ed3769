"""Attention variants beyond the paper (formulas and weight laws: ``wordsens.maps.catalog``; searches:
``wordsens.search.variants`` and ``.heads``): their forwards, weight checks and samplers. Weights are a dict
of named tensors, each drawn from its own seed (``_draw``): ``block`` has the very attention weights of
``mh_raf`` of the same seed. ``mh_raf`` and ``block`` take the option ``heads`` (default 12, dividing d).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from ..seeds import derive_seed
from . import registry
from .checks import check_keys, check_weight
from .sampling import base_seed, draw_gaussian

Tensor = torch.Tensor
Weights = dict[str, Tensor]
Device = str | torch.device


DEFAULT_HEADS = 12
LN_EPS = 1e-5
_MH_KEYS = ("Wq", "Wk", "Wv", "Wo")


# --------------------------------------------------------------------------- weight checks


def _check_heads_weights(map_name: str, weights: Any, n: int, d: int) -> None:
    """The registry's check of a multi-head map: the number of heads is read from ``Wq`` (weights of
    any valid ``heads`` pass, also through ``maps.<name>(X, weights)``, which knows no options), then
    every tensor must have the shape the registry's ``shapes`` gives for it."""
    check_keys(map_name, weights, _shapes(map_name, n, d, 1))  # the names do not depend on the heads
    Wq = weights["Wq"]
    if not isinstance(Wq, Tensor) or Wq.ndim != 3:
        got_shape = tuple(Wq.shape) if isinstance(Wq, Tensor) else type(Wq).__name__
        raise ValueError(f"{map_name} weight 'Wq' must have shape (heads, d, d/heads), got {got_shape}")
    heads = int(Wq.shape[0])
    shapes = _shapes(map_name, n, d, heads)
    for key, shape in shapes.items():
        check_weight(map_name, key, weights[key], shape, f"n = {n}, d = {d}, heads = {heads} read from Wq")


# the registry's checks: (weights, n, d)
mh_raf_check = functools.partial(_check_heads_weights, "mh_raf")
block_check = functools.partial(_check_heads_weights, "block")


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
    """Linear attention ``A X``, ``A_jk = q_j.k_k / sum_k q_j.k_k``, as ``q_j^T (K^T X) / q_j^T (K^T 1)``
    (``O(n d^2)``, no (n, n) matrix): (..., n, d) -> (..., n, d); no input checks."""
    Q = elu1(X @ weights["Wq"])
    K = elu1(X @ weights["Wk"])
    num = Q @ (K.transpose(-1, -2) @ X)
    den = Q @ K.sum(-2).unsqueeze(-1)
    return num / den


def mh_raf_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """Multi-head attention ``concat_h(softmax((X Wq_h)(X Wk_h)^T / sqrt(d_h)) X Wv_h) Wo``, ``d_h = d / heads``:
    (..., n, d) -> (..., n, d), no checks; the heads by torch's ``scaled_dot_product_attention`` (no mask,
    scale ``1 / sqrt(d_h)``). A trained layer's attention (``wordsens.maps.trained``) adds the biases ``bq``,
    ``bk``, ``bv`` (heads, d_h) and ``bo`` (d,) where the dict has them; without ``Wo`` the heads are
    returned concatenated."""
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


Laws = Mapping[str, tuple[str, tuple[int, ...], float]]  # weight name: (seed tag, shape, variance)


def _draw(seed: int | torch.Generator, laws: Laws, dtype: torch.dtype, device: str | torch.device) -> dict[str, Tensor]:
    """Every weight of ``laws`` i.i.d. N(0, variance), drawn from its own seed (derived from the run's
    seed, the tag and the name) in float32 on the CPU, then cast."""
    base = base_seed(seed)
    return {
        key: draw_gaussian(shape, math.sqrt(var), derive_seed(base, tag, key), dtype, device)
        for key, (tag, shape, var) in laws.items()
    }


@registry.sampler
def sigmoid_raf_sample(seed: int | torch.Generator, n: int, d: int, dtype: torch.dtype, device: Device) -> Weights:
    """``{"W"}``, i.i.d. N(0, 1/d)."""
    return _draw(seed, {"W": ("sigmoid_raf", (d, d), 1.0 / d)}, dtype, device)


@registry.sampler
def linear_raf_sample(seed: int | torch.Generator, n: int, d: int, dtype: torch.dtype, device: Device) -> Weights:
    """``{"Wq", "Wk"}``, each (d, d) i.i.d. N(0, 1/d)."""
    return _draw(seed, {key: ("linear_raf", (d, d), 1.0 / d) for key in ("Wq", "Wk")}, dtype, device)


@registry.sampler
def mh_raf_sample(
    seed: int | torch.Generator, n: int, d: int, dtype: torch.dtype, device: Device, heads: int = DEFAULT_HEADS
) -> Weights:
    """``{"Wq", "Wk", "Wv"}`` (heads, d, d/heads) and ``{"Wo"}`` (d, d), all i.i.d. N(0, 1/d)."""
    shapes = _shapes("mh_raf", n, d, heads)
    return _draw(seed, {key: ("mh_raf", shapes[key], 1.0 / d) for key in _MH_KEYS}, dtype, device)


@registry.sampler
def block_sample(
    seed: int | torch.Generator, n: int, d: int, dtype: torch.dtype, device: Device, heads: int = DEFAULT_HEADS
) -> Weights:
    """``mh_raf``'s weights of the same seed (their seeds tagged ``mh_raf``), ``W1`` (d, 4d) N(0, 2/d)
    and ``W2`` (4d, d) N(0, 1/(4d))."""
    shapes = _shapes("block", n, d, heads)
    laws = {key: ("mh_raf", shapes[key], 1.0 / d) for key in _MH_KEYS}
    return _draw(
        seed, {**laws, "W1": ("block", (d, 4 * d), 2.0 / d), "W2": ("block", (4 * d, d), 1.0 / (4 * d))}, dtype, device
    )
