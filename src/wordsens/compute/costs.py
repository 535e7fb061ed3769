"""Memory and time models of every job, the one place they live.

Each registered map supplies a ``CostModel`` (``MapSpec.cost``): the memory and time of one
word-sensitivity estimate (``ws_memory``, ``ws_seconds``; DRF streams its tail layers within a
budget, ``wordsens.compute.map_costs.drf_layout``), of one generalisation simulation
(``gen_memory``, ``gen_seconds``), and how its weights may be drawn (``samplers``,
``choose_sampler``). ``DenseCost`` (here) serves every map without a model of its own: a few copies of
every weight and the autograd graph of the full map; ``wordsens.compute.map_costs`` holds the built-in
maps' models (``FirstLayerCost`` for RF, ``DeepCost`` for DRF, ``AttentionCost`` for the attention
maps with a moved-row fast path).
The data steps' models sit beside them: ``embed_memory`` (hidden states of a pool),
``probe_memory`` (the encoder probes, from the encoder's size; the language-model probe), and the
size of a pre-trained encoder read from its config.json (``encoder_parameters``) with the memory of
a job that holds and runs it (``encoder_memory``: the trained study's layers, the swaps study, the
probes).

The same estimates serve two purposes: the numerical code checks them before allocating (and
refuses with the ways out rather than swapping or dying, ``wordsens.compute.devices.check_fits``),
and the workflow turns them into the ``mem_mb`` and runtime it requests from a scheduler. Nothing
of wordsens and no torch is imported: the map catalogue, the planner and the numerics all use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "CHUNK",
    "FALLBACK_PROBE",
    "GB",
    "GEMM_FLOPS",
    "GPU_RANDN_PER_S",
    "GPU_STREAM_BYTES",
    "JOBSTEP_OVERHEAD",
    "MB",
    "MODEL_LOAD_OVERHEAD",
    "PROCESS_OVERHEAD",
    "RANDN_PER_S",
    "SAMPLERS",
    "STREAM_BYTES",
    "TRANSFORMERS_OVERHEAD",
    "CostModel",
    "DenseCost",
    "MemoryEstimate",
    "embed_memory",
    "encoder_memory",
    "encoder_parameters",
    "itemsize",
    "probe_memory",
    "solve_seconds",
]

MB = 1024**2
GB = 1024**3
# Resident memory of the processes around a job's arrays: the Python process that has imported
# torch, pandas and wordsens, and, on a cluster, the Snakemake process that runs the job; each a
# little above what it reached in SLURM jobs with small arrays (docs/benchmarks.md, "Where the
# constants come from").
PROCESS_OVERHEAD = 340 * MB
JOBSTEP_OVERHEAD = 200 * MB
# What importing transformers and loading a tokenizer adds to that process, rounded up from a
# measurement (docs/benchmarks.md, "Where the constants come from")
TRANSFORMERS_OVERHEAD = 64 * MB
# What loading a model through transformers' AutoModel adds beyond that, whatever the model's size (its
# classes and machinery; docs/benchmarks.md, the probes' memory)
MODEL_LOAD_OVERHEAD = 128 * MB
# A probe job of an encoder whose size is not known without loading it (a Hub name not in the cache)
FALLBACK_PROBE = 4096 * MB


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


def itemsize(dtype: Any) -> int:
    """Bytes per number of ``dtype`` (a torch dtype or its name)."""
    name = str(dtype).replace("torch.", "")
    sizes = {"float64": 8, "double": 8, "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2}
    if name not in sizes:
        raise ValueError(f"unsupported dtype {dtype!r}; use float32 or float64")
    return sizes[name]


SAMPLERS = ("auto", "exact", "dense", "blockwise")


# Throughputs of a 2-core laptop-class CPU (this project's CI machine: docs/benchmarks.md, "Where the
# constants come from"); estimates are deliberately on the generous side (they size scheduler requests).
RANDN_PER_S = 2.0e8  # float32 Gaussian draws per second
GEMM_FLOPS = 4.0e10  # float64 matrix products
STREAM_BYTES = 1.2e10  # bytes per second through a large matrix-vector product
# A data-centre GPU (H100 class), conservatively: float32 Gaussian draws by the device's own
# generator, and bytes per second through a matrix-vector product. Assumed figures, not measured by
# this project.
GPU_RANDN_PER_S = 5.0e10
GPU_STREAM_BYTES = 1.5e12
CHUNK = 3 * 4 * MB  # float64 chunks of exact evaluations and Gram matrices (wordsens.search)


class _Settings(Protocol):
    @property
    def restarts(self) -> int: ...
    @property
    def follow_authors(self) -> bool: ...


class MapSpec(Protocol):
    """What a cost model reads of a map's spec (``wordsens.maps.spec.MapSpec``)."""

    @property
    def name(self) -> str: ...
    @property
    def settings(self) -> _Settings: ...
    def weight_count(self, n: int, d: int, options: Mapping[str, Any] | None = None) -> int: ...
    def reference_steps(self, n: int) -> int: ...


