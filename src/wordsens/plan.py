"""The plan of a configuration, before anything runs: the validated settings, the jobs of its grid
with their resource estimates, which of them fit, and the messages naming what is left out.

One loader serves the Snakefile (workflow/rules/common.smk) and ``wordsens plan``: the
configuration is validated against workflow/schemas/config.schema.yaml the way Snakemake does it
(``snakemake.utils.validate`` with ``set_default=True``: the schema holds every default), then the
checks that a schema cannot express run (``problems``). ``Grid`` holds every word-sensitivity and
generalisation job with its params, memory, runtime and device: the workflow looks jobs up by their
wildcards. Torch is not imported, except to ask a visible GPU for its free memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import NUMERICS_VERSIONS, registry, resources
from .seeds import canonical

__all__ = [
    "DEMO_LM",
    "DEMO_MODEL",
    "GEN_FIGURES",
    "SCHEMA",
    "WS_FIGURES",
    "ConfigError",
    "GenJob",
    "Grid",
    "Job",
    "Limits",
    "WSJob",
    "data_label",
    "describe",
    "failed_jobs",
    "gen_jobs",
    "gen_searches",
    "gen_setting",
    "job_device",
    "load_config",
    "merge",
    "model_tag",
    "model_width",
    "planned_limits",
    "problems",
    "setting_name",
    "validate",
    "ws_jobs",
]

# The schema of the checkout this package belongs to (an editable install, or src/ on sys.path).
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
DEMO_MODEL = "demo-tiny-bert"
DEMO_LM = "demo-tiny-lm"
GB = resources.GB
# Host memory of a job whose arrays live on a GPU: its Python process, the Snakemake job process
# and torch's CUDA context and kernels (1-2 GB resident; not measured here: the CI machine has no GPU).
CUDA_HOST_BYTES = resources.PROCESS_OVERHEAD + resources.JOBSTEP_OVERHEAD + 2 * GB


class ConfigError(ValueError):
    """A configuration that cannot run; ``problems`` names each key and its fix."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))


# ----------------------------------------------------------------------------- loading and checks
def merge(base: dict, override: dict) -> dict:
    """Recursive dict merge (what Snakemake does with a --configfile over config.yaml)."""
    import copy

    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(*paths: str | Path, schema: str | Path | None = None) -> dict:
    """``config.yaml`` merged with further config files, in order, then ``validate``-d: what the
    Snakefile sees after ``configfile:`` and ``--configfile``."""
    import yaml

    config: dict = {}
    for path in paths:
        with open(path) as fh:
            config = merge(config, yaml.safe_load(fh) or {})
    if schema is None and paths:
        beside = Path(paths[0]).resolve().parent / "workflow" / "schemas" / "config.schema.yaml"
        schema = beside if beside.is_file() else SCHEMA
    return validate(config, schema or SCHEMA)


def _key(path: Iterable[Any]) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _schema_problem(error: Any) -> str:
    """One line from a jsonschema error: the dotted key, what is wrong, and the key's description."""
    text = f"{_key(error.absolute_path)}: {error.message}"
    if error.context:  # oneOf/anyOf: what each alternative wanted
        text += " (" + "; ".join(sorted({sub.message for sub in error.context})) + ")"
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    if description and error.absolute_path:
        text += f" -- {' '.join(description.split())}"
    return text


def validate(config: dict, schema: str | Path = SCHEMA) -> dict:
    """Validate ``config`` in place, filling the schema's defaults, then run ``problems``.

    Raises ``ConfigError`` naming every problem found (for the schema: the first one, as
    Snakemake reports it).
    """
    from jsonschema import ValidationError
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate as snakemake_validate

    try:
        snakemake_validate(config, str(schema), set_default=True)
    except WorkflowError as err:
        cause = err.__context__
        raise ConfigError([_schema_problem(cause) if isinstance(cause, ValidationError) else str(err)]) from None
    found = export_plugins(config) or problems(config)
    if found:
        raise ConfigError(found)
    return config


def export_plugins(config: dict) -> list[str]:
    """Export the config's ``plugins`` (``.py`` paths made absolute) in ``WORDSENS_PLUGINS``, beside
    any already there, for this process and every job it starts (the workflow passes the variable
    to cluster jobs with ``envvars``), and import them; returns the problems (a plugin that cannot
    be imported)."""
    entries = [str(Path(p).expanduser().resolve()) if p.endswith(".py") else p for p in config["plugins"]]
    present = [p.strip() for p in os.environ.get(registry.PLUGINS_ENV, "").split(",") if p.strip()]
    os.environ[registry.PLUGINS_ENV] = ",".join(dict.fromkeys([*present, *entries]))
    try:
        registry.load_plugins()
    except ValueError as err:
        return [f"plugins: {err}"]
    return []


