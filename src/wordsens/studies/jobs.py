"""A study's jobs: one frozen record per kind of job (``Job``, a dataclass whose class attributes name its rule,
output and time model and whose fields are its Snakemake ``params``), the embedding stores it may read
(``Store``), what its rule hands its body (``JobFiles``) and what its rows record beside their numbers
(``Job.stamp``). Torch-free: the planner imports it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from ..compute import costs
from ..compute.placement import Cost, GpuRate, gpu_mem_mb
from ..data.models import model_tag
from ..seeds import canonical, canonical_json


def chunks(count: int, per_job: int) -> list[tuple[int, ...]]:
    """``range(count)`` in consecutive chunks of at most ``per_job`` (the trials of one job each)."""
    return [tuple(range(start, min(count, start + per_job))) for start in range(0, count, per_job)]


# ----------------------------------------------------------------------------- embedding stores


@dataclass(frozen=True, kw_only=True)
class Store:
    """An embedding store: the review pool's hidden states at ``model.layer``, padded to ``max_length``.
    ``main`` (``model.max_length``, ``data.pool_size``) is every study's; a study may declare others
    (``StudySpec.stores``) with a pool of its own (``pool_size``, reviews of at least ``min_tokens``
    tokens; ``section``: the configuration key that sets them)."""

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
    """What a result row records as its data: the encoder and layer of the embeddings (a store other than
    the main one: with its length), or synthetic."""
    if data != "imdb":
        return "synthetic"
    label = f"imdb:{model_tag(config['model']['name'])}:layer{config['model']['layer']}"
    return f"{label}:len{store.max_length}" if store is not None and store.name != "main" else label


# ----------------------------------------------------------------------------- the job


def _typed(hint: Any, value: Any) -> Any:
    """``value`` (plain data, as ``canonical`` writes it) as the type ``hint`` names: lists become the
    tuples a field declares, recursively; mappings and scalars stay."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and value is not None:
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    if typing.get_origin(hint) is tuple and isinstance(value, list | tuple):
        args = typing.get_args(hint)
        inner = args[0] if args else Any
        return tuple(_typed(inner, v) for v in value)
    return value


