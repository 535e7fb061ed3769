"""Deep random features at any depth within a memory budget. The first layer is reduced to the block that
the moved token multiplies (as for RF); of layers 2..L (the tail) as many as the budget allows stay resident and
the others are streamed: their column blocks regenerated from their seeds on every pass (``maps.drf_block``).
Under reduced precision (``ReducedDRFProblem``) the map stays the float32 one; the products run on bfloat16
copies and propagate each layer's change, so rounding is relative to the change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from .. import maps
from ..compute.map_costs import drf_layout
from .engine import Problem, SearchContext, chunked_rows64
from .first_layer import FirstLayer, blockwise_u, exact_u, explicit_block

Tensor = torch.Tensor


# Working dtypes whose products run in reduced precision on float32 weights (``ReducedDRFProblem``).
REDUCED_DTYPES = (torch.bfloat16,)


def weight_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the map's weights for a search in ``dtype``: float32 under reduced precision."""
    return torch.float32 if dtype in REDUCED_DTYPES else dtype


class DRFTail:
    """Layers 2..L of a DRF: resident ``(D, D)`` tensors, then streamed layers (their 1-based numbers),
    regenerated block by block from ``seed`` on every pass. ``dtype``: the weights' (the map's numbers);
    ``compute``: the products' (bfloat16 under reduced precision, resident layers held in it);
    ``exact_layers``: the map's own layers for the float64 evaluation (default ``layers``)."""

    def __init__(
        self,
        layers: Sequence[Tensor | int],
        *,
        seed: int,
        n: int,
        d: int,
        dtype: torch.dtype,
        device: torch.device,
        draw_on: str = "device",
        compute: torch.dtype | None = None,
        exact_layers: Sequence[Tensor | int] | None = None,
    ) -> None:
        self.layers = list(layers)
        self.seed, self.n, self.d, self.dtype, self.device, self.draw_on = seed, n, d, dtype, device, draw_on
        self.compute = dtype if compute is None else compute
        self.exact_layers = self.layers if exact_layers is None else list(exact_layers)

    @property
    def streamed(self) -> int:
        """Number of streamed layers."""
        return sum(isinstance(layer, int) for layer in self.layers)

    def _blocks(self, layer: int, dtype: torch.dtype | None = None) -> Iterator[tuple[slice, Tensor]]:
        """``(columns, block)`` for every column block ``(D, d)`` of streamed layer ``layer``."""
        d = self.d
        for j in range(self.n):
            block = maps.drf_block(
                self.seed, layer, j, self.n, d, dtype=self.dtype, device=self.device, draw_on=self.draw_on
            )
            yield slice(j * d, (j + 1) * d), block if dtype is None else block.to(dtype)

    def _linear(self, layer: Tensor | int, h: Tensor) -> Tensor:
        """``h V^T`` for a batch ``h`` (R, D), in ``h``'s dtype (products in ``compute``)."""
        if self.compute != h.dtype:
            return self._reduced(layer, h, transpose=True)
        if isinstance(layer, Tensor):
            return h @ layer.T
        out = torch.zeros((h.shape[0], self.n * self.d), dtype=h.dtype, device=h.device)
        for cols, block in self._blocks(layer):
            out.addmm_(h[:, cols], block.T)
        return out

    def _linear_t(self, layer: Tensor | int, g: Tensor) -> Tensor:
        """``g V`` for a batch ``g`` (R, D): the backward pass of ``_linear``."""
        if self.compute != g.dtype:
            return self._reduced(layer, g, transpose=False)
        if isinstance(layer, Tensor):
            return g @ layer
        out = torch.empty_like(g)
        for cols, block in self._blocks(layer):
            out[:, cols] = g @ block
        return out

    def _reduced(self, layer: Tensor | int, x: Tensor, *, transpose: bool) -> Tensor:
        """``x V^T`` (``transpose``) or ``x V`` with ``x`` and ``V`` in ``compute``, returned in ``x``'s dtype."""
        xc = x.to(self.compute)
        if isinstance(layer, Tensor):
            return (xc @ (layer.T if transpose else layer)).to(x.dtype)
        parts = []
        out = torch.zeros_like(x) if transpose else None
        for cols, block in self._blocks(layer, self.compute):
            if out is not None:
                out = out + (xc[:, cols] @ block.T).to(x.dtype)
            else:
                parts.append((xc @ block).to(x.dtype))
        return out if out is not None else torch.cat(parts, dim=1)

    def forward(self, h: Tensor, *, keep: bool = False) -> tuple[Tensor, list[Tensor]]:
        """``h_L`` from ``h_1`` (R, D), and with ``keep`` the active masks of every layer (for ``backward``)."""
        masks = []
        for layer in self.layers:
            pre = self._linear(layer, h)
            if keep:
                masks.append(pre > 0)
            h = torch.relu(pre)
        return h, masks

    def backward(self, g: Tensor, masks: list[Tensor]) -> Tensor:
        """The gradient with respect to ``h_1`` of ``<g, h_L>``, from the masks of ``forward``."""
        for layer, mask in zip(reversed(self.layers), reversed(masks), strict=True):
            g = self._linear_t(layer, g * mask)
        return g

    def forward_change(
        self, delta: Tensor, pre0: Sequence[Tensor], *, keep: bool = False
    ) -> tuple[Tensor, list[Tensor]]:
        """``h_L - h_L(0)`` from ``delta = h_1 - h_1(0)`` (R, D), each layer's ``V_l delta`` added to its
        unperturbed pre-activation ``pre0[l]``; with ``keep`` the active masks of every layer."""
        masks = []
        for layer, p0 in zip(self.layers, pre0, strict=True):
            pre = p0 + self._linear(layer, delta)
            if keep:
                masks.append(pre > 0)
            delta = torch.relu(pre) - torch.relu(p0)
        return delta, masks

    def forward64(self, h: Tensor, pres: list[Tensor] | None = None) -> Tensor:
        """``h_L`` from float64 ``h_1`` (R, D) with the map's own weights (``exact_layers``), in float64;
        ``pres`` (a list) receives every layer's pre-activation."""
        for layer in self.exact_layers:
            out = torch.zeros((h.shape[0], self.n * self.d), dtype=torch.float64, device=h.device)
            if isinstance(layer, Tensor):

                def fill(rows: slice, chunk: Tensor, h: Tensor = h, out: Tensor = out) -> None:
                    out[:, rows] = h @ chunk.T

                chunked_rows64(layer, fill)
            else:
                for cols, block in self._blocks(layer, torch.float64):
                    out.addmm_(h[:, cols], block.T)
            if pres is not None:
                pres.append(out)
            h = torch.relu(out)
        return h