class CostModel:
    """The resource model of a map (``MapSpec.cost``). Subclasses override what differs; every
    method gets the map's spec (its options' defaults, weight shapes, search settings, the authors'
    schedule) and the map's options as resolved for the job.

    ``samplers``: how the weights of a word-sensitivity estimate can be drawn (``"dense"``: all of them;
    first-layer maps also ``"exact"`` and ``"blockwise"``, see ``choose_sampler``). ``draws_on_device``:
    large weight blocks bound for a GPU are drawn there (the ``draw_on`` setting applies).
    ``prefers_gpu``: ``ws.device: auto`` sends the map's jobs to a GPU when one is visible.
    ``streams_layers``: an estimate may regenerate layers instead of holding them (``drf_layout``).
    """

    samplers: tuple[str, ...] = ("dense",)
    draws_on_device: bool = False
    prefers_gpu: bool = False
    streams_layers: bool = False

    def choose_sampler(
        self, *, position: int | str = 0, method: str = "default", sampler: str = "auto", explicit_weights: bool = False
    ) -> str:
        """How the weights of one word-sensitivity estimate are drawn: the one place this is decided
        (``wordsens.search.estimate`` runs it, ``wordsens.studies.jobs`` sizes jobs with it). Maps
        with one sampler: ``"dense"``; first-layer maps see ``FirstLayerCost.choose_sampler``."""
        if sampler not in SAMPLERS:
            raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
        return "dense"

    def features(self, spec: MapSpec, n: int, d: int, options: dict[str, Any]) -> int:
        """The number of coordinates of ``phi(X)`` (``n d`` unless the map says otherwise)."""
        return n * d

    def forward_flops(self, spec: MapSpec, n: int, d: int, options: dict[str, Any]) -> float:
        """Floating-point operations of one forward on a sample (n, d): ``2 n`` times the map's weights
        (at least ``12 d^2``: a transformer layer) plus ``4 n^2 d`` for attention scores."""
        weights = max(spec.weight_count(n, d, options), 12 * d * d)
        return 2.0 * n * weights + 4.0 * n * n * d

    def screen_flops(self, spec: MapSpec, n: int, d: int, options: dict[str, Any]) -> float | None:
        """Floating-point operations of the map's structural vocabulary screen for one word (its
        problem's ``screener``, ``wordsens.search.swaps.screen_scores``), or None: the map's problem
        has none, and the screen is the first-order score of the map's value."""
        return None

    def ws_memory(
        self,
        spec: MapSpec,
        n: int,
        d: int,
        options: dict[str, Any],
        *,
        method: str = "default",
        sampler: str = "dense",
        dtype: Any = "float32",
        restarts: int = 8,
        budget: int | None = None,
    ) -> MemoryEstimate:
        """Peak array memory of one estimate: every weight in the working dtype and in float64, and
        per restart the autograd graph of the full map (a few (n, n) scores and (n, 4 d) activations)."""
        b = 8 if method == "reference" else itemsize(dtype)
        R = 1 if method == "reference" else restarts
        weights = spec.weight_count(n, d, options) * (b + 8)
        graph = R * 12 * (n * n + 4 * n * d) * max(b, 4) * (2 if method == "reference" else 1)
        return MemoryEstimate(
            int(weights + graph + 8 * (4 * n * n + 12 * n * d)) + CHUNK,
            f"{spec.name} weights and the graph of {R} restarts at n = {n}, d = {d}",
        )

    def ws_seconds(
        self,
        spec: MapSpec,
        n: int,
        d: int,
        options: dict[str, Any],
        *,
        method: str = "default",
        sampler: str = "dense",
        steps: int | None = None,
        max_steps: int = 1000,
        device: str = "cpu",
        budget: int | None = None,
    ) -> float:
        """Rough wall time (seconds) of one position's estimate on a 2-core CPU, or a data-centre GPU
        (``device="cuda"``: the CPU time / 20), including the authors' algorithm where the default
        search runs it too (``SearchSettings.follow_authors``, ``50 n <= max_steps``)."""
        if method == "reference":
            t = self.reference_seconds(spec, n, d, options, steps=steps)
        else:
            t = self.search_seconds(spec, n, d, options, steps=steps)
            if spec.settings.follow_authors and spec.reference_steps(n) <= max_steps:
                t += self.reference_seconds(spec, n, d, options)
        return t / 20 if device == "cuda" else t

    def scale(self) -> float:
        """The factor of the map's measured time against the model (``AttentionCost``, ``DenseCost``)."""
        return 1.0

    def search_seconds(
        self, spec: MapSpec, n: int, d: int, options: dict[str, Any], *, steps: int | None = None
    ) -> float:
        """The default search: forward and backward of the full map per restart and step."""
        full = 2 * n * n * d + 2 * n * spec.weight_count(n, d, options)
        return (steps or 300) * (3 * full * spec.settings.restarts / GEMM_FLOPS + 1e-3) * self.scale()

    def reference_seconds(
        self, spec: MapSpec, n: int, d: int, options: dict[str, Any], *, steps: int | None = None
    ) -> float:
        """The authors' algorithm: forward and backward of the full map per step."""
        full = 2 * n * n * d + 2 * n * spec.weight_count(n, d, options)
        return (steps or spec.reference_steps(n)) * (3 * full / GEMM_FLOPS + 1e-3) * self.scale()

    def gen_memory(
        self, spec: MapSpec, n: int, d: int, N: int, options: dict[str, Any], *, restarts: int = 16
    ) -> MemoryEstimate:
        """Peak array memory of one generalisation simulation (``wordsens.generalisation.core``): the
        features of the training set and their QR, the Gram matrix, the weights and the searches' graph."""
        p = self.features(spec, n, d, options)
        weights = spec.weight_count(n, d, options) * 16
        arrays = 4 * N * p * 8 + 3 * N * N * 8 + 8 * (4 * n * n + 20 * n * d + 3 * d * d) + 16 * restarts * p * 8
        return MemoryEstimate(arrays + weights, f"features {N} x {p} and their QR")

    def gen_seconds(
        self, spec: MapSpec, n: int, d: int, N: int, options: dict[str, Any], *, searches: float = 4.0
    ) -> float:
        """Rough CPU wall time of one generalisation simulation with ``searches`` Delta searches."""
        p = self.features(spec, n, d, options)
        full = 2 * n * n * d + 2 * n * spec.weight_count(n, d, options)
        prepare = N * full * 2 / GEMM_FLOPS + 2 * N * N * p / GEMM_FLOPS
        per_search = 300 * (3 * full * 16 / GEMM_FLOPS + 1e-3)
        return prepare + solve_seconds(p, N) + searches * per_search * self.scale()


