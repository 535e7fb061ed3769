"""Memory and time models of every job: one word-sensitivity estimate (``ws_memory``,
``ws_seconds``, with DRF's streaming ``drf_layout``), one generalisation simulation
(``gen_memory``, ``gen_seconds``), and how weights are drawn (``choose_sampler``).

The same estimates serve two purposes: the numerical code checks them before allocating (and
refuses with the ways out rather than swapping or dying, ``wordsens.pipeline.devices.check_fits``),
and the workflow turns them into the ``mem_mb`` and runtime it requests from a scheduler. Torch is
not imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..maps import registry

__all__ = [
    "GB",
    "JOBSTEP_OVERHEAD",
    "MB",
    "PROCESS_OVERHEAD",
    "SAMPLERS",
    "DRFLayout",
    "MemoryEstimate",
    "choose_sampler",
    "drf_layout",
    "gen_memory",
    "gen_seconds",
    "ws_memory",
    "ws_seconds",
]

MB = 1024**2
GB = 1024**3
# Resident memory of the processes around a job's arrays: the Python process that has imported
# torch, pandas and wordsens (measured here in SLURM jobs: 325 MB for small arrays) and, on a
# cluster, the Snakemake process that runs the job (measured here: 169 MB).
PROCESS_OVERHEAD = 340 * MB
JOBSTEP_OVERHEAD = 200 * MB


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak bytes of the arrays a job allocates (process overhead not included)."""

    bytes: int
    detail: str

    @property
    def total(self) -> int:
        """Estimate including the interpreter and torch (what this process will reach)."""
        return self.bytes + PROCESS_OVERHEAD

    @property
    def job(self) -> int:
        """What a scheduler should grant a workflow job: ``total`` plus the Snakemake job process."""
        return self.total + JOBSTEP_OVERHEAD


