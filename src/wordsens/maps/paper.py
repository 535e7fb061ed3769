"""The forwards (no input checks: ``wordsens.maps.api`` validates) and weight checks of the paper's four
maps, named by their registry entries (formulas and weight laws: ``wordsens.maps.catalog``; samplers:
``wordsens.maps.sampling``). ``X`` is ``(..., n, d)``, ``D = n * d``, ``flat(X)`` its row-major flattening.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .attention import RELU, SOFTMAX
from .checks import check_matrix

Tensor = torch.Tensor


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