@dataclass(frozen=True, kw_only=True)
class Job:
    """One job of a study, run by its kind's rule. ``study``: the study that planned it; ``table``: the table
    (file stem below ``tables/``) its rows go to; ``map``: the map it computes (None: several); ``data``:
    ``imdb`` or ``synthetic``; ``store``: the embedding store it reads (``Store.name``; None: none);
    ``needs``: what it reads besides (``pool``: the review pool, ``model:<name>``: an encoder's files);
    ``device``: where it runs (``cpu`` or ``cuda``); ``chunk``: which chunk of its grid point's trials or
    simulations; ``seed``: the configuration's, every random draw's root; ``numerics_version``: its study's
    (recorded in its rows); ``cost``: the plan's estimates (no param)."""

    study: str
    table: str = ""
    map: str | None = None
    data: str = "synthetic"
    store: str | None = None
    needs: tuple[str, ...] = ()
    device: str = "cpu"
    chunk: int = 0
    seed: int = 0
    numerics_version: str = ""
    cost: Cost = field(default=Cost(), compare=False, repr=False)

    # the kind's rule (the workflow makes one per kind) and its output below the results folder, without
    # .parquet: a pattern of the job's fields and properties, which are the rule's wildcards
    rule: ClassVar[str]
    output: ClassVar[str]
    # the columns its log prints (none: every column; ``log`` may say more)
    summary: ClassVar[Sequence[str]] = ()
    # fields that change no number (not params): handed to the body beside them
    EXTRAS: ClassVar[tuple[str, ...]] = ()
    # the built-in time model of its families: CPU (family -> (fixed s, scale or None), wordsens.compute.timing)
    # and GPU (family or family:dtype -> its rate, wordsens.compute.placement)
    coefficients: ClassVar[Mapping[str, tuple[float, float | None]]] = {}
    gpu_rates: ClassVar[Mapping[str, GpuRate]] = {}

    def __post_init__(self) -> None:
        if not self.table:  # a kind's table is its rule's name unless it says otherwise
            object.__setattr__(self, "table", self.rule)

    # ---- what it is
    @property
    def rows(self) -> int | None:
        """The rows the job writes (its table is checked to hold exactly these), None: not checked."""
        return None

    @property
    def setting(self) -> str:
        """The grid point's name, e.g. ``d768_n50_L2``."""
        return ""

    @property
    def wildcards(self) -> dict[str, str]:
        """The wildcards of its output path: the fields and properties ``output`` names."""
        import string

        return {name: str(getattr(self, name)) for _, name, _, _ in string.Formatter().parse(self.output) if name}

    @property
    def key(self) -> str:
        """The job's output path below the results folder without its suffix, as its benchmark file is named
        below ``benchmarks/`` (``ws/rf/d768_n90/chunk0``)."""
        return self.output.format(**self.wildcards)

    @property
    def family(self) -> str:
        """Its family in the time calibration (``wordsens.compute.timing``): ``ws:rf``, ``gen:raf``."""
        return f"{self.rule}:{self.map}"

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

    def values(self) -> dict[str, Any]:
        """What the left-out list and the figures say of its grid point (study, data, d, n, ...)."""
        return {"study": self.study, "data": self.data}

    def matches(self, **wildcards: Any) -> bool:
        mine = self.wildcards
        return all(mine.get(key) == str(value) for key, value in wildcards.items())

    # ---- what it asks of the machine (the rule's resources)
    @property
    def threads(self) -> int:
        return self.cost.threads

    @property
    def mem_mb(self) -> int:
        """Host memory to request (MB)."""
        return max(256, -(-self.cost.host_bytes // costs.MB))

    @property
    def runtime(self) -> int:
        """Minutes to request: generous (5 x the estimate + 5 minutes)."""
        return int(5 + 5 * self.cost.seconds / 60)

    @property
    def gpu(self) -> int:
        """GPUs to request (the SLURM plugin's ``--gpus``): 1 on ``cuda``."""
        return 1 if self.device == "cuda" else 0

    @property
    def gpu_mem_mb(self) -> int:
        return gpu_mem_mb(self.device, self.cost.device_bytes)

    # ---- params and back
    @property
    def params(self) -> dict[str, Any]:
        """What its rows depend on, as plain canonical data: every field but ``cost`` and the ``EXTRAS``, a
        field at its default left out (so that a new field with a default re-runs nothing)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "cost" or f.name in self.EXTRAS or _default(f) == value:
                continue
            out[f.name] = value
        return canonical(out)

    @property
    def extras(self) -> dict[str, Any]:
        """The fields its body needs that change no number (``EXTRAS``)."""
        return {name: getattr(self, name) for name in self.EXTRAS}

    @classmethod
    def of(cls, params: Mapping[str, Any], extras: Mapping[str, Any] | None = None) -> Self:
        """The job again from its ``params`` (and ``extras``); ``ValueError`` naming unknown or missing keys."""
        hints = typing.get_type_hints(cls)
        given = {**params, **(extras or {})}
        fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "cost"}
        unknown = sorted(set(given) - set(fields))
        missing = sorted(name for name, f in fields.items() if name not in given and _default(f) is dataclasses.MISSING)
        if unknown or missing:
            raise ValueError(f"{cls.__name__}: params with unknown keys {unknown} or without {missing}")
        return cls(**{name: _typed(hints[name], value) for name, value in given.items()})

    def run(self, files: JobFiles) -> Any:
        """Its rows (a DataFrame), from its fields and the files its rule hands it: every kind defines its own
        (``StudySpec`` refuses a kind without one when the study is registered)."""
        raise TypeError(f"{type(self).__name__} has no body: define its run(self, files) returning its rows")

    def stamp(self) -> dict[str, str]:
        """The columns every row of the job ends with: its ``config_hash`` and the ``provenance``."""
        return {"config_hash": config_hash(self.params), **provenance(self.numerics_version)}

    def log(self, frame: Any) -> str:
        """What its log shows of its rows: the ``summary`` columns (none: every column)."""
        return str(frame[list(self.summary or frame)].to_string(index=False))


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


class JobFiles:
    """What the rule of a job hands its body: its input files by name (an embedding store's ``meta``, the
    ``pool``, a ``model``'s files) and the run's configuration (for gates that are not params)."""

    def __init__(self, files: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> None:
        self.files = dict(files)
        self.config = config or {}

    def store(self) -> str | None:
        """The meta.json of the embedding store the job reads (``wordsens.data.store.load_embeddings`` loads
        it), or None (synthetic rows)."""
        meta = self.files.get("meta")
        return str(meta) if meta else None

    def pool(self) -> Any:
        """The review pool (a DataFrame)."""
        import pandas as pd

        return pd.read_parquet(str(self.files["pool"]))

    def encoder(self, name: str, *, setting: str) -> tuple[str, Any, Any]:
        """``(source, tokenizer, encoder)`` of the encoder ``name`` on the CPU: its folder where the rule has
        its files (``model``), else the name; ``setting``: the key that named it (for errors)."""
        from ..data.pretrained import load_encoder, model_source

        model = self.files.get("model") or []
        source = model_source(name, [model] if isinstance(model, str) else list(model))
        tokenizer, encoder = load_encoder(source, "cpu", setting=setting)
        return source, tokenizer, encoder


# ----------------------------------------------------------------------------- what every row records


def config_hash(params: Any) -> str:
    """Short stable hash of a job's parameters (recorded in every row)."""
    return hashlib.blake2b(canonical_json(params).encode(), digest_size=6).hexdigest()


def provenance(numerics_version: str) -> dict[str, str]:
    """Versions (the package's, the job's numerics version) and the machine, for every row."""
    import os
    import platform
    import subprocess
    from pathlib import Path

    import torch

    from .. import __version__

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
        commit = out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return {
        "version": __version__,
        "numerics_version": numerics_version,
        "git_commit": commit,
        "torch": torch.__version__,
        "host": platform.node(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
    }


def memory_columns() -> dict[str, float | None]:
    """A row's ``peak_memory_mb`` (the process's peak so far) and ``job_peak_memory_mb`` (its SLURM step's or
    process group's, None where unknown), in MB."""
    from ..compute.devices import job_peak_bytes, peak_rss_bytes

    peak, job = peak_rss_bytes(), job_peak_bytes()
    return {"peak_memory_mb": peak / 1024**2, "job_peak_memory_mb": None if job is None else job / 1024**2}