def model_tag(name: str) -> str:
    """Folder name of an encoder: another model gives new files, never an overwrite."""
    from .embed import PACKAGED_MODELS  # torch-free

    if name == DEMO_MODEL or name in PACKAGED_MODELS:  # a packaged name wins over a folder of that name
        return name
    path = Path(name).expanduser()
    if path.exists():
        digest = hashlib.blake2b(str(path.resolve()).encode(), digest_size=4).hexdigest()
        return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', path.name)}-{digest}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def model_width(name: str) -> int | None:
    """Hidden size of a demo or packaged model (``wordsens.embed.PACKAGED_MODELS``), else from a local
    config.json (local folder or Hugging Face cache), else None."""
    from .embed import PACKAGED_MODELS  # torch-free

    if name == DEMO_MODEL:
        return 64
    if name in PACKAGED_MODELS:
        return PACKAGED_MODELS[name].width
    candidates = [Path(name).expanduser() / "config.json"]
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            candidates.append(Path(cached))
    except Exception:  # not a Hub name, or no cache: the other candidates decide
        pass
    for candidate in candidates:
        if candidate.is_file():
            return int(json.loads(candidate.read_text()).get("hidden_size", 0)) or None
    return {"bert-base-uncased": 768, "bert-base-cased": 768, "bert-large-uncased": 1024}.get(name)


def problems(config: dict) -> list[str]:
    """What a validated configuration (defaults filled) cannot run, one line per problem naming
    the key and the fix: the checks that span several sections, which a schema cannot express."""
    out: list[str] = []
    data, model, ws, gen = config["data"], config["model"], config["ws"], config["gen"]
    grids = {m: g for m, g in ws["maps"].items() if g}
    figures = {f: gen[f] for f in ("fig4", "fig5") if gen[f]}
    studies = [key for key in ("variants", "long_context", "positions") if config.get(key)]
    if not grids and not figures and not studies:
        out.append("ws.maps is empty and gen has no figure: give at least one map with its d and n lists "
                   "(ws.maps.<map>) or a gen.fig4/gen.fig5 grid")
    out += _study_problems(config)
    width = model_width(model["name"]) if ws["data"] == "imdb" or "imdb" in gen["data"] else None
    for map_name, grid in grids.items():
        if ws["data"] == "imdb":
            too_long = [n for n in grid["n"] if n > model["max_length"]]
            if too_long:
                out.append(f"ws.maps.{map_name}.n has {too_long} > model.max_length = {model['max_length']}: "
                           "lower n or raise model.max_length")
            too_wide = [d for d in grid["d"] if width is not None and d > width]
            if too_wide:
                out.append(f"ws.maps.{map_name}.d has {too_wide} > the model width {width} ({model['name']}): "
                           "lower d or choose a wider model.name")
        if ws["position"] != "all" and ws["position"] >= min(grid["n"]):
            out.append(f"ws.position {ws['position']} is beyond the smallest n = {min(grid['n'])} of "
                       f"ws.maps.{map_name}: choose a position below every n, or 'all'")
    for figure, fig in figures.items():
        for map_name, ns in fig["maps"].items():
            if "imdb" in gen["data"]:
                too_long = [n for n in ns if n > model["max_length"]]
                if too_long:
                    out.append(f"gen.{figure}.maps.{map_name} has n = {too_long} > model.max_length = "
                               f"{model['max_length']}: lower n or raise model.max_length")
            if gen["position"] >= min(ns):
                out.append(f"gen.position {gen['position']} is beyond n = {min(ns)} of gen.{figure}.maps.{map_name}: "
                           "choose a position below every n")
        if "imdb" in gen["data"] and max(fig["N"]) + 1 > data["pool_size"]:
            out.append(f"gen.{figure}.N = {max(fig['N'])} needs data.pool_size >= {max(fig['N']) + 1} (N training "
                       "reviews and the new one): raise data.pool_size or lower N")
    if figures and "imdb" in gen["data"] and width is not None and gen["d"] > width:
        out.append(f"gen.d = {gen['d']} > the model width {width} ({model['name']}): lower gen.d")
    probes = config["probes"]
    f3 = probes["fig3"]
    if probes["enabled"] and f3["text"] is None and f3["token"] > f3["min_tokens"]:
        out.append(f"probes.fig3.token {f3['token']} is beyond the default text's probes.fig3.min_tokens = "
                   f"{f3['min_tokens']} tokens: raise min_tokens or lower the token")
    lm = probes["lm"]
    if lm["enabled"] and lm["model"] != DEMO_LM and not Path(lm["model"]).expanduser().exists():
        from .data import hub_reachable

        if not hub_reachable():
            out.append(f"probes.lm.model {lm['model']!r} is not a local folder and the Hugging Face Hub is not "
                       "reachable: point probes.lm.model at a local causal LM or set probes.lm.enabled: false")
    return out


