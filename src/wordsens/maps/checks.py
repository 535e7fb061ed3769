"""The checks of samples and weights every map shares (torch), below the forwards and ``api`` so that
resolving a registry binding closes no import cycle.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import torch

Tensor = torch.Tensor


def check_sample(X: Tensor, name: str = "X") -> tuple[int, int]:
    """``(n, d)`` of a sample ``(..., n, d)``; ``ValueError`` naming the problem for a non-tensor, a wrong
    rank, an empty dimension, an integer dtype or NaN/Inf entries."""
    if not isinstance(X, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of shape (n, d), got {type(X).__name__}")
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (n, d) (n tokens, d coordinates), got {tuple(X.shape)}")
    n, d = int(X.shape[-2]), int(X.shape[-1])
    if n <= 0 or d <= 0:
        raise ValueError(f"{name} needs n >= 1 tokens and d >= 1 coordinates, got shape {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {X.dtype}")
    if not all_finite(X):
        raise ValueError(f"{name} contains NaN or Inf entries; clean or re-normalise the input")
    return n, d


def all_finite(T: Tensor) -> bool:
    """Whether every entry of ``T`` is finite: from its smallest and largest entries (one reduction; NaN
    propagates through both), without the boolean copy of ``torch.isfinite(T)`` (a tenth of its time
    on a large training set)."""
    if T.numel() == 0 or not T.is_floating_point():
        return T.numel() == 0 or bool(torch.isfinite(T).all())
    return bool(torch.isfinite(torch.stack(torch.aminmax(T))).all())


def check_matrix(M: Tensor, shape: tuple[int, ...], name: str, hint: str) -> None:
    """Raise ``ValueError`` unless ``M`` is a finite 2-D tensor of ``shape`` (``hint`` says what it is)."""
    if not isinstance(M, Tensor) or M.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor of shape {shape} ({hint})")
    if tuple(M.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(M.shape)}, expected {shape} ({hint})")
    if not all_finite(M):
        raise ValueError(f"{name} contains NaN or Inf entries")


def is_number(value: Any) -> bool:
    """Whether ``value`` is a Python (or NumPy) real number, not a bool: a scalar weight (shape ``()``,
    e.g. a LayerNorm's ``eps``) may be one instead of a 0-d tensor."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_keys(map_name: str, weights: Any, keys: Iterable[str], hint: str = "") -> None:
    """Raise ``ValueError`` unless ``weights`` is a dict of exactly the weights ``keys`` (``hint``: how to
    get them, appended to the message)."""
    if not isinstance(weights, Mapping) or set(weights) != set(keys):
        got = sorted(weights) if isinstance(weights, Mapping) else type(weights).__name__
        raise ValueError(f"{map_name} weights must be a dict with the tensors {sorted(keys)}, got {got}{hint}")


def check_weight(map_name: str, key: str, W: Any, shape: tuple[int, ...], detail: str = "") -> None:
    """Raise ``ValueError`` unless weight ``key`` of map ``map_name`` is a tensor of ``shape`` without
    NaN or Inf; a scalar weight (``shape == ()``) may also be a finite Python number (``is_number``).
    ``detail`` (e.g. ``"n = 8, d = 16"``) follows a wrong shape in parentheses."""
    shape = tuple(shape)
    if shape == () and is_number(W):
        if not math.isfinite(W):
            raise ValueError(f"{map_name} weight {key!r} is {W!r}; give a finite number")
        return
    if not isinstance(W, Tensor) or tuple(W.shape) != shape:
        got = tuple(W.shape) if isinstance(W, Tensor) else type(W).__name__
        expected = "() (a number or a 0-d tensor)" if shape == () else str(shape)
        context = f" ({detail})" if detail else ""
        raise ValueError(f"{map_name} weight {key!r} has shape {got}, expected {expected}{context}")
    if not all_finite(W):
        raise ValueError(f"{map_name} weight {key!r} contains NaN or Inf entries")


def scalars_as_tensors(weights: Any, like: Tensor) -> Any:
    """``weights`` with every scalar given as a Python number (``is_number``) made a 0-d tensor of
    ``like``'s dtype and device, so that a map's forward always sees tensors; other formats as given."""
    if not isinstance(weights, Mapping) or not any(is_number(W) for W in weights.values()):
        return weights
    return {
        key: torch.tensor(W, dtype=like.dtype, device=like.device) if is_number(W) else W for key, W in weights.items()
    }