def _itemsize(dtype: Any) -> int:
    name = str(dtype).replace("torch.", "")
    sizes = {"float64": 8, "double": 8, "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}
    if name not in sizes:
        raise ValueError(f"unsupported dtype {dtype!r}; use float32 or float64")
    return sizes[name]


SAMPLERS = ("auto", "exact", "dense", "blockwise")


def choose_sampler(
    map_name: str,
    *,
    position: int | str = 0,
    method: str = "default",
    sampler: str = "auto",
    explicit_weights: bool = False,
) -> str:
    """How the weights of one word-sensitivity estimate are drawn: the one place this is decided
    (``wordsens.search.estimate`` runs it, ``wordsens.pipeline.jobs`` sizes jobs with it).

    RF/DRF: ``"exact"`` (only the perturbed token's block, exact in law; one position),
    ``"blockwise"`` (the dense matrix one block at a time; the default for ``position="all"``) or
    ``"dense"`` (explicit weights and the reference method). Attention maps: always ``"dense"``.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    if registry.get(map_name).cost not in ("rf", "drf"):
        return "dense"
    if explicit_weights or method == "reference":
        return "dense"
    if sampler == "auto":
        return "blockwise" if position == "all" else "exact"
    if sampler == "exact" and position == "all":
        raise ValueError("sampler 'exact' draws one position's block; use 'blockwise' or 'dense' with position='all'")
    return sampler


@dataclass(frozen=True)
class DRFLayout:
    """How a DRF estimate holds its tail (layers 2..L) within a memory budget (``wordsens.search.drf``):
    ``resident`` layers stay in memory, ``streamed`` ones are regenerated block by block on every
    pass. ``bytes``: peak array memory of the estimate."""

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
    restarts: int = 5,
    dtype: Any = "float32",
    sampler: str = "exact",
) -> DRFLayout:
    """The tail layout of a default-method DRF estimate: every tail layer resident when the arrays fit
    ``budget`` bytes (None: no limit), else as many as fit beside one streamed ``(D, d)`` block.

    The fixed part: the first layer (its ``(D, d)`` block, or with ``sampler="dense"`` the whole
    ``(D, D)`` matrix), the per-restart activations and masks of every layer, float64 chunks of the
    exact evaluation. When even no resident layer fits, the layout still streams everything and its
    ``bytes`` exceed the budget: ``check_fits`` then refuses the job.
    """
    D = n * d
    b = _itemsize(dtype)
    first = D * D * b if sampler == "dense" else D * d * b
    fixed = first + (6 * L + 8) * restarts * D * max(b, 4) + D * d * 4 + 3 * 4 * MB
    layer = D * D * b
    tail = L - 1
    if budget is None or fixed + tail * layer <= budget:
        resident = tail
    else:
        stream_buffer = D * d * (b + 8)  # one block and its float64 copy in the exact evaluation
        resident = int(max(0, min(tail, (budget - fixed - stream_buffer) // layer)))
    streamed = tail - resident
    total = fixed + resident * layer + (D * d * (b + 8) if streamed else 0)
    detail = (
        f"{resident} resident DRF layers {D} x {D}"
        + (f", {streamed} streamed in {D} x {d} blocks" if streamed else "")
        + f", first-layer block {D} x {d}"
    )
    return DRFLayout(resident=resident, streamed=streamed, bytes=total, detail=detail)


def ws_memory(
    map_name: str,
    n: int,
    d: int,
    *,
    L: int = 2,
    k: int | None = None,
    method: str = "default",
    sampler: str = "exact",
    dtype: Any = "float32",
    restarts: int = 8,
    budget: int | None = None,
    options: dict[str, Any] | None = None,
) -> MemoryEstimate:
    """Peak array memory of one word-sensitivity estimate (see ``wordsens.search.estimate``); for DRF
    with the default method, within ``budget`` bytes where streaming makes that possible. The map's
    cost model comes from the registry (``wordsens.maps.registry``)."""
    spec = registry.get(map_name)
    map_name = spec.cost if spec.cost in ("rf", "drf") else map_name
    D = n * d
    k = D if k is None else k
    b = 8 if method == "reference" else _itemsize(dtype)
    R = 1 if method == "reference" else restarts
    chunk = 3 * 4 * MB  # float64 chunks of exact evaluations and Gram matrices (wordsens.search)
    if map_name == "rf":
        if method == "reference" or sampler == "dense":
            weights = k * D * b
            detail = f"RF matrix V {k} x {D}"
        else:
            weights = k * d * b
            detail = f"RF block {k} x {d}"
        work = 12 * R * k * max(b, 4) + chunk + k * d * 4
        return MemoryEstimate(weights + work, detail)
    if map_name == "drf":
        if method == "reference":
            work = (6 * L + 8) * R * D * max(b, 4) + D * d * 4 + chunk
            return MemoryEstimate(L * D * D * b + work, f"{L} DRF matrices {D} x {D}")
        layout = drf_layout(n, d, L, budget=budget, restarts=R, dtype=dtype, sampler=sampler)
        return MemoryEstimate(layout.bytes, layout.detail)
    if spec.cost == "attention":
        # a few (n, n), (n, d), (d, d) arrays, per restart (n, d) at most
        work = 8 * (4 * n * n + 12 * n * d + 3 * d * d + 12 * R * (n + d)) * 2
        if method == "reference":
            work += 16 * (n * n * 8 + n * d * 8)  # autograd graph of the full map
        return MemoryEstimate(work, f"attention arrays for n = {n}, d = {d}")
    # dense maps (the variants, plugins): every weight in the working dtype and in float64, and per
    # restart the autograd graph of the full map (a few (n, n) scores and (n, 4 d) activations)
    weights = spec.weight_count(n, d, options) * (b + 8)
    graph = R * 12 * (n * n + 4 * n * d) * max(b, 4) * (2 if method == "reference" else 1)
    return MemoryEstimate(
        int(weights + graph + 8 * (4 * n * n + 12 * n * d)) + chunk,
        f"{map_name} weights and the graph of {R} restarts at n = {n}, d = {d}",
    )


# Throughputs of a 2-core laptop-class CPU, measured on this project's CI machine; estimates are
# deliberately on the generous side (they size scheduler requests).
_RANDN_PER_S = 2.0e8  # float32 Gaussian draws per second
_GEMM_FLOPS = 4.0e10  # float64 matrix products
_STREAM_BYTES = 1.2e10  # bytes per second through a large matrix-vector product
# A data-centre GPU (H100 class), conservatively: float32 Gaussian draws by the device's own
# generator, and bytes per second through a matrix-vector product. Not measured by this project yet.
_GPU_RANDN_PER_S = 5.0e10
_GPU_STREAM_BYTES = 1.5e12


def ws_seconds(
    map_name: str,
    n: int,
    d: int,
    *,
    L: int = 2,
    k: int | None = None,
    method: str = "default",
    sampler: str = "exact",
    steps: int | None = None,
    device: str = "cpu",
    positions: int = 1,
    budget: int | None = None,
    options: dict[str, Any] | None = None,
) -> float:
    """Rough wall time of one word-sensitivity estimate (seconds) on a 2-core CPU or (``device="cuda"``)
    a data-centre GPU. DRF follows its layout within ``budget`` (``drf_layout``); other maps on a GPU
    take the CPU time divided by ~20.

    ``positions``: how many positions are searched (``n`` for ``position="all"``, one search each).
    """
    spec = registry.get(map_name)
    map_name = spec.cost if spec.cost in ("rf", "drf") else map_name
    D = n * d
    k = D if k is None else k
    if map_name == "rf":
        if method == "reference":
            t = k * D / _RANDN_PER_S + (steps or 300) * 2 * k * D * 8 / _STREAM_BYTES
        else:
            block = k * D if sampler in ("dense", "blockwise") else k * d
            t = block / _RANDN_PER_S + 2 * k * d * d * 2 / _GEMM_FLOPS + (steps or 100) * 2 * k * d * 4 / _STREAM_BYTES
    elif map_name == "drf":
        randn, stream = (_GPU_RANDN_PER_S, _GPU_STREAM_BYTES) if device == "cuda" else (_RANDN_PER_S, _STREAM_BYTES)
        b = 8 if method == "reference" else 4
        steps = steps or (300 if method == "reference" else 150)
        if method == "reference":
            resident, streamed = L, 0
        else:
            layout = drf_layout(n, d, L, budget=budget, sampler=sampler)
            resident, streamed = layout.resident + (sampler == "dense"), layout.streamed
        # resident layers are drawn once and read twice per step (forward, backward); streamed layers
        # are drawn and read twice per step
        t = (
            resident * D * D / randn
            + steps * 2 * (resident + streamed) * D * D * b / stream
            + steps * 2 * streamed * D * D / randn
        )
        return t * positions
    elif spec.cost == "attention":
        if method == "reference":
            t = (steps or 50 * n) * (6 * n * n * d * 2 / _GEMM_FLOPS + 1e-3)
        else:
            t = (steps or 300) * (16 * (d * d + 3 * n * d) * 4 / _GEMM_FLOPS + 5e-4) + 300 * (
                d * d + n * d
            ) * 2 / _GEMM_FLOPS
        t *= spec.cost_scale
    else:  # dense maps: forward and backward of the full map per restart and step
        full = 2 * n * n * d + 2 * n * spec.weight_count(n, d, options)
        if method == "reference":
            t = spec.reference_steps(n) * (3 * full / _GEMM_FLOPS + 1e-3)
        else:
            t = (steps or 300) * (3 * full * spec.settings.restarts / _GEMM_FLOPS + 1e-3)
        t *= spec.cost_scale
    t *= positions
    return t / 20 if device == "cuda" else t


def gen_memory(map_name: str, n: int, d: int, N: int, *, restarts: int = 16) -> MemoryEstimate:
    """Peak array memory of one generalisation simulation (``wordsens.generalisation.core``)."""
    D = n * d
    if map_name == "rf":
        m = N + 1 + d
        k = D
        # features and the Householder QR copy of them (wordsens.generalisation.functionals.interpolate) at once
        arrays = (
            3 * (N + 1) * D * 8
            + 3 * m * m * 8
            + 3 * N * k * 8
            + k * d * 4
            + 3 * k * 8
            + 3 * 8 * MB
            + 16 * restarts * k * 4
        )
        return MemoryEstimate(arrays, f"samples {N + 1} x {D}, features {N} x {k} and their QR")
    arrays = 4 * N * D * 8 + 3 * N * N * 8 + 8 * (4 * n * n + 20 * n * d + 3 * d * d) + 16 * restarts * n * d * 8
    return MemoryEstimate(arrays, f"features {N} x {D} and their QR")


def gen_seconds(map_name: str, n: int, d: int, N: int, *, searches: int = 4) -> float:
    """Rough CPU wall time of one generalisation simulation with ``searches`` Delta searches."""
    D = n * d
    if map_name == "rf":
        m = N + 1 + d
        prepare = (
            2 * N * N * D / _GEMM_FLOPS
            + 10 * m**3 / _GEMM_FLOPS
            + D * m / _RANDN_PER_S
            + 2 * D * m * m / _GEMM_FLOPS
            + 2 * N * N * D / _GEMM_FLOPS
        )
        per_search = 300 * 2 * D * d * 4 / _STREAM_BYTES  # k = D rows of B, streamed twice per step
    else:
        prepare = N * (2 * n * n * d + 2 * n * d * d) * 2 / _GEMM_FLOPS + 2 * N * N * D / _GEMM_FLOPS
        per_search = 300 * (16 * (d * d + 6 * n * d) * 8 / _GEMM_FLOPS + 1e-3)
    # the pseudo-inverse: Householder QR of the (p, N) features (p = D here, k = D for RF), SVD of R
    solve = 6 * D * N * N / _GEMM_FLOPS + 30 * N**3 / _GEMM_FLOPS
    return prepare + solve + searches * per_search