def _map_problems(key: str, map_name: str, options: Mapping[str, Any] | None, ds: Iterable[int]) -> list[str]:
    """An unregistered map, or options the map refuses at some d (e.g. heads not dividing d)."""
    known = registry.names()
    if map_name not in known:
        return [f"{key}: unknown map {map_name!r}; registered: {', '.join(known)} (a plugin's map needs its module "
                "or .py file in plugins:)"]
    spec = registry.get(map_name)
    try:
        values = spec.option_values(options)
        if spec.shapes is not None:
            for d in ds:
                spec.shapes(2, d, **values)
    except (ValueError, TypeError) as err:
        return [f"{key}: {err}"]
    return []


def _study_problems(config: dict) -> list[str]:
    """Map names and options of every WS grid (ws.maps and the studies), and the studies' sizes
    against the encoder (IMDb rows: n at most the stored length, d at most the model width)."""
    out: list[str] = []
    model = config["model"]
    for map_name, grid in config["ws"]["maps"].items():
        if grid:
            out += _map_problems(f"ws.maps.{map_name}", map_name, grid.get("options"), grid["d"])
    imdb: list[tuple[str, int, int, int]] = []  # (key, d, largest n, stored length)
    variants = config.get("variants")
    if variants:
        for map_name in variant_maps(variants):
            opts = variants["options"].get(map_name)
            out += _map_problems(f"variants.maps ({map_name})", map_name, opts, [variants["d"]])
        if variants["data"] == "imdb":
            imdb.append(("variants", variants["d"], max(variants["n"]), model["max_length"]))
    long_context = config.get("long_context")
    if long_context:
        for map_name in long_context["maps"]:
            opts = long_context["options"].get(map_name)
            out += _map_problems(f"long_context.maps ({map_name})", map_name, opts, [long_context["d"]])
        if "imdb" in long_context["data"]:
            imdb.append(("long_context", long_context["d"], 0, long_context["max_length"]))
    positions = config.get("positions")
    if positions:
        for map_name in positions["maps"]:
            opts = positions["options"].get(map_name)
            out += _map_problems(f"positions.maps ({map_name})", map_name, opts, [positions["d"]])
        imdb.append(("positions", positions["d"], positions["n"], model["max_length"]))
    for section in ("variants", "long_context", "positions"):
        for map_name in (config.get(section) or {}).get("options", {}):
            if map_name not in registry.names():
                out.append(f"{section}.options.{map_name}: unknown map; registered: {', '.join(registry.names())}")
    width = model_width(model["name"]) if imdb else None
    for key, d, n, length in imdb:
        if n > length:
            out.append(f"{key}.n = {n} > model.max_length = {length} (IMDb rows): lower n or raise model.max_length")
        if width is not None and d > width:
            out.append(f"{key}.d = {d} > the model width {width} ({model['name']}): lower {key}.d")
    return out


# ----------------------------------------------------------------------------- limits and devices
def _gpu_visible() -> bool:
    """A CUDA GPU is usable here. The driver's files are checked first, so that machines without
    one never import torch at planning time."""
    if not (Path("/proc/driver/nvidia/gpus").is_dir() or shutil.which("nvidia-smi")):
        return False
    import torch

    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Limits:
    """Memory one job may use: ``cpu`` bytes of host memory; ``gpu`` bytes of GPU memory, or None
    where no GPU is known (then ``ws.device: auto`` keeps DRF on CPU)."""

    cpu: int
    gpu: int | None

    @classmethod
    def of(cls, config: dict) -> Limits:
        """``limits.memory_gb`` and ``limits.gpu_memory_gb``; ``auto``: what this machine (its GPU)
        has free now."""
        cpu, gpu = config["limits"]["memory_gb"], config["limits"]["gpu_memory_gb"]
        cpu_bytes = resources.available_bytes("cpu") if cpu == "auto" else int(float(cpu) * GB)
        if gpu != "auto":
            gpu_bytes: int | None = int(float(gpu) * GB)
        else:
            gpu_bytes = resources.available_bytes("cuda") if _gpu_visible() else None
        return cls(cpu_bytes, gpu_bytes)

    def to_text(self) -> str:
        """JSON text for ``from_text`` (the planner hands its limits to the jobs' processes)."""
        return json.dumps({"cpu": self.cpu, "gpu": self.gpu})

    @classmethod
    def from_text(cls, text: str) -> Limits:
        values = json.loads(text)
        return cls(int(values["cpu"]), None if values["gpu"] is None else int(values["gpu"]))


PLANNED_LIMITS = "WORDSENS_PLANNED_LIMITS"