class DRFProblem(Problem):
    """DRF with one token moved: ``relu(u + B1 Delta)`` through the tail, gradient written out."""

    def __init__(self, B1: Tensor, u1_64: Tensor, tail: DRFTail) -> None:
        self.d = B1.shape[1]
        self.radius = math.sqrt(self.d)
        self.layer = FirstLayer(B1, u1_64, with_gram=False)
        self.tail = tail
        with torch.no_grad():
            self._bases(u1_64)
        self.phi_norm = float(torch.linalg.vector_norm(self.base64))

    def _bases(self, u1_64: Tensor) -> None:
        """``phi(X)`` in the working dtype (``base``) and in float64 (``base64``)."""
        self.base = self.tail.forward(torch.relu(self.layer.u)[None])[0][0]
        self.base64 = self.tail.forward64(torch.relu(u1_64)[None])[0]

    def value(self, D: Tensor) -> Tensor:
        diff = self.tail.forward(self.layer.forward(D))[0] - self.base
        return (diff * diff).sum(-1)

    @torch.no_grad()
    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """One forward and one backward pass over the tail for the whole batch (each streamed block generated
        once per pass)."""
        pre = self.layer.u + D @ self.layer.B.T
        h, masks = self.tail.forward(torch.relu(pre), keep=True)
        diff = h - self.base
        g = self.tail.backward(2 * diff, masks) * (pre > 0)
        return (diff * diff).sum(-1), g @ self.layer.B

    def exact(self, deltas: Tensor) -> Tensor:
        return torch.linalg.vector_norm(self.tail.forward64(self.layer.forward64(deltas)) - self.base64, dim=-1)

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, self.radius, gen)

    @property
    def streamed_layers(self) -> int:  # type: ignore[override]
        return self.tail.streamed


class ReducedDRFProblem(DRFProblem):
    """``DRFProblem`` with its products in the tail's ``compute`` dtype (bfloat16) on the float32 map: the
    change propagated from the unperturbed pre-activations ``pre0`` (``DRFTail.forward_change``), the moves
    and activations in float32, ``exact`` as ``DRFProblem``'s."""

    def _bases(self, u1_64: Tensor) -> None:
        pres: list[Tensor] = []
        self.base64 = self.tail.forward64(torch.relu(u1_64)[None], pres)[0]
        work = self.layer.u.dtype
        self.pre0 = [pre[0].to(work) for pre in pres]
        self.B = self.layer.B.to(self.tail.compute)

    def _first(self, D: Tensor) -> Tensor:
        """First-layer pre-activations ``u + B Delta`` (R, D) for moves ``D`` in the working dtype."""
        D = D.to(self.layer.u.dtype)
        return self.layer.u + (D.to(self.B.dtype) @ self.B.T).to(D.dtype)

    def value(self, D: Tensor) -> Tensor:
        delta, _ = self.tail.forward_change(torch.relu(self._first(D)) - torch.relu(self.layer.u), self.pre0)
        return (delta * delta).sum(-1)

    @torch.no_grad()
    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        pre = self._first(D)
        delta, masks = self.tail.forward_change(torch.relu(pre) - torch.relu(self.layer.u), self.pre0, keep=True)
        g = (self.tail.backward(2 * delta, masks) * (pre > 0)).to(self.B.dtype)
        return (delta * delta).sum(-1), (g @ self.B).to(pre.dtype)

    def search(
        self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int, momentum: float
    ) -> tuple[Tensor, int]:
        """``Problem.search`` with the moves in the weights' dtype (float32), not the products'."""
        return super().search(
            starts.to(self.layer.u.dtype), max_steps=max_steps, tol=tol, patience=patience, keep=keep, momentum=momentum
        )


