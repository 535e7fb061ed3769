"""The four random feature maps of Bombari & Mondelli (2024): forward formulas (no input checks;
``wordsens.maps.api`` validates) and weight checks, named by the registry's entries.

Shapes: a sample ``X`` is ``(n, d)`` (``n`` token embeddings of dimension ``d``), optionally with
leading batch dimensions ``(..., n, d)``; ``D = n * d``; ``flat(X)`` is the row-major flattening.

=========  ================================================  ==================================
map        formula                                           weights
=========  ================================================  ==================================
RF         ``relu(V flat(X))``, in R^k                         ``V`` (k, D), i.i.d. N(0, 1/D)
DRF        ``h_l = relu(V_l h_{l-1})``, ``h_0 = flat(X)``      ``V_l`` (D, D), i.i.d. N(0, 2/D)
RAF        ``softmax(X W X^T / sqrt(d)) X``, (n, d)            ``W`` (d, d), i.i.d. N(0, 1/d)
ReLU-RAF   ``A X``, ``A`` = row-normalised ``relu(X W X^T / sqrt(d))``  same as RAF
=========  ================================================  ==================================

The samplers are in ``wordsens.maps.sampling``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .attention import RELU, SOFTMAX
from .checks import check_matrix

Tensor = torch.Tensor

__all__ = [
    "check_attention",
    "check_drf",
    "check_rf",
    "drf_forward",
    "drf_options",
    "raf_forward",
    "relu_raf_forward",
    "rf_forward",
    "rf_options",
]


def rf_forward(X: Tensor, V: Tensor) -> Tensor:
    """``rf`` without input checks."""
    return torch.relu(X.reshape(*X.shape[:-2], -1) @ V.T)


def drf_forward(X: Tensor, Vs: Sequence[Tensor]) -> Tensor:
    """``drf`` without input checks."""
    h = X.reshape(*X.shape[:-2], -1)
    for V in Vs:
        h = torch.relu(h @ V.T)
    return h


def raf_forward(X: Tensor, W: Tensor) -> Tensor:
    """``raf`` without input checks: softmax attention (``wordsens.maps.attention.SOFTMAX``)."""
    return SOFTMAX.attend(X, W)


def relu_raf_forward(X: Tensor, W: Tensor) -> Tensor:
    """``relu_raf`` without input checks: ReLU attention, each row divided by its sum (``RELU``)."""
    return RELU.attend(X, W)


def check_rf(V: Any, n: int, d: int) -> None:
    """RF weights: one (k, n*d) matrix."""
    D = n * d
    if not isinstance(V, Tensor) or V.ndim != 2 or V.shape[1] != D:
        shape = tuple(V.shape) if isinstance(V, Tensor) else type(V).__name__
        raise ValueError(
            f"RF weights V must have shape (k, n*d) = (k, {D}) for X of shape (n, d) = ({n}, {d}), got {shape}"
        )
    check_matrix(V, tuple(V.shape), "V", "RF weights")


def check_drf(Vs: Any, n: int, d: int) -> None:
    """DRF weights: a non-empty list of (D, D) matrices, one per layer."""
    if isinstance(Vs, Tensor) or not isinstance(Vs, Sequence) or len(Vs) == 0:
        raise ValueError("Vs must be a non-empty sequence of (D, D) matrices, one per layer")
    D = n * d
    for layer, V in enumerate(Vs, start=1):
        check_matrix(V, (D, D), f"Vs[{layer - 1}]", f"layer {layer} of a DRF on D = n*d = {D}")


def check_attention(W: Any, n: int, d: int) -> None:
    """RAF and ReLU-RAF weights: one (d, d) matrix."""
    check_matrix(W, (d, d), "W", f"the attention matrix for d = {d}")


def rf_options(V: Tensor) -> dict[str, Any]:
    """The options explicit RF weights imply: the width ``k`` (the rows of ``V``)."""
    return {"k": int(V.shape[0])}


def drf_options(Vs: Sequence[Tensor]) -> dict[str, Any]:
    """The options explicit DRF weights imply: the depth ``L`` (the number of layers)."""
    return {"L": len(Vs)}
