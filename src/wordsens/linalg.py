"""Dense products shared by the numerics: a Gram matrix from its lower block triangle only."""

from __future__ import annotations

import torch

Tensor = torch.Tensor


def add_lower_gram_(out: Tensor, P: Tensor, blocks: int = 8) -> Tensor:
    """Add the lower block triangle of ``P P^T`` to ``out`` (N, N), in place, and return ``out``: the
    products of ``blocks`` row panels of ``P`` (N, c) with its rows up to their own (9/16 of the flops
    of one product at 8 panels, in 8 large products). ``mirror_lower`` then gives the whole matrix."""
    N = P.shape[0]
    edges = [N * b // blocks for b in range(blocks + 1)]
    for a in range(blocks):
        rows = slice(edges[a], edges[a + 1])
        out[rows, : edges[a + 1]].addmm_(P[rows], P[: edges[a + 1]].T)
    return out


def mirror_lower(K: Tensor) -> Tensor:
    """The symmetric matrix whose lower triangle is that of ``K``."""
    return K.tril() + K.tril(-1).T


def lower_gram(P: Tensor, blocks: int = 8) -> Tensor:
    """``P P^T`` (N, N) in the dtype of ``P``, from its lower block triangle (``add_lower_gram_``)."""
    N = P.shape[0]
    K = torch.zeros((N, N), dtype=P.dtype, device=P.device)
    return mirror_lower(add_lower_gram_(K, P, blocks))
