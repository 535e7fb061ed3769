"""What every study's jobs share: the job (``Job``, with its typed settings, ``Settings``), where it
runs (``job_device``), what it requests (``gpu_mem_mb``, ``placed``), the embedding stores it may read
(``Store``, ``main_store``), the label its rows record for their data (``data_label``), the rule that
runs a kind of job (``JobRule``) and what that rule hands a job body (``JobFiles``). Torch-free: the
planner imports it.

A job's settings are a frozen dataclass of the study's (``Settings``): built by the study's job
builder with named fields, turned into plain data for Snakemake's ``params`` (``Settings.params``:
what Snakemake compares to decide a re-run, and the config hash of the rows) and back into the same
dataclass in the job (``Settings.of``). No settings dict crosses a module boundary of the package.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from ..compute import costs
from ..compute.limits import Limits
from ..compute.placement import GpuRate
from ..data.models import model_tag
from ..seeds import canonical

__all__ = [
    "CUDA_CONTEXT_BYTES",
    "CUDA_HOST_BYTES",
    "Job",
    "JobFiles",
    "JobRule",
    "Request",
    "Settings",
    "Store",
    "chunks",
    "data_label",
    "gpu_mem_mb",
    "job_device",
    "main_store",
    "placed",
    "request",
]

GB = costs.GB
# Host memory of a job whose arrays live on a GPU: its Python process, the Snakemake job process
# and torch's CUDA context and kernels (1-2 GB resident; not measured here: the CI machine has no GPU).
CUDA_HOST_BYTES = costs.PROCESS_OVERHEAD + costs.JOBSTEP_OVERHEAD + 2 * GB
# GPU memory a job's process holds beyond its arrays: the CUDA context, library workspaces and the
# caching allocator's slack (0.3-0.6 GB on recent drivers, 1 GB to be safe; not measured here: the
# CI machine has no GPU). Every job sharing a GPU holds its own.
CUDA_CONTEXT_BYTES = 1 * GB


def job_device(setting: str, limits: Limits, *, prefers_gpu: bool = True, gpu_pays: bool | None = None) -> str:
    """Where a job runs: ``cpu``/``cuda`` as set; ``auto``: ``cuda`` when a GPU is known
    (``limits.gpu``) and either the GPU is shared by the jobs of one machine (``limits.shared_gpu``:
    the jobs whose cost model says the GPU pays, ``gpu_pays`` from ``wordsens.compute.placement``;
    None: every job, each taking its ``gpu_mem_mb``) or the job gains enough to be granted a GPU of its
    own on a cluster (``prefers_gpu``: the map's cost model, DRF among the built-in maps), else
    ``cpu``. The one rule for every job kind: every study's jobs, embeddings, probes."""
    if setting == "auto":
        if limits.gpu is None:
            return "cpu"
        if limits.shared_gpu:
            return "cpu" if gpu_pays is False else "cuda"
        return "cuda" if prefers_gpu else "cpu"
    return setting


def gpu_mem_mb(device: str, device_bytes: int) -> int:
    """GPU memory (MB) a job declares to Snakemake (its ``gpu_mem_mb`` resource): what must fit the
    GPU (``device_bytes``: its arrays and its CUDA context) on ``cuda``, 0 on the CPU. Jobs run side
    by side on one GPU while their sum fits ``--resources gpu_mem_mb=...`` (profiles/gpu-node)."""
    return -(-device_bytes // costs.MB) if device == "cuda" else 0


@dataclass(frozen=True)
class Request:
    """What a step outside the grid requests (an embedding, a probe): host ``mem_mb``, the ``device`` the
    plan puts it on and the GPU memory it declares there (``gpu_mem_mb``, 0 on the CPU)."""

    mem_mb: int
    device: str
    gpu_mem_mb: int

    @property
    def gpu(self) -> int:
        """GPUs to request (the SLURM plugin's ``--gpus``): 1 on ``cuda``."""
        return 1 if self.device == "cuda" else 0


def request(estimate: costs.MemoryEstimate, setting: str, limits: Limits, *, prefers_gpu: bool) -> Request:
    """A step of memory ``estimate`` and device ``setting``. On a GPU it declares its whole estimate
    (the model and a batch, and what it holds on the host besides: an upper bound) and its CUDA
    context."""
    device = job_device(setting, limits, prefers_gpu=prefers_gpu)
    return Request(-(-estimate.job // costs.MB), device, gpu_mem_mb(device, estimate.bytes + CUDA_CONTEXT_BYTES))


def placed(estimate: costs.MemoryEstimate, device: str) -> tuple[int, int]:
    """(host bytes, device bytes) of a job whose arrays are ``estimate``, run on ``device``."""
    if device == "cuda":
        return CUDA_HOST_BYTES, estimate.bytes + CUDA_CONTEXT_BYTES
    return estimate.job, estimate.job


def chunks(count: int, per_job: int) -> list[tuple[int, ...]]:
    """``range(count)`` in consecutive chunks of at most ``per_job`` (the trials of one job each)."""
    return [tuple(range(start, min(count, start + per_job))) for start in range(0, count, per_job)]


# ----------------------------------------------------------------------------- embedding stores


@dataclass(frozen=True, kw_only=True)
class Store:
    """An embedding store: the review pool's hidden states at ``model.layer``, padded to
    ``max_length``. ``main`` (``model.max_length``, ``data.pool_size``) is every study's; a study may
    declare others (``StudySpec.stores``) with a pool of its own (``pool_size``, reviews of at least
    ``min_tokens`` tokens; ``section``: the configuration key that sets them)."""

    name: str
    max_length: int
    pool_size: int
    section: str
    min_tokens: int | None = None

    @property
    def rule(self) -> str:
        """The rule that embeds it (``embed``, ``embed_<name>``)."""
        return "embed" if self.name == "main" else f"embed_{self.name}"

    @property
    def pool_rule(self) -> str:
        """The rule that draws its pool (``pool``, ``pool_<name>``)."""
        return "pool" if self.name == "main" else f"pool_{self.name}"


def main_store(config: Mapping[str, Any]) -> Store:
    """The embedding store of ``model`` at ``model.max_length`` over the pool of ``data``."""
    return Store(
        name="main",
        max_length=int(config["model"]["max_length"]),
        pool_size=int(config["data"]["pool_size"]),
        section="model",
    )


def data_label(config: Mapping[str, Any], data: str, store: Store | None = None) -> str:
    """What a result row records as its data: the encoder and layer of the embeddings (a store other
    than the main one: with its length), or synthetic."""
    if data != "imdb":
        return "synthetic"
    label = f"imdb:{model_tag(config['model']['name'])}:layer{config['model']['layer']}"
    return f"{label}:len{store.max_length}" if store is not None and store.name != "main" else label


# ----------------------------------------------------------------------------- settings and jobs


def _typed(hint: Any, value: Any) -> Any:
    """``value`` (plain data, as ``canonical`` writes it) as the type ``hint`` names: lists become the
    tuples a field declares, recursively; mappings and scalars stay."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint) and isinstance(value, Mapping):
        return hint.of(value)  # type: ignore[union-attr]
    if origin is tuple and isinstance(value, list | tuple):
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        return tuple(_typed(inner, v) for v in value)
    return value


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The settings of one job: a frozen dataclass with named fields (every study's job settings derive
    from it). ``params``: plain data for Snakemake (a field whose value equals its ``omit`` default is
    left out, as optional keys are); ``of``: the dataclass again from them."""

    # fields left out of ``params`` while they hold this value (optional keys of the params)
    OMIT_WHEN: ClassVar[Mapping[str, Any]] = {}

    def params(self) -> dict[str, Any]:
        """The settings as plain, canonical data (``wordsens.seeds.canonical``)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in self.OMIT_WHEN and value == self.OMIT_WHEN[f.name]:
                continue
            out[f.name] = value.params() if isinstance(value, Settings) else value
        return canonical(out)

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Self:
        """The settings from their ``params`` (a job's Snakemake params); ``ValueError`` naming the keys
        that are missing or unknown."""
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - set(fields))
        missing = [
            name
            for name, f in fields.items()
            if name not in params
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
            and name not in cls.OMIT_WHEN
        ]
        if unknown or missing:
            raise ValueError(f"{cls.__name__}: params with unknown keys {unknown} or without {missing}")
        values = {name: _typed(hints[name], value) for name, value in params.items()}
        omitted = {name: cls.OMIT_WHEN[name] for name in cls.OMIT_WHEN if name not in params}
        return cls(**omitted, **values)


@dataclass(frozen=True, kw_only=True)
class Job(ABC):
    """One job of a study, run by the rule of its kind (``RULE``); Snakemake finds it by the wildcards
    of its output path. ``settings``: what its rows depend on (its Snakemake ``params``)."""

    study: str
    map: str | None  # the map it computes (None: several, e.g. a trained encoder's layer)
    data: str  # imdb | synthetic
    chunk: int = 0
    device: str  # cpu | cuda
    memory_bytes: int  # host memory: arrays on CPU (on a GPU: none), its process, the Snakemake job process
    device_bytes: int  # what must fit the device: memory_bytes on CPU, the arrays and CUDA context on a GPU
    seconds: float  # estimated wall time of the whole job
    arrays: int  # peak bytes of its arrays (the cost models' estimates)
    cap: int | None = None  # bytes of arrays its memory setting allows (ws.max_memory_gb), None: no setting
    threads: int = 1  # the threads it runs with (the rule's ``threads``)
    settings: Settings = field(compare=False, repr=False)

    RULE: ClassVar[JobRule]

    @property
    def rule(self) -> str:
        return self.RULE.name

    @property
    def params(self) -> dict[str, Any]:
        """The job's Snakemake params: its settings as plain data."""
        return self.settings.params()

    @property
    @abstractmethod
    def setting(self) -> str:
        """The grid point's name, e.g. ``d768_n50_L2``."""

    @property
    @abstractmethod
    def wildcards(self) -> dict[str, str]:
        """The wildcards of the job's output path (``RULE.output``)."""

    @property
    def key(self) -> str:
        """The job's output path below the results folder without its suffix, as its benchmark file is
        named below ``benchmarks/`` (``ws/rf/d768_n90/chunk0``)."""
        return self.RULE.output.format(**self.wildcards)

    @property
    @abstractmethod
    def table(self) -> str:
        """The table (file stem below ``tables/``) its rows go to."""

    @property
    @abstractmethod
    def rows(self) -> int:
        """The rows the job writes: its table must hold exactly these (``wordsens.io.concatenate``)."""

    @property
    def family(self) -> str:
        """The job's family in the time calibration (``wordsens.compute.timing``): ``ws:rf``, ``gen:raf``."""
        return f"{self.RULE.family}:{self.map}"

    @property
    def group(self) -> str:
        """What the plan groups it by: its study (a study may split further, e.g. by figure)."""
        return self.study

    @property
    def what(self) -> str:
        """What the plan's lines name beside its group: its map."""
        return self.map or "-"

    @property
    def point(self) -> str:
        """The grid point, as the left-out block names it."""
        return f"{self.study} {self.map or ''} {self.setting}".replace("  ", " ")

    @property
    def store(self) -> str | None:
        """The embedding store it reads (``Store.name``), or None."""
        return None

    @property
    def needs(self) -> tuple[str, ...]:
        """What it reads besides a store: ``pool`` (the review pool), ``model:<name>`` (an encoder's files)."""
        return ()

    @property
    def extras(self) -> dict[str, Any]:
        """Values its body needs that change no number (not part of ``settings``): a chunk size, the
        configuration key that named a model (for errors)."""
        return {}

    def values(self) -> dict[str, Any]:
        """What the left-out list and the figures say of its grid point (study, data, d, n, ...)."""
        return {"study": self.study, "data": self.data}

    @property
    def mem_mb(self) -> int:
        """Host memory to request (MB)."""
        return max(256, -(-self.memory_bytes // costs.MB))

    @property
    def runtime(self) -> int:
        """Minutes to request: generous (5 x the estimate + 5 minutes)."""
        return int(5 + 5 * self.seconds / 60)

    @property
    def gpu(self) -> int:
        """GPUs to request (the SLURM plugin's ``--gpus``): 1 on ``cuda``."""
        return 1 if self.device == "cuda" else 0

    @property
    def gpu_mem_mb(self) -> int:
        """GPU memory to request (MB): ``gpu_mem_mb`` of ``device_bytes``, 0 on the CPU."""
        return gpu_mem_mb(self.device, self.device_bytes)

    def matches(self, **wildcards: Any) -> bool:
        mine = self.wildcards
        return all(mine.get(key) == str(value) for key, value in wildcards.items())


# ----------------------------------------------------------------------------- the rule of a kind of job


class JobFiles:
    """What the rule of a job hands its body: its input files by name (an embedding store's ``meta``,
    the ``pool``, a ``model``'s files) and the run's configuration (for gates that are not params)."""

    def __init__(self, files: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> None:
        self.files = dict(files)
        self.config = config or {}

    def store(self) -> str | None:
        """The meta.json of the embedding store the job reads (``wordsens.data.store.load_embeddings``
        loads it), or None (synthetic rows)."""
        meta = self.files.get("meta")
        return str(meta) if meta else None

    def pool(self) -> Any:
        """The review pool (a DataFrame)."""
        import pandas as pd

        return pd.read_parquet(str(self.files["pool"]))

    def encoder(self, name: str, *, setting: str) -> tuple[str, Any, Any]:
        """``(source, tokenizer, encoder)`` of the encoder ``name`` on the CPU: its folder where the rule
        has its files (``model``), else the name; ``setting``: the key that named it (for errors)."""
        from ..data.pretrained import load_encoder, model_source

        model = self.files.get("model") or []
        source = model_source(name, [model] if isinstance(model, str) else list(model))
        tokenizer, encoder = load_encoder(source, "cpu", setting=setting)
        return source, tokenizer, encoder


@dataclass(frozen=True, kw_only=True)
class JobRule:
    """The workflow rule that runs one kind of job (the workflow makes one per kind of the registered
    studies): its ``name``, its ``output`` below the results folder (a pattern of the job's wildcards,
    without ``.parquet``) with the regular expressions of its wildcards (``constraints``: a function, as
    they may name every registered map), the calibration ``family`` of its jobs (``ws``, ``gen``), the
    columns its log prints (``summary``), its body ``run(params, files, **extras)`` (a DataFrame: the
    job's rows, from its params and ``JobFiles``; a callable, or ``"module:attribute"`` where the body
    lives above the module that defines the rule: ``body`` resolves it in the job's process) and the
    built-in calibration of its families, CPU (``coefficients``) and GPU (``gpu_rates``)."""

    name: str
    output: str
    constraints: Callable[[], Mapping[str, str]]
    run: str | Callable[..., Any]
    family: str = ""
    summary: Sequence[str] | Callable[[Any], str] = ()
    # built-in calibration of its families (``wordsens.compute.timing``): family -> (fixed s, scale or None)
    coefficients: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)
    # its families' GPU time model (``wordsens.compute.placement``): family (or family:dtype) -> its rate
    gpu_rates: Mapping[str, GpuRate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a job rule's name is an identifier (a rule of the workflow), got {self.name!r}")
        if isinstance(self.run, str) and ":" not in self.run:
            raise ValueError(f"job rule {self.name!r}: run is a callable or 'module:attribute', got {self.run!r}")
        if not self.family:
            object.__setattr__(self, "family", self.name)

    def body(self) -> Callable[..., Any]:
        """The job body (``run``), imported where it is named by ``"module:attribute"``."""
        if callable(self.run):
            return self.run
        import importlib

        module, _, attr = self.run.partition(":")
        return getattr(importlib.import_module(module), attr)