def planned_limits(config: dict, *, planner: bool) -> Limits:
    """The limits a workflow plans with. The planning process (``planner``) measures them and
    exports them in ``WORDSENS_PLANNED_LIMITS``; a cluster job's process, which parses the Snakefile
    again on its node (other free memory, other GPUs), takes the planner's, so that its params and
    device are the ones planned."""
    if planner or PLANNED_LIMITS not in os.environ:
        limits = Limits.of(config)
        os.environ[PLANNED_LIMITS] = limits.to_text()
        return limits
    return Limits.from_text(os.environ[PLANNED_LIMITS])


def job_device(setting: str, *, gpu: bool, prefers_gpu: bool = True) -> str:
    """Where a job runs: ``cpu``/``cuda`` as set; ``auto``: ``cuda`` when a GPU is known (``gpu``)
    and the job gains from it (``prefers_gpu``: DRF among the WS maps), else ``cpu``."""
    if setting == "auto":
        return "cuda" if gpu and prefers_gpu else "cpu"
    return setting


# ----------------------------------------------------------------------------- jobs
def setting_name(map_name: str, d: int, n: int, L: int | None = None) -> str:
    """The path component of one WS grid point: ``d768_n50`` or, with a depth (DRF), ``d768_n50_L2``."""
    return f"d{d}_n{n}_L{L}" if L is not None else f"d{d}_n{n}"


def gen_setting(map_name: str, n: int, N: int, d: int) -> str:
    """The path component of one generalisation point: ``raf_n40_N100_d768``."""
    return f"{map_name}_n{n}_N{N}_d{d}"


def data_label(config: dict, data: str, *, long: bool = False) -> str:
    """What a result row records as its data: the encoder and layer of the embeddings (``long``: the
    long-context store, with its length), or synthetic."""
    if data == "imdb":
        label = f"imdb:{model_tag(config['model']['name'])}:layer{config['model']['layer']}"
        return f"{label}:len{config['long_context']['max_length']}" if long else label
    return "synthetic"


