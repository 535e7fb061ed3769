"""The word-sensitivity jobs every WS study shares (the paper's grids, the variants, long contexts,
per-position profiles): a grid ``Point`` with the settings its jobs share, the jobs' typed settings
(``WSSettings`` with ``WSRun`` and ``SearchOptions``), ``WSJob`` (one chunk of a point's trials) and
``ws_jobs`` (a study's points as jobs with their estimates), the rule that runs them (``WS_RULE``: one
job's trials by ``wordsens.experiments.ws_job``), and the checks of a grid's maps (``map_problems``,
``sweep_problems``). The settings of the configuration's ``ws`` section (method, device, search,
memory, threads) apply to every WS study. Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..compute import costs
from ..compute.limits import Limits
from ..compute.placement import GpuRate
from ..maps import registry
from .jobs import Job, JobRule, Settings, Store, chunks, data_label, job_device
from .jobs import placed as placed_bytes
from .placing import split_trials, ws_placement

__all__ = [
    "WS_NUMERICS",
    "WS_RULE",
    "Point",
    "SearchOptions",
    "WSJob",
    "WSRun",
    "WSSettings",
    "capped_ns",
    "map_problems",
    "options_of",
    "setting_name",
    "sweep_problems",
    "sweeps",
    "ws_jobs",
]

# The numerics of word-sensitivity estimates (wordsens.search): bump the version when a change of the
# searches changes their results (docs/changelog.md lists what each version changed).
WS_NUMERICS = ("ws", "ws-3")


def setting_name(d: int, n: int, swept: Mapping[str, int] | None = None) -> str:
    """The path component of one WS grid point: ``d768_n50``, and each swept option of its map
    (``MapSpec.sweep``) after it: ``d768_n50_L2`` for DRF's depth."""
    return f"d{d}_n{n}" + "".join(f"_{key}{value}" for key, value in (swept or {}).items())


@dataclass(frozen=True, kw_only=True)
class Point:
    """One WS grid point of a study, with the settings its jobs share: the results ``folder`` its jobs
    write below and the ``table`` they feed (``profile``: one row per position; ``shared_samples``: trial
    t draws the same review for every map)."""

    study: str
    folder: str
    table: str
    map: str
    data: str  # imdb | synthetic
    d: int
    n: int
    swept: Mapping[str, int]  # the values of the map's swept options (MapSpec.sweep): DRF's depth L
    options: Mapping[str, Any]
    position: int | str
    trials: int
    per_job: int
    store: Store | None = None  # the embedding store it reads (IMDb rows), None: synthetic rows
    profile: bool = False
    shared_samples: bool = False


def options_of(map_name: str, options: Mapping[str, Any] | None) -> tuple[dict, dict]:
    """A study's map options without the swept ones (``MapSpec.sweep``), and the swept ones' values
    (defaults where absent): they name the jobs and are columns of the tables."""
    spec = registry.get(map_name)
    opts = dict(options or {})
    return {k: v for k, v in opts.items() if k not in spec.sweep}, spec.swept(opts)


def sweeps(map_name: str, grid: Mapping[str, Any]) -> list[dict]:
    """Every combination of a grid's swept options (``MapSpec.sweep``: the grid lists each one's values;
    one not listed runs its default), in the order of the job names."""
    spec = registry.get(map_name)
    combos: list[dict] = [{}]
    for key in spec.sweep:
        values = grid.get(key) or [spec.swept()[key]]
        combos = [{**combo, key: int(v)} for combo in combos for v in values]
    return combos


def capped_ns(ns: Iterable[int], map_name: str, max_n: Mapping[str, int]) -> list[int]:
    """The grid's n up to the map's entry in a section's ``max_n`` (all of them without one)."""
    cap = max_n.get(map_name)
    return [n for n in ns if cap is None or n <= cap]


# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True, kw_only=True)
class SearchOptions(Settings):
    """The settings of the default search (``ws.search``); None: the map's default."""

    restarts: int | None = None
    max_steps: int | None = None
    tol: float | None = None
    patience: int | None = None

    def given(self) -> dict[str, Any]:
        """The options set (not None), as ``wordsens.search.estimate`` takes them."""
        return {key: value for key, value in self.params().items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class WSRun(Settings):
    """How one job's trials run: the perturbed ``position`` (or ``all``), the ``method``, the ``device``
    and the search's working ``dtype`` there (None: the map's own), whether reviews need n tokens
    (``min_tokens``), DRF's memory budget, where RF/DRF weights are drawn, the search's settings, the map's
    options, and two settings of the positions study (``profile``: one row per position; ``shared_samples``:
    trial t draws the same review for every map)."""

    OMIT_WHEN: ClassVar[Mapping[str, Any]] = {"options": {}, "profile": False, "shared_samples": False, "dtype": None}

    position: int | str
    method: str
    device: str
    dtype: str | None = None  # the search's working dtype where it is not the map's own (ws.dtype)
    min_tokens: bool
    max_memory_gb: float | None
    draw_on: str
    search: SearchOptions
    options: Mapping[str, Any] = field(default_factory=dict)
    profile: bool = False
    shared_samples: bool = False


@dataclass(frozen=True, kw_only=True)
class WSSettings(Settings):
    """What a word-sensitivity job's rows depend on: the map, d, n and swept options, its trials, the
    seed, the data (and its label), how the trials run and the numerics version."""

    map: str
    d: int
    n: int
    swept: Mapping[str, int]
    trials: tuple[int, ...]
    seed: int
    data: str
    data_label: str
    settings: WSRun
    numerics_version: str


# ----------------------------------------------------------------------------- the job and its rule


def _ws_constraints() -> dict[str, str]:
    return {
        "map": "|".join(registry.names()),
        "setting": r"d\d+_n\d+" + "(_(" + "|".join(registry.swept_options()) + r")\d+)*",
        "chunk": r"\d+",
    }


_FIXED_WS = 2.33
WS_RULE = JobRule(
    name="ws",
    output="{study}/{map}/{setting}/chunk{chunk}",
    constraints=_ws_constraints,
    # the body: the trials of one job as rows (above this module, with the searches it runs)
    run="wordsens.experiments.rows:ws_job",
    summary=("trial", "lower", "upper", "steps", "search_seconds"),
    coefficients={
        "ws:*": (_FIXED_WS, 1.9),
        "ws:rf": (_FIXED_WS, 0.58),
        "ws:drf": (_FIXED_WS, 1.9),
        "ws:raf": (_FIXED_WS, 0.73),
        "ws:relu_raf": (_FIXED_WS, 1.14),
        "ws:block": (_FIXED_WS, 0.45),
        "ws:linear_raf": (_FIXED_WS, 0.28),
        "ws:mh_raf": (_FIXED_WS, 0.34),
        "ws:sigmoid_raf": (_FIXED_WS, 0.59),
    },
    gpu_rates={  # fitted on the H200 run (docs/gpu.md); DRF's are its single jobs' in each dtype
        "ws:rf": GpuRate(0.306, 0.00316),
        "ws:drf": GpuRate(0.0, 0.00946),
        "ws:drf:bfloat16": GpuRate(0.0, 0.00129),
        "ws:raf": GpuRate(0.186, 0.0355),
        "ws:relu_raf": GpuRate(0.0503, 0.0282),
        "ws:block": GpuRate(0.174, 0.0),
        "ws:linear_raf": GpuRate(0.15, 0.0),
        "ws:mh_raf": GpuRate(0.119, 0.0078),
        "ws:sigmoid_raf": GpuRate(0.119, 0.0),
    },
)


@dataclass(frozen=True, kw_only=True)
class WSJob(Job):
    """A word-sensitivity job: a grid point of a study and a chunk of its trials."""

    RULE: ClassVar[JobRule] = WS_RULE

    map: str
    d: int
    n: int
    swept: Mapping[str, int]  # the values of the map's swept options (MapSpec.sweep): DRF's depth L
    trials: tuple[int, ...]
    folder: str  # the results folder its file is written below (the path's first component)
    feeds: str  # the table its rows go to
    reads: str | None = None  # the embedding store it reads (Store.name), None: synthetic rows
    settings: WSSettings = field(compare=False, repr=False)

    @property
    def setting(self) -> str:
        return setting_name(self.d, self.n, self.swept)

    @property
    def wildcards(self) -> dict[str, str]:
        return {"study": self.folder, "map": self.map, "setting": self.setting, "chunk": str(self.chunk)}

    @property
    def table(self) -> str:
        return self.feeds

    @property
    def group(self) -> str:
        return self.folder

    @property
    def point(self) -> str:
        return f"{self.map} {self.setting}" if self.folder == "ws" else f"{self.folder} {self.map} {self.setting}"

    @property
    def rows(self) -> int:
        """One row per trial, or per trial and position where every position is searched."""
        return len(self.trials) * (self.n if self.settings.settings.position == "all" else 1)

    @property
    def store(self) -> str | None:
        return self.reads

    def values(self) -> dict[str, Any]:
        return {"study": self.folder, "data": self.data, "d": self.d, "n": self.n, **self.swept}


def ws_jobs(config: dict, points: Iterable[Point], limits: Limits, version: str) -> list[WSJob]:
    """The jobs of a study's ``points``: one per chunk of each point's trials, with its settings and
    estimates (memory and seconds from the map's cost model: ``MapSpec.ws_memory``, ``ws_seconds``),
    planned on its device under ``limits``; ``version``: the numerics version, part of every job's
    params. The settings of ``ws`` (method, device, search, memory, draw_on, threads) apply to every
    study."""
    ws = config["ws"]
    method = ws["method"]
    # ws.max_memory_gb lets DRF stream the layers that do not fit (None: every layer resident)
    budget = None if ws["max_memory_gb"] is None else int(ws["max_memory_gb"] * costs.GB)
    jobs: list[WSJob] = []
    for pt in points:
        spec = registry.get(pt.map)
        sampler = spec.choose_sampler(position=pt.position, method=method)
        options = {**pt.options, **pt.swept}
        positions = pt.n if pt.position == "all" else 1
        model = spec.ws_seconds(  # one trial on the CPU: the cost model
            pt.n, pt.d, options, method=method, sampler=sampler, device="cpu", positions=positions, budget=budget,
            max_steps=ws["search"]["max_steps"],
        )  # fmt: skip
        placed = ws_placement(ws, limits, spec, f"ws:{pt.map}", model, positions)
        device = job_device(ws["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=placed.pays(pt.per_job))
        dtype = placed.dtype(device)
        run = WSRun(
            position=pt.position,
            method=method,
            device=device,
            dtype=dtype,
            min_tokens=ws["min_tokens"],
            max_memory_gb=ws["max_memory_gb"],
            draw_on=ws["draw_on"],
            search=SearchOptions.of(ws["search"]),
            options=dict(pt.options),
            profile=pt.profile,
            shared_samples=pt.shared_samples,
        )
        typed = {"dtype": dtype} if dtype else {}
        estimate = spec.ws_memory(pt.n, pt.d, options, method=method, sampler=sampler, budget=budget, **typed)
        host, on_device = placed_bytes(estimate, device)
        secs = placed.seconds(device)
        per_job = split_trials(pt.trials, pt.per_job, on_device, device, limits, spec.cost.prefers_gpu)
        label = data_label(config, pt.data, pt.store)
        for chunk, trials in enumerate(chunks(pt.trials, per_job)):
            settings = WSSettings(
                map=pt.map,
                d=pt.d,
                n=pt.n,
                swept=dict(pt.swept),
                trials=trials,
                seed=config["seed"],
                data=pt.data,
                data_label=label,
                settings=run,
                numerics_version=version,
            )
            jobs.append(
                WSJob(
                    study=pt.study,
                    map=pt.map,
                    data=pt.data,
                    chunk=chunk,
                    device=device,
                    memory_bytes=host,
                    device_bytes=on_device,
                    seconds=secs * len(trials),
                    arrays=estimate.bytes,
                    cap=budget,
                    threads=ws["threads"],
                    settings=settings,
                    d=pt.d,
                    n=pt.n,
                    swept=dict(pt.swept),
                    trials=trials,
                    folder=pt.folder,
                    feeds=pt.table,
                    reads=None if pt.store is None else pt.store.name,
                )
            )
    return jobs


# ----------------------------------------------------------------------------- checks of a grid's maps


def map_problems(key: str, map_name: str, options: Mapping[str, Any] | None, ds: Iterable[int]) -> list[str]:
    """An unregistered map, a map of a pre-trained checkpoint (its input is the hidden states entering
    its layer, not a grid's samples), or options the map refuses at some d (e.g. heads not dividing d)."""
    known = registry.names()
    if map_name not in known:
        return [
            f"{key}: unknown map {map_name!r}; registered: {', '.join(known)} (a plugin's map needs its module "
            "or .py file in plugins:)"
        ]
    spec = registry.get(map_name)
    if spec.checkpoint:
        return [
            f"{key}: {map_name} is a pre-trained checkpoint's layer, whose input is the hidden states entering "
            "that layer, not this grid's samples; remove it here and run it in the study of a pre-trained "
            f"encoder's layers (docs/studies.md) or with wordsens ws --map {map_name}"
        ]
    try:
        values = spec.option_values(options)
        if spec.shapes is not None:
            for d in ds:
                spec.shapes(2, d, **values)
    except (ValueError, TypeError) as err:
        return [f"{key}: {err}"]
    return []


def sweep_problems(key: str, map_name: str, grid: Mapping[str, Any]) -> list[str]:
    """A grid's lists beside d, n and options must name options the map sweeps (``MapSpec.sweep``)."""
    if map_name not in registry.names():
        return []  # map_problems names it
    spec = registry.get(map_name)
    sweeps_ = ", ".join(spec.sweep) or "none"
    out = [
        f"{key}.{name}: {map_name} does not sweep an option {name!r} (it sweeps: {sweeps_}; d, n and options are "
        "the grid's other keys)"
        for name in grid
        if name not in ("d", "n", "options") and name not in spec.sweep
    ]
    out += [
        f"{key}: {name} is swept by the grid ({key}.{name}), not set in {key}.options"
        for name in (grid.get("options") or {})
        if name in spec.sweep and name in grid
    ]
    return out