def drf_tail(seed: int, n: int, d: int, L: int, ctx: SearchContext, weights: Sequence[Tensor] | None = None) -> DRFTail:
    """Layers 2..L: the explicit ``weights[1:]``, or drawn from ``seed`` with as many resident as ``drf_layout``
    fits into ``ctx.budget``; under reduced precision the resident layers are copies in ``ctx.dtype``."""
    dtype, device, draw_on = ctx.dtype, ctx.device, ctx.draw_on
    wdtype = weight_dtype(dtype)
    common: dict[str, Any] = dict(seed=seed, n=n, d=d, dtype=wdtype, device=device, draw_on=draw_on, compute=dtype)
    if weights is not None:
        given: list[Tensor | int] = [V.to(device=device, dtype=wdtype) for V in weights[1:]]
        copies: list[Tensor | int] = [V.to(dtype) for V in given if isinstance(V, Tensor)]
        return DRFTail(given if dtype == wdtype else copies, exact_layers=given, **common)
    layout = drf_layout(n, d, L, budget=ctx.budget, restarts=ctx.restarts, dtype=dtype, sampler=ctx.sampler)
    resident = range(2, 2 + layout.resident)
    layers: list[Tensor | int] = [
        maps.drf_layer(seed, layer, n, d, dtype=dtype, device=device, draw_on=draw_on) for layer in resident
    ]
    layers += list(range(2 + layout.resident, L + 1))
    # under reduced precision the resident copies are rounded: the map's layers are regenerated from seed
    regenerated: list[Tensor | int] | None = None if dtype == wdtype else list(range(2, L + 1))
    return DRFTail(layers, exact_layers=regenerated, **common)


def drf_problem(
    X64: Tensor,
    position: int,
    seed: int,
    weights: Sequence[Tensor] | None,
    ctx: SearchContext,
    tail: DRFTail,
    u_all: Tensor | None = None,
) -> DRFProblem:
    """The DRF problem at ``position``: the first layer's block (explicit ``weights``, the exact sampler, or
    the blockwise ``u_all``) before ``tail``; a ``ReducedDRFProblem`` under reduced precision."""
    n, d = X64.shape
    wdtype = weight_dtype(ctx.dtype)
    make = DRFProblem if wdtype == ctx.dtype else ReducedDRFProblem
    if weights is not None:
        return make(*explicit_block(weights[0], X64, position, wdtype, ctx.device), tail)
    B = maps.drf_block(seed, 1, position, n, d, dtype=wdtype, device=ctx.device, draw_on=ctx.draw_on)
    if ctx.sampler == "exact":
        u = exact_u(B, X64, position, seed, "drf-rest", 2)
    elif u_all is not None:
        u = u_all
    else:
        raise ValueError(f"sampler {ctx.sampler!r} needs the blockwise first-layer pre-activation u_all")
    return make(B, u, tail)


def drf_prepare(
    X64: Tensor, seed: int, weights: Sequence[Tensor] | None, ctx: SearchContext
) -> Callable[[int], DRFProblem]:
    """The registry's fast path for DRF: the tail and the blockwise ``u`` built once, per position
    ``drf_problem``."""
    n, d = X64.shape
    L = len(weights) if weights is not None else int(ctx.options.get("L", 2))

    def first_block(j: int) -> Tensor:  # token j's block of the first layer
        return maps.drf_block(seed, 1, j, n, d, dtype=weight_dtype(ctx.dtype), device=ctx.device, draw_on=ctx.draw_on)

    u_all = blockwise_u(first_block, X64, n * d, ctx.device) if ctx.sampler == "blockwise" and weights is None else None
    tail = drf_tail(seed, n, d, L, ctx, weights)
    return lambda position: drf_problem(X64, position, seed, weights, ctx, tail, u_all)