def solve_seconds(p: int, N: int) -> float:
    """The first stage on one thread (gen jobs run with ``gen.threads`` = 1), its usual path
    (``wordsens.generalisation.first_stage``): the float32 Gram matrix of the (N, p) features in 8 row
    panels (9/16 of one product; float32 products priced at ``0.75 GEMM_FLOPS`` on one thread, the
    rate of this project's 2-core machine: docs/benchmarks.md, "Where the constants come from"), its
    float32 eigendecomposition, and about 25 float64 passes over the features (the float64 copy, the
    refinement, Rayleigh-Ritz). Ill-conditioned training sets take the Householder QR instead (about
    ``6 p N^2`` float64 flops more), not priced here."""
    gram = 2 * (9 / 16) * N * N * p / (0.75 * GEMM_FLOPS)
    return gram + 25 * N * p * 8 / STREAM_BYTES + 8 * N**3 / GEMM_FLOPS


@dataclass(frozen=True)
class DenseCost(CostModel):
    """Maps searched on their full map (plugins without a fast path, the transformer block).
    ``time_scale`` multiplies the time model (measured against the map's own runs)."""

    time_scale: float = 1.0

    def scale(self) -> float:
        return self.time_scale


# --------------------------------------------------------------------------- the data steps


def embed_memory(*, pool_size: int, max_length: int, width: int | None, batch_size: int, dtype: str) -> MemoryEstimate:
    """Peak memory of the embedding job of a pool (``wordsens.data.embed``): the stored hidden states
    twice (the array and its write), one batch's activations (about 40 arrays of (batch, length,
    width) in a BERT forward pass), and 2 GB for the model and the processes (BERT-Large: 1.3 GB in
    float32): ``job`` is what the job requests. An unknown width counts as 1024."""
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
    """Memory of a probe job (``wordsens.studies.probes.run``). ``"encoder"`` (Figure 1 attention, Figure 3
    panels 3-4): one encoder of ``parameters`` float32 parameters (``encoder_parameters``; ``width``,
    ``layers``, ``heads`` from its config.json) run on one sequence of at most ``length`` tokens (the
    encoder's positions: the probes' texts are shorter): ``encoder_memory`` with two sequences'
    activations (a forward, and the backward of the attracting Delta's ascent), what the probes keep of
    a forward twice (before and after a move): every layer's hidden states ((layers + 1) x length x
    width) and attention maps (layers x heads x length^2), float32, and ``MODEL_LOAD_OVERHEAD`` (the
    encoder loaded through AutoModel). An encoder whose size is not known without loading it: 4 GB in
    all (``FALLBACK_PROBE``). ``"lm"``: a 7B causal language model in half precision, 32 GB; the demo's
    tiny LM, 2 GB."""
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
    """Parameters of a BERT-family encoder from its config.json (``hidden_size``, ``num_hidden_layers``,
    ``vocab_size``, ``max_position_embeddings``, ``intermediate_size``: 4 x width where unknown,
    ``type_vocab_size``) without loading it: the embeddings ((vocab + positions + type_vocab) x width
    and their LayerNorm), per layer the attention (query, key, value, output: 4 (width^2 + width)), the
    feed-forward (2 width x intermediate + intermediate + width) and two LayerNorms, and the pooler
    (width^2 + width). BERT-Base: 109.5 million (its config: 768, 12, 30,522, 512, 3,072)."""
    f = 4 * width if intermediate is None else intermediate
    embeddings = (vocab + positions + type_vocab) * width + 2 * width
    layer = 4 * (width * width + width) + 2 * width * f + f + width + 4 * width
    return embeddings + layers * layer + width * width + width


def encoder_memory(
    *, parameters: int, copies: int, batch: int, length: int, width: int, heads: int, detail: str = "an encoder"
) -> MemoryEstimate:
    """Peak array memory of a job that holds ``copies`` copies of a pre-trained encoder of ``parameters``
    parameters in float32 (``encoder_parameters``) and runs it without gradients on ``batch`` sequences
    of ``length`` tokens: the weights, and one batch's activations (about 40 arrays of (batch, length,
    width), as ``embed_memory`` counts them, and 3 of the attention scores (batch, heads, length,
    length)), float32; and ``TRANSFORMERS_OVERHEAD`` for the library and a tokenizer."""
    weights = copies * parameters * 4
    activations = batch * length * (40 * width + 3 * heads * length) * 4
    return MemoryEstimate(
        weights + activations + TRANSFORMERS_OVERHEAD,
        f"{detail}: {copies} x {parameters / 1e6:.1f} M float32 parameters",
    )