@dataclass(frozen=True)
class Job:
    """One job of the grid, run by rule ``kind`` (``ws`` or ``gen``); Snakemake finds it by the
    wildcards of its output path."""

    kind: str
    map: str
    data: str  # imdb | synthetic
    chunk: int
    device: str  # cpu | cuda
    memory_bytes: int  # host memory: arrays on CPU (on a GPU: none), its process, the Snakemake job process
    device_bytes: int  # what must fit the device: memory_bytes on CPU, the arrays on a GPU
    seconds: float  # estimated wall time of the whole chunk
    arrays: int  # peak bytes of its arrays (wordsens.resources estimates)
    cap: int | None  # bytes of arrays its memory setting allows (ws.max_memory_gb), None: no setting
    params: dict = field(compare=False, repr=False)  # the configuration slice the job depends on

    @property
    def setting(self) -> str:  # pragma: no cover - defined by each kind
        raise NotImplementedError

    @property
    def wildcards(self) -> dict[str, str]:  # pragma: no cover - defined by each kind
        raise NotImplementedError

    @property
    def point(self) -> str:
        """The grid point, as the left-out block names it."""
        return f"{self.map} {self.setting}"

    @property
    def store(self) -> str | None:
        """The embedding store the job reads: ``main`` (model.max_length), ``long`` (the
        long-context store) or None (synthetic rows)."""
        return "main" if self.data == "imdb" else None

    @property
    def mem_mb(self) -> int:
        """Host memory to request (MB)."""
        return max(256, -(-self.memory_bytes // resources.MB))

    @property
    def runtime(self) -> int:
        """Minutes to request: generous (5 x the estimate + 5 minutes)."""
        return int(5 + 5 * self.seconds / 60)

    @property
    def gpu(self) -> int:
        return 1 if self.device == "cuda" else 0

    def matches(self, **wildcards: Any) -> bool:
        mine = self.wildcards
        return all(mine.get(key) == str(value) for key, value in wildcards.items())


@dataclass(frozen=True)
class WSJob(Job):
    """A word-sensitivity job: a grid point and a chunk of its trials."""

    d: int
    n: int
    L: int | None
    trials: tuple[int, ...]
    study: str = "ws"  # ws (the paper's grids, ws.maps) or one of STUDIES

    @property
    def setting(self) -> str:
        return setting_name(self.map, self.d, self.n, self.L)

    @property
    def wildcards(self) -> dict[str, str]:
        return {"study": self.study, "map": self.map, "setting": self.setting, "chunk": str(self.chunk)}

    @property
    def point(self) -> str:
        return f"{self.map} {self.setting}" if self.study == "ws" else f"{self.study} {self.map} {self.setting}"

    @property
    def store(self) -> str | None:
        return "long" if self.study == "long_imdb" else super().store


@dataclass(frozen=True)
class GenJob(Job):
    """A generalisation job: a figure's point and a chunk of its simulations, each serving every
    (training, loss, penalty) search of the figure."""

    figure: str
    n: int
    N: int
    d: int
    simulations: tuple[int, ...]
    searches: tuple[tuple[str, str, float], ...]

    @property
    def setting(self) -> str:
        return gen_setting(self.map, self.n, self.N, self.d)

    @property
    def point(self) -> str:
        return f"{self.figure} {self.data} {self.setting}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"figure": self.figure, "gdata": self.data, "gsetting": self.setting, "chunk": str(self.chunk)}


def _chunks(count: int, per_job: int) -> list[tuple[int, ...]]:
    return [tuple(range(start, min(count, start + per_job))) for start in range(0, count, per_job)]


def _placed(estimate: resources.MemoryEstimate, device: str) -> tuple[int, int]:
    """(host bytes, device bytes) of a job whose arrays are ``estimate``, run on ``device``."""
    if device == "cuda":
        return CUDA_HOST_BYTES, estimate.bytes
    return estimate.job, estimate.job


# WS studies beyond the paper's grids (ws.maps, study "ws"): ordinary WS jobs, each study with its
# own results folder and table, so that the paper's figures are untouched
STUDIES = ("variants", "long_synthetic", "long_imdb", "positions")


@dataclass(frozen=True)
class Point:
    """One WS grid point of a study, with the settings its jobs share."""

    study: str
    map: str
    data: str  # imdb | synthetic
    d: int
    n: int
    L: int | None
    options: dict
    position: int | str
    trials: int
    per_job: int
    extra: dict = field(default_factory=dict)  # settings only a study has (profile, shared samples)


def _options(map_name: str, options: Mapping[str, Any] | None) -> tuple[dict, int | None]:
    """A grid's map options without DRF's depth, and the depth (DRF: the option L, default 2)."""
    opts = dict(options or {})
    if map_name != "drf" and registry.get(map_name).cost != "drf":
        return opts, None
    return {k: v for k, v in opts.items() if k != "L"}, int(opts.get("L", 2))


def _capped(ns: Iterable[int], map_name: str, max_n: Mapping[str, int]) -> list[int]:
    cap = max_n.get(map_name)
    return [n for n in ns if cap is None or n <= cap]


def variant_maps(section: dict) -> list[str]:
    """The maps of the variants section: every registered map for ``all`` (plugins included)."""
    return list(registry.names()) if section["maps"] == "all" else list(section["maps"])


def long_context_ns(section: dict, map_name: str, data: str) -> list[int]:
    """Context lengths of one long-context curve: the grid's n up to the map's ``max_n``; on IMDb
    also up to ``max_length`` (the encoder's position limit), and ``max_length`` itself."""
    ns = _capped(section["n"], map_name, section["max_n"])
    if data != "imdb":
        return ns
    limit = section["max_length"]
    cap = section["max_n"].get(map_name)
    return sorted({n for n in ns if n <= limit} | ({limit} if cap is None or cap >= limit else set()))


def ws_points(config: dict) -> list[Point]:
    """Every WS grid point: the paper's (``ws.maps``) and those of the studies (``variants``,
    ``long_context``, ``positions``)."""
    ws = config["ws"]
    points: list[Point] = []
    for map_name, grid in ws["maps"].items():
        if not grid:
            continue
        for d in grid["d"]:
            for n in grid["n"]:
                for L in grid.get("L", [None]):
                    points.append(Point("ws", map_name, ws["data"], d, n, L, dict(grid.get("options") or {}),
                                        ws["position"], ws["trials"], ws["trials_per_job"]))
    section = config.get("variants")
    if section:
        for map_name in variant_maps(section):
            opts, L = _options(map_name, section["options"].get(map_name))
            for n in _capped(section["n"], map_name, section["max_n"]):
                points.append(Point("variants", map_name, section["data"], section["d"], n, L, opts,
                                    section["position"], section["trials"], section["trials_per_job"]))
    section = config.get("long_context")
    if section:
        for data in section["data"]:
            for map_name in section["maps"]:
                opts, L = _options(map_name, section["options"].get(map_name))
                for n in long_context_ns(section, map_name, data):
                    points.append(Point(f"long_{data}", map_name, data, section["d"], n, L, opts,
                                        section["position"], section["trials"], section["trials_per_job"]))
    section = config.get("positions")
    if section:
        for map_name in section["maps"]:
            opts, L = _options(map_name, section["options"].get(map_name))
            # every position searched, on the same reviews for every map
            points.append(Point("positions", map_name, "imdb", section["d"], section["n"], L, opts, "all",
                                section["reviews"], section["reviews"], {"profile": True, "shared_samples": True}))
    return points


def ws_jobs(config: dict, limits: Limits, numerics_version: str = NUMERICS_VERSIONS["ws"]) -> list[WSJob]:
    """Every word-sensitivity job (``ws_points``: the paper's grids and the studies), with its params
    and estimates (``numerics_version``: ``wordsens.NUMERICS_VERSIONS["ws"]``, part of every job's params).

    The settings of ``ws`` (method, device, search, memory, ...) apply to every study."""
    ws = config["ws"]
    method = ws["method"]
    # ws.max_memory_gb lets DRF stream the layers that do not fit (None: every layer resident)
    budget = None if ws["max_memory_gb"] is None else int(ws["max_memory_gb"] * GB)
    jobs: list[WSJob] = []
    for pt in ws_points(config):
        spec = registry.get(pt.map)
        device = job_device(ws["device"], gpu=limits.gpu is not None, prefers_gpu=spec.cost == "drf")
        sampler = resources.choose_sampler(pt.map, position=pt.position, method=method)
        settings = {"position": pt.position, "method": method, "device": device, "min_tokens": ws["min_tokens"],
                    "max_memory_gb": ws["max_memory_gb"], "draw_on": ws["draw_on"], "search": dict(ws["search"]),
                    **({"options": pt.options} if pt.options else {}), **pt.extra}
        L = pt.L or 2
        estimate = resources.ws_memory(pt.map, pt.n, pt.d, L=L, k=pt.options.get("k"), method=method,
                                       sampler=sampler, budget=budget, options=pt.options)
        host, on_device = _placed(estimate, device)
        secs = resources.ws_seconds(pt.map, pt.n, pt.d, L=L, k=pt.options.get("k"), method=method, sampler=sampler,
                                    device=device, positions=pt.n if pt.position == "all" else 1, budget=budget,
                                    options=pt.options)
        label = data_label(config, pt.data, long=pt.study == "long_imdb")
        for chunk, trials in enumerate(_chunks(pt.trials, pt.per_job)):
            params = canonical({
                "map": pt.map, "d": pt.d, "n": pt.n, "L": pt.L, "trials": list(trials), "seed": config["seed"],
                "data": pt.data, "data_label": label, "settings": settings, "numerics_version": numerics_version,
            })
            jobs.append(WSJob("ws", pt.map, pt.data, chunk, device, host, on_device, secs * len(trials),
                              estimate.bytes, budget, params, pt.d, pt.n, pt.L, trials, pt.study))
    return jobs


def gen_searches(figure: str, fig: dict) -> tuple[tuple[str, str, float], ...]:
    """The (training, loss, penalty) searches every simulation of a figure runs."""
    if figure == "fig5":
        return tuple((t, "penalised", float(p)) for t in fig["trainings"] for p in fig["penalties"])
    return tuple((t, loss, 0.0) for t in fig["trainings"] for loss in fig["losses"])


def gen_jobs(config: dict, limits: Limits, numerics_version: str = NUMERICS_VERSIONS["gen"]) -> list[GenJob]:
    """Every generalisation job of ``config["gen"]`` (Figures 4 and 5), with its params and estimates
    (``numerics_version``: ``wordsens.NUMERICS_VERSIONS["gen"]``)."""
    gen = config["gen"]
    device = job_device(gen["device"], gpu=limits.gpu is not None)
    settings = {"position": gen["position"], "device": device, "min_tokens": gen["min_tokens"],
                "search": dict(gen["search"])}
    d = gen["d"]
    jobs: list[GenJob] = []
    for figure in ("fig4", "fig5"):
        fig = gen[figure]
        if not fig:
            continue
        searches = gen_searches(figure, fig)
        for data in gen["data"]:
            for map_name, ns in fig["maps"].items():
                for n in ns:
                    for N in fig["N"]:
                        estimate = resources.gen_memory(map_name, n, d, N)
                        host, on_device = _placed(estimate, device)
                        secs = resources.gen_seconds(map_name, n, d, N, searches=len(searches))
                        for chunk, sims in enumerate(_chunks(gen["simulations"], gen["simulations_per_job"])):
                            params = canonical({
                                "figure": figure, "map": map_name, "n": n, "N": N, "d": d, "data": data,
                                "data_label": data_label(config, data), "simulations": list(sims),
                                "searches": [list(s) for s in searches], "seed": config["seed"], "settings": settings,
                                "numerics_version": numerics_version,
                            })
                            jobs.append(GenJob("gen", map_name, data, chunk, device, host, on_device,
                                               secs * len(sims), estimate.bytes, None, params, figure, n, N, d,
                                               sims, searches))
    return jobs


# ----------------------------------------------------------------------------- the grid
WS_FIGURES = {"fig2_rf_drf": ("rf", "drf"), "fig3_raf_relu_raf": ("raf", "relu_raf")}
GEN_FIGURES = {"fig4_generalisation": "fig4", "fig5_penalised": "fig5"}


class Grid:
    """Every job of a configuration, split into those that fit ``limits`` and those left out.

    The workflow's input functions look jobs up by their output's wildcards (``job``), collect the
    chunk files of a table (``select``) and name what a figure is missing (``left_out``).
    """

    def __init__(self, config: dict, *, limits: Limits | None = None,
                 numerics_versions: Mapping[str, str] = NUMERICS_VERSIONS):
        self.limits = Limits.of(config) if limits is None else limits
        self.jobs: list[Job] = [*ws_jobs(config, self.limits, numerics_versions["ws"]),
                                *gen_jobs(config, self.limits, numerics_versions["gen"])]
        self.fit = [job for job in self.jobs if self.fits(job)]
        self.unfit = [job for job in self.jobs if not self.fits(job)]
        self._by_wildcards = {tuple(sorted(job.wildcards.items())): job for job in self.fit}

    def limit(self, device: str) -> int | None:
        """Bytes one job may use on ``device``; None: unknown (a GPU that is not visible here)."""
        return self.limits.gpu if device == "cuda" else self.limits.cpu

    def fits(self, job: Job) -> bool:
        limit = self.limit(job.device)
        return (limit is None or job.device_bytes <= limit) and (job.cap is None or job.arrays <= job.cap)

    def job(self, wildcards: Mapping[str, Any]) -> Job:
        """The job that writes the output with these wildcards (a Snakemake ``Wildcards`` object)."""
        key = tuple(sorted((name, str(value)) for name, value in wildcards.items()))
        try:
            return self._by_wildcards[key]
        except KeyError:
            raise LookupError(f"no job with wildcards {dict(key)} in this configuration's grid") from None

    def select(self, **wildcards: Any) -> list[Job]:
        """The jobs that fit and match ``wildcards`` (e.g. ``map="rf"``: every chunk of the RF table)."""
        return [job for job in self.fit if job.matches(**wildcards)]

    def ws_maps(self) -> list[str]:
        """Maps of the paper's grids (ws.maps) with at least one WS job that fits (each gets a table)."""
        return sorted({job.map for job in self.fit if isinstance(job, WSJob) and job.study == "ws"})

    def ws_figures(self) -> list[str]:
        """WS figures with at least one configured map, fitting or not (missing points are marked)."""
        configured = {job.map for job in self.jobs if isinstance(job, WSJob) and job.study == "ws"}
        return [stem for stem, maps in WS_FIGURES.items() if configured & set(maps)]

    def studies(self) -> list[str]:
        """The studies (``STUDIES``) with at least one job that fits (each gets a table)."""
        found = {job.study for job in self.fit if isinstance(job, WSJob)}
        return [study for study in STUDIES if study in found]

    def study_maps(self, *studies: str) -> list[str]:
        """The maps configured in ``studies`` (fitting or not), in registry order."""
        found = {job.map for job in self.jobs if isinstance(job, WSJob) and job.study in studies}
        return [name for name in registry.names() if name in found]

    def gen_tables(self) -> list[tuple[str, str]]:
        """(figure, data) pairs with at least one generalisation job that fits."""
        return sorted({(job.figure, job.data) for job in self.fit if isinstance(job, GenJob)})

    def left_out(self, **wildcards: Any) -> list[dict[str, Any]]:
        """The grid points left out (every chunk of them) among jobs matching ``wildcards``, with
        the memory they need: what figures and the report mark as not run."""
        seen: dict[str, dict[str, Any]] = {}
        for job in self.unfit:
            if job.matches(**wildcards):
                seen.setdefault(job.point, {"point": job.point, "map": job.map, "device": job.device,
                                            "needs_gb": round(job.device_bytes / GB, 1), **_values(job)})
        return list(seen.values())

    def left_out_message(self, *, fail: bool = False) -> str:
        """One block: the jobs left out, why (memory needed against allowed), and the ways out."""
        if not self.unfit:
            return ""
        points: dict[str, list[Job]] = {}
        for job in self.unfit:
            points.setdefault(job.point, []).append(job)
        lines = []
        for point, jobs in points.items():
            job = jobs[0]
            allowed = self.limit(job.device)
            if job.cap is not None and job.arrays > job.cap:
                need, allowed, where = job.arrays, job.cap, "ws.max_memory_gb (arrays)"
            else:
                need = job.device_bytes
                where = "the GPU (limits.gpu_memory_gb)" if job.device == "cuda" else "limits.memory_gb"
            lines.append(f"  {point} ({len(jobs)} job{'s' if len(jobs) > 1 else ''}): needs "
                         f"{need / GB:.1f} GB, {(allowed or 0) / GB:.1f} GB allowed by {where}")
        head = (f"{len(self.unfit)} job(s) cannot fit the memory one job may use here, so nothing runs "
                "(limits.unfit: fail):" if fail else
                f"{len(self.unfit)} job(s) left out: they need more memory than one job may use here "
                "(limits.unfit: skip runs everything else):")
        ways = ("Ways out: a cluster (snakemake --profile profiles/slurm, with limits.memory_gb set to the "
                "nodes' memory); a GPU for DRF (ws.device: auto or cuda where one is visible, or "
                "limits.gpu_memory_gb on a cluster's GPU nodes); a smaller d or n. ")
        ways += ("limits.unfit: skip runs the rest." if fail else
                 "limits.unfit: fail refuses to start while any job is left out.")
        return "\n".join([head, *lines, ways])


def _values(job: Job) -> dict[str, Any]:
    if isinstance(job, WSJob):
        return {"study": job.study, "data": job.data, "d": job.d, "n": job.n, "L": job.L}
    assert isinstance(job, GenJob)
    return {"figure": job.figure, "data": job.data, "n": job.n, "N": job.N, "d": job.d}


def failed_jobs(log_text: str) -> list[dict[str, str]]:
    """The failed jobs of a Snakemake log (its ``Error in rule`` blocks): rule, output and log
    files, in order, one entry per job (a retried job appears once)."""
    found: dict[str, dict[str, str]] = {}
    for block in re.split(r"\n(?=\S)", log_text):
        match = re.match(r"Error in rule (\S+):", block)
        if not match:
            continue
        fields = dict(re.findall(r"^ {4}(\w+): (.*)$", block, re.M))
        output = fields.get("output", "")
        log = re.sub(r" \(check log file\(s\) for error details\)$", "", fields.get("log", ""))
        found[output or f"{match.group(1)}:{fields.get('jobid', '')}"] = {"rule": match.group(1), "output": output,
                                                                         "log": log}
    return list(found.values())


def _group(job: Job) -> str:
    """The experiment of a job, as ``describe`` groups them: ``ws``, a study or a figure."""
    return job.figure if isinstance(job, GenJob) else job.study  # type: ignore[attr-defined]


def study_hours(grid: Grid) -> dict[str, float]:
    """Estimated CPU-hours of every planned job, per experiment (``ws``, each study, ``fig4``,
    ``fig5``), jobs left out included."""
    hours: dict[str, float] = {}
    for job in grid.jobs:
        hours[_group(job)] = hours.get(_group(job), 0.0) + job.seconds / 3600
    return hours


def describe(config: dict, limits: Limits | None = None) -> str:
    """Human summary: job counts, estimated hours, peak memory, where jobs run, what is left out."""
    grid = Grid(config, limits=limits)
    lines = ["jobs (word sensitivity: per study, map, grid point and chunk of trials; generalisation: per figure, "
             "data, map, n, N and chunk of simulations):"]
    groups: dict[str, list[Job]] = {}
    for job in grid.jobs:
        groups.setdefault(f"{_group(job)} {job.map} ({job.device})", []).append(job)
    for name in sorted(groups):
        mine = groups[name]
        hours = sum(job.seconds for job in mine) / 3600
        peak = max(job.device_bytes for job in mine) / GB
        lines.append(f"  {name:30s} {len(mine):5d} jobs  {hours:8.2f} hours  peak {peak:6.1f} GB")
    total_h = sum(job.seconds for job in grid.jobs) / 3600
    peak = max((job.device_bytes for job in grid.jobs), default=0) / GB
    lines.append(f"  {'total':30s} {len(grid.jobs):5d} jobs  {total_h:8.2f} hours  peak {peak:6.1f} GB")
    per = study_hours(grid)
    lines.append("CPU-hours per experiment: " + ", ".join(f"{key} {value:.2f}" for key, value in per.items()))
    beyond = sum(per.get(key, 0.0) for key in ("variants", "long_synthetic", "long_imdb"))
    if beyond:
        lines.append(f"variants + long_context: {beyond:.2f} CPU-hours (estimates; the defaults are sized to "
                     "stay within 1)")
    lines.append(f"memory per job allowed here: {grid.limits.cpu / GB:.1f} GB (limits.memory_gb), GPU: "
                 + (f"{grid.limits.gpu / GB:.1f} GB (limits.gpu_memory_gb)" if grid.limits.gpu is not None
                    else "none visible (limits.gpu_memory_gb)"))
    lines.append(grid.left_out_message(fail=config["limits"]["unfit"] == "fail") or "every job fits")
    return "\n".join(lines)
