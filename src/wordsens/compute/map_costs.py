"""The cost models of the built-in maps (``wordsens.compute.costs.CostModel``): ``FirstLayerCost``
(RF: only the moved token's block of weights), ``DeepCost`` (DRF: L layers, the tail streamed within a
budget by ``drf_layout``), ``AttentionCost`` (attention maps with a moved-row fast path),
``ScreenedCost`` (the transformer block's full-map search, which screens its starts). Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .costs import (
    CHUNK,
    GEMM_FLOPS,
    GPU_RANDN_PER_S,
    GPU_STREAM_BYTES,
    MB,
    RANDN_PER_S,
    STREAM_BYTES,
    CostModel,
    DenseCost,
    MapSpec,
    MemoryEstimate,
    Work,
    itemsize,
    on_device,
    simulation_bytes,
    solve_seconds,
)


def attention_features_flops(N: int, n: int, d: int) -> float:
    """The flops of RAF's and ReLU-RAF's features of ``N`` samples (n, d): ``X W``, the scores and
    ``A X`` of each, ``2 N n d (d + 2 n)``."""
    return 2.0 * N * n * d * (d + 2 * n)


# DRF's default search: 16 restarts side by side, run to convergence (docs/methods.md). They share every
# pass over a layer; on a CPU a step at R restarts takes DRF_STEP_BASE + DRF_STEP_PER_RESTART * R times one
# at 5 (where ws:drf's time scale was fitted); on a GPU the passes stay bound by the reads. The constants'
# sources here: docs/benchmarks.md, "Where the constants come from".
DRF_RESTARTS = 16
DRF_STEP_BASE = 0.85
DRF_STEP_PER_RESTART = 0.03


@dataclass(frozen=True)
class DRFLayout:
    """How a DRF estimate holds its tail (layers 2..L): ``resident`` layers stay in memory, ``streamed`` ones
    are regenerated block by block on every pass; ``bytes``: its peak array memory."""

    resident: int
    streamed: int
    bytes: int
    detail: str


def drf_layout(
    n: int,
    d: int,
    L: int,
    *,
    budget: int | None = None,
    restarts: int = DRF_RESTARTS,
    dtype: Any = "float32",
    sampler: str = "exact",
) -> DRFLayout:
    """The tail layout of a default-method DRF estimate: every tail layer resident when the arrays fit
    ``budget`` bytes (None: no limit), else as many as fit beside one streamed ``(D, d)`` block and the
    fixed part (the first layer's block or, ``sampler="dense"``, matrix; the restarts' activations; the
    exact evaluation's chunks); where none fits, ``bytes`` exceed the budget (``check_fits`` refuses). A
    ``dtype`` narrower than float32 holds the layers in it, its exact evaluation a float32 block's buffer."""
    D = n * d
    b = itemsize(dtype)
    w = max(b, 4)  # the weights of the map: float32 draws, whatever the products' dtype
    first = D * D * b if sampler == "dense" else D * d * b
    if b < w:
        first += D * d * w
    fixed = first + (6 * L + 8) * restarts * D * w + D * d * 4 + 3 * 4 * MB
    layer = D * D * b
    tail = L - 1
    stream_buffer = D * d * (w + 8)  # one block (drawn in float32) and its float64 copy in the exact evaluation
    if budget is None or fixed + tail * layer + (stream_buffer if b < w else 0) <= budget:
        resident = tail
    else:
        resident = int(max(0, min(tail, (budget - fixed - stream_buffer) // layer)))
    streamed = tail - resident
    total = fixed + resident * layer + (stream_buffer if streamed or b < w else 0)
    detail = (
        f"{resident} resident DRF layers {D} x {D}"
        + (f" in {dtype}".replace("torch.", "") if b < w else "")
        + (f", {streamed} streamed in {D} x {d} blocks" if streamed else "")
        + f", first-layer block {D} x {d}"
    )
    return DRFLayout(resident=resident, streamed=streamed, bytes=total, detail=detail)


@dataclass(frozen=True)
class AttentionCost(DenseCost):
    """Attention maps with a moved-row fast path: a search step costs ``O(d^2 + n d)`` per restart.
    ``time_scale`` multiplies the time model."""

    def ws_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        n, d, R = work.n, work.d, self.restarts(spec, work)
        arrays = 8 * (4 * n * n + 12 * n * d + 3 * d * d + 12 * R * (n + d)) * 2
        if work.method == "reference":
            arrays += 16 * (n * n * 8 + n * d * 8)  # autograd graph of the full map
        return MemoryEstimate(arrays, f"attention arrays for n = {n}, d = {d}")

    def search_seconds(self, spec: MapSpec, work: Work) -> float:
        n, d = work.n, work.d
        steps = work.steps or 300
        t = steps * (16 * (d * d + 3 * n * d) * 4 / GEMM_FLOPS + 5e-4) + 300 * (d * d + n * d) * 2 / GEMM_FLOPS
        return t * self.time_scale

    def reference_seconds(self, spec: MapSpec, work: Work, steps: int | None = None) -> float:
        n, d = work.n, work.d
        return (steps or 50 * n) * (6 * n * n * d * 2 / GEMM_FLOPS + 1e-3) * self.time_scale

    def gen_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        D = work.n * work.d
        return MemoryEstimate(simulation_bytes(work, D), f"features {work.N} x {D} and their QR")

    def gen_seconds(self, spec: MapSpec, work: Work) -> float:
        """One thread: the training set's features in float32 (at ``0.7 GEMM_FLOPS``), the first stage
        (``solve_seconds``) and the batched Delta searches, which share each step's loop (a fitted 2.5e-4 s
        per search and step)."""
        n, d, N = work.n, work.d, work.N
        features = attention_features_flops(N, n, d) / (0.7 * GEMM_FLOPS)
        per_search = 300 * (8 * (d * d + 96 * n * d) / GEMM_FLOPS + 2.5e-4)
        return features + solve_seconds(n * d, N) + work.searches * per_search


# RF's default search (wordsens.search.rf): the float64 Gram matrices of the (k, d) block, then about
# RF_STEPS subspace iterations (a typical count at the paper's sizes), each a fixed part and two passes over
# the block; one thread's seconds on this project's machine (docs/benchmarks.md, "The plan's time model").
RF_STEPS = 18
RF_STEP_SECONDS = 0.022
RF_STEP_SECONDS_PER_ENTRY = 2.7e-9
RF_GRAM_SECONDS = 7.6e-11


@dataclass(frozen=True)
class FirstLayerCost(CostModel):
    """RF: one ReLU layer of width ``k`` (option ``k``, default ``n d``); an estimate needs only the
    moved token's (k, d) block of weights."""

    samplers = ("exact", "blockwise", "dense")
    draws_on_device = True

    def features(self, spec: MapSpec, work: Work) -> int:
        return int(work.options.get("k") or work.n * work.d)

    def ws_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        d, D, k = work.d, work.n * work.d, self.features(spec, work)
        b, R = work.number_bytes, self.restarts(spec, work)
        if work.method == "reference" or work.sampler == "dense":
            weights, detail = k * D * b, f"RF matrix V {k} x {D}"
        else:
            weights, detail = k * d * b, f"RF block {k} x {d}"
        return MemoryEstimate(weights + 12 * R * k * max(b, 4) + CHUNK + k * d * 4, detail)

    def ws_seconds(self, spec: MapSpec, work: Work) -> float:
        d, D, k = work.d, work.n * work.d, self.features(spec, work)
        if work.method == "reference":
            t = k * D / RANDN_PER_S + (work.steps or 300) * 2 * k * D * 8 / STREAM_BYTES
        else:
            # the draw, the float64 Gram matrix of the block (the certificate) and the subspace ascent
            block = k * D if work.sampler in ("dense", "blockwise") else k * d
            step = RF_STEP_SECONDS + k * d * RF_STEP_SECONDS_PER_ENTRY
            t = block / RANDN_PER_S + k * d * d * RF_GRAM_SECONDS + (work.steps or RF_STEPS) * step
        return on_device(t, work.device)

    def gen_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        d, N, D, k = work.d, work.N, work.n * work.d, self.features(spec, work)
        m = N + 1 + d
        # features and their Householder QR copy at once (the QR path of the first stage)
        arrays = (
            3 * (N + 1) * D * 8
            + 3 * m * m * 8
            + 3 * N * k * 8
            + k * d * 4
            + 3 * k * 8
            + 3 * 8 * MB
            + 16 * work.gen_restarts * k * 4
        )
        return MemoryEstimate(arrays, f"samples {N + 1} x {D}, features {N} x {k} and their QR")

    def gen_seconds(self, spec: MapSpec, work: Work) -> float:
        """One thread (float64 products at ``0.44 GEMM_FLOPS``, float32 at ``0.75``): the span sampler
        (``wordsens.generalisation.functionals.span_rf``), the first stage (``solve_seconds``) and the
        batched searches; the rates, the factor 1.3 and the 200 passes over ``B`` from timed simulations."""
        d, N, D, k = work.d, work.N, work.n * work.d, self.features(spec, work)
        m = N + 1 + d
        f64, f32 = 0.44 * GEMM_FLOPS, 0.75 * GEMM_FLOPS
        span = (
            2 * (9 / 16) * N * N * D / f64
            + k * m / RANDN_PER_S
            + 2 * k * m * N / f32  # float64 below 1e10 flops, where that takes under a second anyway
            + 2 * k * m * 9 / f64  # u and the rounding check's 8 rows
        )
        per_search = 200 * 2 * k * d * 4 / STREAM_BYTES  # the (k, d) block B, streamed twice per step
        return 1.3 * (span + solve_seconds(k, N)) + work.searches * per_search


@dataclass(frozen=True)
class DeepCost(CostModel):
    """DRF of depth ``L`` (option ``L``): ``L`` (D, D) layers, the tail held or streamed (``drf_layout``)."""

    samplers = ("exact", "blockwise", "dense")
    draws_on_device = True
    prefers_gpu = True
    streams_layers = True
    own_restarts = True

    def forward_flops(self, spec: MapSpec, work: Work) -> float:
        """``L`` dense layers on the flattened sample: ``2 L (n d)^2``."""
        return 2.0 * int(work.options["L"]) * (work.n * work.d) ** 2

    def _layout(self, spec: MapSpec, work: Work, dtype: Any) -> DRFLayout:
        L, restarts, sampler = int(work.options["L"]), self.restarts(spec, work), work.sampler or "exact"
        return drf_layout(work.n, work.d, L, budget=work.budget, restarts=restarts, dtype=dtype, sampler=sampler)

    def ws_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        D, L = work.n * work.d, int(work.options["L"])
        if work.method == "reference":
            arrays = (6 * L + 8) * D * 8 + D * work.d * 4 + CHUNK
            return MemoryEstimate(L * D * D * 8 + arrays, f"{L} DRF matrices {D} x {D}")
        layout = self._layout(spec, work, work.dtype)
        return MemoryEstimate(layout.bytes, layout.detail)

    def ws_seconds(self, spec: MapSpec, work: Work) -> float:
        D, L = work.n * work.d, int(work.options["L"])
        cuda = work.device == "cuda"
        randn, stream = (GPU_RANDN_PER_S, GPU_STREAM_BYTES) if cuda else (RANDN_PER_S, STREAM_BYTES)
        reference = work.method == "reference"
        b = 8 if reference else 4
        steps = work.steps or (300 if reference else 150)
        if reference:
            resident, streamed, width = L, 0, 1.0
        else:
            layout = self._layout(spec, work, "float32")
            resident, streamed = layout.resident + (work.sampler == "dense"), layout.streamed
            width = 1.0 if cuda else DRF_STEP_BASE + DRF_STEP_PER_RESTART * self.restarts(spec, work)
        # resident layers are drawn once and read twice per step, streamed ones drawn and read twice per step
        return (
            resident * D * D / randn
            + steps * 2 * (resident + streamed) * D * D * b / stream * width
            + steps * 2 * streamed * D * D / randn
        )


# The transformer block's search ascends every start this many steps, then only the best ``keep``
BLOCK_SCREEN_STEPS = 20


@dataclass(frozen=True)
class ScreenedCost(DenseCost):
    """A full-map search that screens its starts (``block``, the post-LayerNorm layers): all ``restarts``
    for ``BLOCK_SCREEN_STEPS`` steps, then ``keep`` of them, each step one of the full map; its memory counts
    every restart of the screening, held at once (``own_restarts``)."""

    own_restarts = True

    def screen_flops(self, spec: MapSpec, work: Work) -> float | None:
        """The post-LayerNorm layers' screen per word: the moved token's rows (``12 d^2``), and every row's
        attention change and LayerNorms (``n d (2 h + 8)``, ``h`` heads: the option, else 12)."""
        n, d = work.n, work.d
        heads = int(work.options.get("heads") or 12)
        return 2.0 * (12 * d * d + n * d * (2 * heads + 8))

    def search_seconds(self, spec: MapSpec, work: Work) -> float:
        steps = work.steps or 300
        first = min(steps, BLOCK_SCREEN_STEPS)
        restart_steps = first * spec.settings.restarts + (steps - first) * spec.settings.keep
        return self.reference_seconds(spec, work, restart_steps)
