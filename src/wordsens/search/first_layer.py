"""The first ReLU layer of RF and DRF reduced to the block ``B`` (k x d) that the moved token multiplies
(``FirstLayer``), and its pre-activation ``u = V flat(X)``: from the rest's exact law (``exact_u``) or
accumulated from the dense matrix's blocks (``blockwise_u``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..linalg import add_lower_gram_, mirror_lower
from ..seeds import derive_seed, generator
from .engine import chunked_rows64, matvec64, sphere

Tensor = torch.Tensor


class FirstLayer:
    """A ReLU layer ``relu(u + B Delta)`` with ``B`` (rows, d) and the float64 pre-activation ``u``."""

    def __init__(self, B: Tensor, u64: Tensor, with_gram: bool) -> None:
        self.B = B
        self.u64 = u64
        self.u = u64.to(B.dtype)
        active = u64 > 0
        d = B.shape[1]
        dev = B.device
        self.gram_active = torch.zeros((d, d), dtype=torch.float64, device=dev)
        inactive = torch.zeros((d, d), dtype=torch.float64, device=dev) if with_gram else None

        def accumulate(rows: slice, chunk: Tensor) -> None:
            # every row enters one product only: the Gram matrix of B is the active part plus the rest
            on = active[rows]
            add_lower_gram_(self.gram_active, chunk[on].T)
            if inactive is not None:
                add_lower_gram_(inactive, chunk[~on].T)

        chunked_rows64(B, accumulate)
        self.gram_active = mirror_lower(self.gram_active)
        self.gram = self.gram_active + mirror_lower(inactive) if inactive is not None else None
        self._vecs: Tensor | None = None

    def forward(self, D: Tensor) -> Tensor:
        # autograd's backward of ``image`` is D's gradient G B, also a pass in B's own layout
        return torch.relu(self.u + image(self.B, D))

    def forward64(self, deltas: Tensor) -> Tensor:  # (R, d) -> (R, rows)
        out = torch.empty((deltas.shape[0], self.B.shape[0]), dtype=torch.float64, device=deltas.device)

        def fill(rows: slice, chunk: Tensor) -> None:
            out[:, rows] = torch.relu(self.u64[rows] + deltas @ chunk.T)

        chunked_rows64(self.B, fill)
        return out

    def _eigenvectors(self) -> Tensor:
        """The eigenvectors of ``gram_active`` (ascending eigenvalues), computed once."""
        if self._vecs is None:
            self._vecs = torch.linalg.eigh(self.gram_active)[1]
        return self._vecs

    def top_directions(self, m: int) -> Tensor:
        """The top ``m`` right singular vectors of the active block (rows, float64)."""
        return self._eigenvectors()[:, -m:].flip(-1).T.contiguous()

    def singular_starts(self, restarts: int, radius: float, gen: torch.Generator) -> Tensor:
        """The reference's jittered start, ``+-`` the top right singular vectors of the active block, sphere
        points."""
        vecs = self._eigenvectors()
        d = vecs.shape[0]
        m = min(restarts // 2, d)
        top = vecs[:, -m:].flip(-1).T * radius
        jitter = 0.1 * torch.randn((1, d), generator=gen, dtype=torch.float64).to(top.device)
        starts = torch.cat([jitter, torch.stack([top, -top], dim=1).reshape(2 * m, d)])[:restarts]
        if starts.shape[0] < restarts:
            extra = sphere(restarts - starts.shape[0], d, radius, gen).to(starts.device)
            starts = torch.cat([starts, extra])
        return starts


def rest_gaussian(seed: int, tag: str, position: int, k: int, std: float, device: torch.device) -> Tensor:
    """``k`` i.i.d. ``N(0, std^2)`` numbers (float64) of the exact sampler's ``V_rest flat(X_rest)``, drawn
    in float32 on the CPU (as every weight draw)."""
    gen = generator(derive_seed(seed, tag, position))
    draw = torch.randn(k, generator=gen, dtype=torch.float32).to(torch.float64)
    return (draw * std).to(device)


def exact_u(B: Tensor, X64: Tensor, position: int, seed: int, tag: str, gain: float) -> Tensor:
    """The first-layer pre-activation ``V flat(X) = B x_i + V_rest flat(X_rest)`` with the second term
    drawn from its exact law ``N(0, gain ||X_rest||^2 / D)`` per row, independently of ``B`` (the
    weights' variance is ``gain / D``: 1 for RF, 2 for DRF)."""
    n, d = X64.shape
    rest_norm2 = float((X64 * X64).sum() - (X64[position] * X64[position]).sum())
    std = math.sqrt(gain * rest_norm2 / (n * d))
    return matvec64(B, X64[position].to(B.device)) + rest_gaussian(seed, tag, position, B.shape[0], std, B.device)


def blockwise_u(block: Callable[[int], Tensor], X64: Tensor, rows: int, device: torch.device) -> Tensor:
    """First-layer pre-activation ``V flat(X)`` (``rows`` of it) accumulated one column block ``block(j)`` at a
    time: the numbers of ``sampler="dense"``, never the whole matrix."""
    u = torch.zeros(rows, dtype=torch.float64, device=device)
    for j in range(X64.shape[0]):
        B = block(j)
        u += matvec64(B, X64[j].to(device))
        del B
    return u


def explicit_block(
    V: Tensor, X64: Tensor, position: int, dtype: torch.dtype, device: torch.device
) -> tuple[Tensor, Tensor]:
    """From explicit first-layer weights ``V`` (rows, n*d): the block that token ``position`` multiplies,
    in ``dtype``, and the float64 pre-activation ``u = V flat(X)``, both on ``device``."""
    V = V.to(device)
    d = X64.shape[1]
    return V[:, position * d : (position + 1) * d].to(dtype), matvec64(V, X64.reshape(-1).to(device))


def image(B: Tensor, M: Tensor) -> Tensor:
    """``M B^T`` (rows of ``M`` through ``B``), as ``(B M^T)^T``: one pass over ``B`` in its own layout
    (twice as fast as ``M @ B.T`` on a CPU for a few rows)."""
    return (B @ M.T).T.contiguous()
