"""Memory and time models of every job, the one place they live.

Each registered map supplies a ``CostModel`` (``MapSpec.cost``), asked with one request (``Work``) for the
memory and time of one word-sensitivity estimate and of one generalisation simulation, and how its weights
are drawn; ``DenseCost`` serves every map without a model of its own (the built-in maps':
``wordsens.compute.map_costs``). Beside them the data steps' models. The numerics check these estimates
before allocating (``devices.check_fits``); the workflow requests them. The constants' sources:
docs/benchmarks.md, "Where the constants come from". Torch-free, nothing of wordsens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

MB = 1024**2
GB = 1024**3
# Resident memory around a job's arrays: the Python process with torch, pandas and wordsens, and the
# Snakemake process that runs the job; what importing transformers and a tokenizer adds, and loading a model
PROCESS_OVERHEAD = 340 * MB
JOBSTEP_OVERHEAD = 200 * MB
TRANSFORMERS_OVERHEAD = 64 * MB
MODEL_LOAD_OVERHEAD = 128 * MB
FALLBACK_PROBE = 4096 * MB  # a probe of an encoder whose size is unknown without loading it

# Throughputs of this project's 2-core CPU, on the generous side (they size scheduler requests)
RANDN_PER_S = 2.0e8  # float32 Gaussian draws per second
GEMM_FLOPS = 4.0e10  # float64 matrix products
STREAM_BYTES = 1.2e10  # bytes per second through a large matrix-vector product
# A data-centre GPU (H100 class), conservatively; assumed, not measured by this project
GPU_RANDN_PER_S = 5.0e10
GPU_STREAM_BYTES = 1.5e12
CHUNK = 3 * 4 * MB  # float64 chunks of exact evaluations and Gram matrices (wordsens.search)
PLANNED_RESTARTS = 8  # an estimate's restarts where neither the request nor the model names them
GEN_RESTARTS = 16  # a generalisation simulation's batched Delta searches

SAMPLERS = ("auto", "exact", "dense", "blockwise")


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


@dataclass(frozen=True)
class Work:
    """One question to a cost model: a sample of ``n`` tokens of width ``d`` (``N`` of them: a simulation's
    training set), the map's resolved ``options`` (``MapSpec.work``), and how the estimate runs (None: the
    model's choice): ``sampler``, ``restarts`` held at once, a memory ``budget`` in bytes (DRF streams the
    layers beyond it), ``steps``, ``max_steps`` (the authors' schedule runs too where it fits) and a
    simulation's Delta ``searches``."""

    n: int
    d: int
    options: Mapping[str, Any]
    N: int = 0
    method: str = "default"
    sampler: str | None = None
    dtype: Any = "float32"
    restarts: int | None = None
    budget: int | None = None
    steps: int | None = None
    max_steps: int = 1000
    device: str = "cpu"
    searches: float = 4.0

    @property
    def number_bytes(self) -> int:
        """Bytes per number of the search: float64 for the reference method, else ``dtype``'s."""
        return 8 if self.method == "reference" else itemsize(self.dtype)

    @property
    def gen_restarts(self) -> int:
        """The restarts of a simulation's batched Delta searches: ``restarts``, else ``GEN_RESTARTS``."""
        return GEN_RESTARTS if self.restarts is None else self.restarts


def itemsize(dtype: Any) -> int:
    """Bytes per number of ``dtype`` (a torch dtype or its name)."""
    name = str(dtype).replace("torch.", "")
    sizes = {"float64": 8, "double": 8, "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}
    if name not in sizes:
        raise ValueError(f"unsupported dtype {dtype!r}; use float32 or float64")
    return sizes[name]


def on_device(seconds: float, device: str) -> float:
    """CPU-model seconds on ``device``: a data-centre GPU (``cuda``) takes a twentieth."""
    return seconds / 20 if device == "cuda" else seconds


class MapSpec(Protocol):
    """What the cost models read of a map's spec (``wordsens.maps.spec.MapSpec``)."""

    @property
    def name(self) -> str: ...
    def option_values(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]: ...
    def weight_count(self, n: int, d: int, options: Mapping[str, Any] | None = None) -> int: ...
    @property
    def settings(self) -> Any: ...  # its SearchSettings: restarts, keep, follow_authors
    def reference_steps(self, n: int) -> int: ...
    @property
    def cost(self) -> CostModel: ...


class CostModel:
    """The resource model of a map (``MapSpec.cost``): subclasses override what differs; every method takes
    the map's spec and the request. ``samplers``: how its weights can be drawn, the default first.
    ``draws_on_device``: large weight blocks bound for a GPU are drawn there. ``prefers_gpu``: ``auto`` sends
    its jobs to a GPU of their own on a cluster. ``streams_layers``: an estimate may regenerate layers instead
    of holding them (``drf_layout``). ``own_restarts``: an estimate holds the map's own restarts where the
    request names none, not ``PLANNED_RESTARTS``."""

    samplers: tuple[str, ...] = ("dense",)
    draws_on_device: bool = False
    prefers_gpu: bool = False
    streams_layers: bool = False
    own_restarts: bool = False

    def choose_sampler(
        self, *, position: int | str = 0, method: str = "default", sampler: str = "auto", explicit_weights: bool = False
    ) -> str:
        """How the weights of one estimate are drawn: ``"dense"`` (all of them: most maps, explicit weights,
        the reference method), else ``"exact"`` (the moved token's block; one position) or ``"blockwise"``
        (the dense matrix block by block; the default for ``position="all"``)."""
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
        if "exact" not in self.samplers or explicit_weights or method == "reference":
            return "dense"
        if sampler == "auto":
            return "blockwise" if position == "all" else "exact"
        if sampler == "exact" and position == "all":
            raise ValueError(
                "sampler 'exact' draws one position's block; use 'blockwise' or 'dense' with position='all'"
            )
        return sampler

    def restarts(self, spec: MapSpec, work: Work) -> int:
        """The restarts an estimate holds at once: 1 for the reference method, else the request's, else
        the model's."""
        if work.method == "reference":
            return 1
        if work.restarts is not None:
            return work.restarts
        return spec.settings.restarts if self.own_restarts else PLANNED_RESTARTS

    def scale(self) -> float:
        """The factor of the map's measured time against the model."""
        return 1.0

    def features(self, spec: MapSpec, work: Work) -> int:
        """The number of coordinates of ``phi(X)`` (``n d`` unless the map says otherwise)."""
        return work.n * work.d

    def forward_flops(self, spec: MapSpec, work: Work) -> float:
        """Floating-point operations of one forward on a sample: ``2 n`` times the map's weights (at
        least ``12 d^2``: a transformer layer) plus ``4 n^2 d`` for attention scores."""
        n, d = work.n, work.d
        weights = max(spec.weight_count(n, d, work.options), 12 * d * d)
        return 2.0 * n * weights + 4.0 * n * n * d

    def screen_flops(self, spec: MapSpec, work: Work) -> float | None:
        """Flops of the map's structural vocabulary screen per word, or None: the first-order score."""
        return None

    def ws_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        """Peak array memory of one estimate: every weight in the working dtype and in float64, and
        per restart the autograd graph of the full map (a few (n, n) scores and (n, 4 d) activations)."""
        n, d, b, R = work.n, work.d, work.number_bytes, self.restarts(spec, work)
        weights = spec.weight_count(n, d, work.options) * (b + 8)
        graph = R * 12 * (n * n + 4 * n * d) * max(b, 4) * (2 if work.method == "reference" else 1)
        return MemoryEstimate(
            int(weights + graph + 8 * (4 * n * n + 12 * n * d)) + CHUNK,
            f"{spec.name} weights and the graph of {R} restarts at n = {n}, d = {d}",
        )

    def ws_seconds(self, spec: MapSpec, work: Work) -> float:
        """Rough wall time of one position's estimate on a 2-core CPU (``on_device``), with the authors'
        algorithm where the default search runs it too (``follow_authors``, within ``max_steps``)."""
        if work.method == "reference":
            t = self.reference_seconds(spec, work, work.steps)
        else:
            t = self.search_seconds(spec, work)
            if spec.settings.follow_authors and spec.reference_steps(work.n) <= work.max_steps:
                t += self.reference_seconds(spec, work)
        return on_device(t, work.device)

    def search_seconds(self, spec: MapSpec, work: Work) -> float:
        """The default search: forward and backward of the full map per restart and step."""
        full = _full_flops(spec, work)
        return (work.steps or 300) * (3 * full * spec.settings.restarts / GEMM_FLOPS + 1e-3) * self.scale()

    def reference_seconds(self, spec: MapSpec, work: Work, steps: int | None = None) -> float:
        """The authors' algorithm (``steps``; None: their schedule): forward and backward per step."""
        full = _full_flops(spec, work)
        return (steps or spec.reference_steps(work.n)) * (3 * full / GEMM_FLOPS + 1e-3) * self.scale()

    def gen_memory(self, spec: MapSpec, work: Work) -> MemoryEstimate:
        """Peak array memory of one generalisation simulation: ``simulation_bytes`` and the weights."""
        p = self.features(spec, work)
        weights = spec.weight_count(work.n, work.d, work.options) * 16
        return MemoryEstimate(simulation_bytes(work, p) + weights, f"features {work.N} x {p} and their QR")

    def gen_seconds(self, spec: MapSpec, work: Work) -> float:
        """Rough CPU wall time of one generalisation simulation with ``searches`` Delta searches."""
        N, p, full = work.N, self.features(spec, work), _full_flops(spec, work)
        prepare = N * full * 2 / GEMM_FLOPS + 2 * N * N * p / GEMM_FLOPS
        per_search = 300 * (3 * full * 16 / GEMM_FLOPS + 1e-3)
        return prepare + solve_seconds(p, N) + work.searches * per_search * self.scale()


def _full_flops(spec: MapSpec, work: Work) -> int:
    """A forward of the full map: ``2 n^2 d`` for the scores, ``2 n`` per weight."""
    n, d = work.n, work.d
    return 2 * n * n * d + 2 * n * spec.weight_count(n, d, work.options)


def simulation_bytes(work: Work, p: int) -> int:
    """A simulation's arrays beside its weights: the training set's ``p`` features and their QR, the
    Gram matrix, the sample's activations and the graph of the batched searches."""
    n, d, N, restarts = work.n, work.d, work.N, work.gen_restarts
    return 4 * N * p * 8 + 3 * N * N * 8 + 8 * (4 * n * n + 20 * n * d + 3 * d * d) + 16 * restarts * p * 8


def solve_seconds(p: int, N: int) -> float:
    """The first stage on one thread, its usual path (``wordsens.generalisation.first_stage``): the float32
    Gram matrix of the (N, p) features in 8 row panels (9/16 of one product, at ``0.75 GEMM_FLOPS``), its
    eigendecomposition, and about 25 float64 passes over the features (the QR path is not priced)."""
    gram = 2 * (9 / 16) * N * N * p / (0.75 * GEMM_FLOPS)
    return gram + 25 * N * p * 8 / STREAM_BYTES + 8 * N**3 / GEMM_FLOPS


@dataclass(frozen=True)
class DenseCost(CostModel):
    """Maps searched on their full map; ``time_scale`` multiplies the time model."""

    time_scale: float = 1.0

    def scale(self) -> float:
        return self.time_scale


# --------------------------------------------------------------------------- the data steps


def embed_memory(*, pool_size: int, max_length: int, width: int | None, batch_size: int, dtype: str) -> MemoryEstimate:
    """Peak memory of the embedding job of a pool: the hidden states twice (the array and its write), one
    batch's activations (about 40 arrays of (batch, length, width)), and 2 GB for the model and the
    processes in all (``job``). An unknown width counts as 1024."""
    width = width or 1024
    store = pool_size * max_length * width * (2 if dtype == "float16" else 4)
    batch = batch_size * max_length * width * 4 * 40
    overhead = PROCESS_OVERHEAD + JOBSTEP_OVERHEAD
    return MemoryEstimate(2 * store + batch + 2 * GB - overhead, f"hidden states {pool_size} x {max_length} x {width}")


def probe_memory(
    kind: str,
    *,
    demo: bool = False,
    parameters: int | None = None,
    width: int | None = None,
    layers: int | None = None,
    heads: int | None = None,
    length: int = 512,
) -> MemoryEstimate:
    """Memory of a probe job. ``"encoder"``: ``encoder_memory`` on two sequences of ``length`` tokens, every
    layer's hidden states and attention maps twice (before and after a move) and ``MODEL_LOAD_OVERHEAD``
    (unknown size: ``FALLBACK_PROBE`` in all). ``"lm"``: a 7B causal LM in half precision, 32 GB in all;
    the demo's tiny LM, 2 GB."""
    overhead = PROCESS_OVERHEAD + JOBSTEP_OVERHEAD
    if kind == "encoder":
        if parameters is None or width is None or layers is None or heads is None:
            return MemoryEstimate(FALLBACK_PROBE - overhead, "an encoder of unknown size and its attention maps")
        run = encoder_memory(
            parameters=parameters, copies=1, batch=2, length=length, width=width, heads=heads, detail="the encoder"
        )
        kept = 2 * ((layers + 1) * length * width + layers * heads * length * length) * 4
        return MemoryEstimate(
            run.bytes + kept + MODEL_LOAD_OVERHEAD,
            f"{run.detail}; its hidden states and attention maps at {length} tokens",
        )
    if kind == "lm":
        need = 2048 * MB if demo else 32000 * MB
        return MemoryEstimate(need - overhead, "a causal language model")
    raise ValueError(f"unknown probe kind {kind!r}; use 'encoder' or 'lm'")


def encoder_parameters(
    *, width: int, layers: int, vocab: int, positions: int, intermediate: int | None = None, type_vocab: int = 2
) -> int:
    """Parameters of a BERT-family encoder from its config.json (``intermediate``: 4 x width where
    unknown): embeddings, layers and pooler. BERT-Base: 109.5 million."""
    f = 4 * width if intermediate is None else intermediate
    embeddings = (vocab + positions + type_vocab) * width + 2 * width
    layer = 4 * (width * width + width) + 2 * width * f + f + width + 4 * width
    return embeddings + layers * layer + width * width + width


def encoder_memory(
    *, parameters: int, copies: int, batch: int, length: int, width: int, heads: int, detail: str = "an encoder"
) -> MemoryEstimate:
    """Peak array memory of a job that runs ``copies`` copies of a float32 encoder without gradients on
    ``batch`` sequences of ``length`` tokens: the weights, one batch's activations (as ``embed_memory``
    counts them, and 3 of the attention scores) and ``TRANSFORMERS_OVERHEAD``."""
    weights = copies * parameters * 4
    activations = batch * length * (40 * width + 3 * heads * length) * 4
    return MemoryEstimate(
        weights + activations + TRANSFORMERS_OVERHEAD,
        f"{detail}: {copies} x {parameters / 1e6:.1f} M float32 parameters",
    )
