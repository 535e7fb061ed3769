"""The plain-map reference of a fast search problem, shared by the map and search tests: the problem a
map's ``fast`` search builds at one position, and ||phi(X^i(D_r)) - phi(X)||^2 computed with the plain
map (autograd-able), which its value and gradient are checked against."""

from __future__ import annotations

from typing import Any

import torch

from wordsens import maps
from wordsens.maps import registry
from wordsens.search import SearchContext


def fast_problem(name: str, X: torch.Tensor, W: Any, options: dict, dtype: torch.dtype = torch.float64):
    """``prepare(position)`` of map ``name``'s fast search on ``X`` with weights ``W`` (on the CPU)."""
    spec = registry.get(name)
    ctx = SearchContext(spec=spec, dtype=dtype, device=torch.device("cpu"), options=spec.option_values(options))
    return registry.resolve(spec.fast)(X, 0, W, ctx)


def full_value(name: str, X: torch.Tensor, W: Any, position: int, D: torch.Tensor) -> torch.Tensor:
    """||phi(X^i(D_r)) - phi(X)||^2 for each row of D, with the plain map (autograd-able)."""
    onehot = torch.zeros((X.shape[0], 1), dtype=X.dtype)
    onehot[position] = 1.0
    moved = X + onehot * D[:, None, :]
    diff = (maps.apply(name, moved, W) - maps.apply(name, X, W)).flatten(1)
    return (diff * diff).sum(-1)
