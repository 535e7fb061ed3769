"""The jobs of a configuration's grid, with their resource estimates and devices.

``ws_jobs`` and ``gen_jobs`` turn a validated configuration (``wordsens.pipeline.configuration``)
into one job per grid point (``wordsens.pipeline.points``) and chunk of trials, each with its params
(what its numbers depend on), its memory and runtime estimates (``wordsens.compute.costs``) and the
device it runs on under the ``Limits`` of the machine or cluster (``wordsens.pipeline.limits``).
``wordsens.pipeline.grid.Grid`` looks them up by wildcards. Torch is not imported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import NUMERICS_VERSIONS
from ..compute import costs
from ..data.models import model_tag
from ..maps import registry
from ..seeds import canonical
from .limits import Limits
from .placing import split_trials, work_placement, ws_placement
from .points import store_of, ws_points

__all__ = [
    "CUDA_CONTEXT_BYTES",
    "GenJob",
    "Job",
    "WSJob",
    "data_label",
    "gen_jobs",
    "gen_searches",
    "gen_setting",
    "gpu_mem_mb",
    "job_device",
    "search_load",
    "setting_name",
    "ws_jobs",
]

GB = costs.GB
# Host memory of a job whose arrays live on a GPU: its Python process, the Snakemake job process
# and torch's CUDA context and kernels (1-2 GB resident; not measured here: the CI machine has no GPU).
CUDA_HOST_BYTES = costs.PROCESS_OVERHEAD + costs.JOBSTEP_OVERHEAD + 2 * GB


# GPU memory a job's process holds beyond its arrays: the CUDA context, library workspaces and the
# caching allocator's slack (0.3-0.6 GB on recent drivers, 1 GB to be safe; not measured here: the
# CI machine has no GPU). Every job sharing a GPU holds its own.
CUDA_CONTEXT_BYTES = 1 * GB


# ----------------------------------------------------------------------------- devices
def job_device(setting: str, limits: Limits, *, prefers_gpu: bool = True, gpu_pays: bool | None = None) -> str:
    """Where a job runs: ``cpu``/``cuda`` as set; ``auto``: ``cuda`` when a GPU is known
    (``limits.gpu``) and either the GPU is shared by the jobs of one machine (``limits.shared_gpu``:
    the jobs whose cost model says the GPU pays, ``gpu_pays`` from ``wordsens.compute.placement``;
    None: every job, each taking its ``gpu_mem_mb``) or the job gains enough to be granted a GPU of its
    own on a cluster (``prefers_gpu``: the map's cost model, DRF among the built-in maps), else
    ``cpu``. The one rule for every job kind: WS, generalisation, swaps, embeddings, probes."""
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


# ----------------------------------------------------------------------------- jobs
def setting_name(d: int, n: int, swept: Mapping[str, int] | None = None) -> str:
    """The path component of one WS grid point: ``d768_n50``, and each swept option of its map
    (``MapSpec.sweep``) after it: ``d768_n50_L2`` for DRF's depth."""
    return f"d{d}_n{n}" + "".join(f"_{key}{value}" for key, value in (swept or {}).items())


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
class Job(ABC):
    """One job of the grid, run by rule ``kind`` (``ws`` or ``gen``); Snakemake finds it by the
    wildcards of its output path. Each kind (``WSJob``, ``GenJob``) names its setting and wildcards."""

    kind: str
    map: str
    data: str  # imdb | synthetic
    chunk: int
    device: str  # cpu | cuda
    memory_bytes: int  # host memory: arrays on CPU (on a GPU: none), its process, the Snakemake job process
    device_bytes: int  # what must fit the device: memory_bytes on CPU, the arrays and CUDA context on a GPU
    seconds: float  # estimated wall time of the whole chunk
    arrays: int  # peak bytes of its arrays (wordsens.compute.costs estimates)
    cap: int | None  # bytes of arrays its memory setting allows (ws.max_memory_gb), None: no setting
    params: dict = field(compare=False, repr=False)  # the configuration slice the job depends on

    @property
    @abstractmethod
    def setting(self) -> str:
        """The grid point's folder name, e.g. ``d768_n50_L2``."""

    @property
    @abstractmethod
    def wildcards(self) -> dict[str, str]:
        """The wildcards of the job's output path."""

    @property
    @abstractmethod
    def key(self) -> str:
        """The job's output path below the results folder without its suffix, as its benchmark
        file is named below ``benchmarks/`` (``ws/rf/d768_n90/chunk0``)."""

    @property
    def family(self) -> str:
        """The job's family in the time calibration (``wordsens.compute.timing``): ``ws:rf``, ``gen:raf``."""
        return f"{self.kind}:{self.map}"

    @property
    def point(self) -> str:
        """The grid point, as the left-out block names it."""
        return f"{self.map} {self.setting}"

    @property
    def store(self) -> str | None:
        """The embedding store the job reads: ``main`` (model.max_length), ``long`` (the
        long-context store) or None (synthetic rows): ``points.store_of``."""
        return store_of(self.data)

    @property
    @abstractmethod
    def rows(self) -> int:
        """The rows the job writes: its table must hold exactly these (``wordsens.io.concatenate``)."""

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


@dataclass(frozen=True)
class WSJob(Job):
    """A word-sensitivity job: a grid point and a chunk of its trials."""

    d: int
    n: int
    swept: dict  # the values of the map's swept options (``MapSpec.sweep``): DRF's depth L
    trials: tuple[int, ...]
    study: str = "ws"  # ws (the paper's grids, ws.maps) or one of STUDIES

    @property
    def setting(self) -> str:
        return setting_name(self.d, self.n, self.swept)

    @property
    def wildcards(self) -> dict[str, str]:
        return {"study": self.study, "map": self.map, "setting": self.setting, "chunk": str(self.chunk)}

    @property
    def key(self) -> str:
        return f"{self.study}/{self.map}/{self.setting}/chunk{self.chunk}"

    @property
    def point(self) -> str:
        return f"{self.map} {self.setting}" if self.study == "ws" else f"{self.study} {self.map} {self.setting}"

    @property
    def rows(self) -> int:
        """One row per trial, or per trial and position where every position is searched."""
        return len(self.trials) * (self.n if self.params["settings"]["position"] == "all" else 1)

    @property
    def store(self) -> str | None:
        return store_of(self.data, self.study)


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
    def rows(self) -> int:
        """One row per simulation and search."""
        return len(self.simulations) * len(self.searches)

    @property
    def wildcards(self) -> dict[str, str]:
        return {"figure": self.figure, "gdata": self.data, "gsetting": self.setting, "chunk": str(self.chunk)}

    @property
    def key(self) -> str:
        return f"gen/{self.figure}/{self.data}/{self.setting}/chunk{self.chunk}"


def _chunks(count: int, per_job: int) -> list[tuple[int, ...]]:
    return [tuple(range(start, min(count, start + per_job))) for start in range(0, count, per_job)]


def _placed(estimate: costs.MemoryEstimate, device: str) -> tuple[int, int]:
    """(host bytes, device bytes) of a job whose arrays are ``estimate``, run on ``device``."""
    if device == "cuda":
        return CUDA_HOST_BYTES, estimate.bytes + CUDA_CONTEXT_BYTES
    return estimate.job, estimate.job


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
        sampler = spec.choose_sampler(position=pt.position, method=method)
        options = {**pt.options, **pt.swept}
        positions = pt.n if pt.position == "all" else 1
        model = spec.ws_seconds(  # one trial on the CPU: the cost model
            pt.n, pt.d, options, method=method, sampler=sampler, device="cpu", positions=positions, budget=budget,
            max_steps=ws["search"]["max_steps"],
        )  # fmt: skip
        placed = ws_placement(ws, limits, spec, f"ws:{pt.map}", model, positions)
        gpu_pays = placed.pays(pt.per_job)
        device = job_device(ws["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=gpu_pays)
        dtype = placed.dtype(device)
        settings = {
            "position": pt.position,
            "method": method,
            "device": device,
            **({"dtype": dtype} if dtype else {}),
            "min_tokens": ws["min_tokens"],
            "max_memory_gb": ws["max_memory_gb"],
            "draw_on": ws["draw_on"],
            "search": dict(ws["search"]),
            **({"options": pt.options} if pt.options else {}),
            **pt.extra,
        }
        typed = {"dtype": dtype} if dtype else {}
        estimate = spec.ws_memory(pt.n, pt.d, options, method=method, sampler=sampler, budget=budget, **typed)
        host, on_device = _placed(estimate, device)
        secs = placed.seconds(device)
        per_job = split_trials(pt.trials, pt.per_job, on_device, device, limits, spec.cost.prefers_gpu)
        label = data_label(config, pt.data, long=pt.study == "long_imdb")
        for chunk, trials in enumerate(_chunks(pt.trials, per_job)):
            params = canonical(
                {
                    "map": pt.map,
                    "d": pt.d,
                    "n": pt.n,
                    "swept": pt.swept,
                    "trials": list(trials),
                    "seed": config["seed"],
                    "data": pt.data,
                    "data_label": label,
                    "settings": settings,
                    "numerics_version": numerics_version,
                }
            )
            jobs.append(
                WSJob(
                    "ws",
                    pt.map,
                    pt.data,
                    chunk,
                    device,
                    host,
                    on_device,
                    secs * len(trials),
                    estimate.bytes,
                    budget,
                    params,
                    pt.d,
                    pt.n,
                    pt.swept,
                    trials,
                    pt.study,
                )
            )
    return jobs


# Figure 5's penalised searches at the paper's widths run to the step cap where Figure 4's stop by their
# rule: measured (2026-11-27, d = 768, n 40-120, N = 400; synthetic) 72-100% of them at the cap of 500,
# 2.2-3.4 x the seconds of a Figure 4 search of the same map and n (3.2-4.1 x at d = 384 on MiniLM's
# IMDb embeddings, 78% at the cap); at the demo's d = 16 they stop after 65-81 steps, like Figure 4's.
PENALISED_SEARCH_WEIGHT = 3.0  # at the cap it was measured with, the default gen.search.max_steps:
MEASURED_CAP = 500  # (null there: search_many's default, the same 500)
PENALISED_CAPPED_FROM_D = 128  # the width from which they are priced at the cap (measured: 16 no, 384 yes)
# Smooth maps' penalised searches take Levenberg-Marquardt steps (SearchSettings.least_squares) and stop by
# their rule: measured (2026-11-27, RAF, synthetic, 1 thread) 1.23-2.11 x the seconds of a Figure 4 search
# at d = 768 (n 40-120, N = 400), 0.98-1.81 at d = 128, 1.12-1.23 at the demo's d = 16.
LEAST_SQUARES_SEARCH_WEIGHT = 1.75


def search_load(
    searches: tuple[tuple[str, str, float], ...], d: int, max_steps: int | None, least_squares: bool = False
) -> float:
    """The searches of one simulation in units of a Figure 4 search (the cost models' ``searches``): a
    penalised search at ``d >= PENALISED_CAPPED_FROM_D`` weighs ``LEAST_SQUARES_SEARCH_WEIGHT`` where the
    map takes Levenberg-Marquardt steps (``least_squares``), else ``PENALISED_SEARCH_WEIGHT``, scaled by
    ``gen.search.max_steps`` / ``MEASURED_CAP`` (the ascent runs to the cap; None: the default cap)."""
    cap = max_steps or MEASURED_CAP
    wide = d >= PENALISED_CAPPED_FROM_D
    weight = 1.0
    if wide:
        weight = LEAST_SQUARES_SEARCH_WEIGHT if least_squares else PENALISED_SEARCH_WEIGHT * cap / MEASURED_CAP
    return sum(weight if loss == "penalised" else 1.0 for _, loss, _ in searches)


def gen_searches(figure: str, fig: dict) -> tuple[tuple[str, str, float], ...]:
    """The (training, loss, penalty) searches every simulation of a figure runs."""
    if figure == "fig5":
        return tuple((t, "penalised", float(p)) for t in fig["trainings"] for p in fig["penalties"])
    return tuple((t, loss, 0.0) for t in fig["trainings"] for loss in fig["losses"])


def gen_jobs(config: dict, limits: Limits, numerics_version: str = NUMERICS_VERSIONS["gen"]) -> list[GenJob]:
    """Every generalisation job of ``config["gen"]`` (Figures 4 and 5), with its params and estimates
    (``numerics_version``: ``wordsens.NUMERICS_VERSIONS["gen"]``)."""
    gen = config["gen"]
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
                    spec = registry.get(map_name)
                    for N in fig["N"]:
                        options = dict(gen["options"].get(map_name) or {})
                        load = search_load(searches, d, gen["search"]["max_steps"], spec.settings.least_squares)
                        model = spec.gen_seconds(n, d, N, options, searches=load)
                        placed = work_placement(limits, f"gen:{map_name}", model, len(searches))
                        pays = placed.pays(gen["simulations_per_job"])
                        device = job_device(gen["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=pays)
                        settings = {
                            "position": gen["position"],
                            "device": device,
                            "min_tokens": gen["min_tokens"],
                            "search": dict(gen["search"]),
                        }
                        estimate = spec.gen_memory(n, d, N, options)
                        host, on_device = _placed(estimate, device)
                        secs = placed.seconds(device)
                        for chunk, sims in enumerate(_chunks(gen["simulations"], gen["simulations_per_job"])):
                            params = canonical(
                                {
                                    "figure": figure,
                                    "map": map_name,
                                    "n": n,
                                    "N": N,
                                    "d": d,
                                    "data": data,
                                    "data_label": data_label(config, data),
                                    "simulations": list(sims),
                                    "searches": [list(s) for s in searches],
                                    "seed": config["seed"],
                                    "settings": {**settings, **({"options": options} if options else {})},
                                    "numerics_version": numerics_version,
                                }
                            )
                            jobs.append(
                                GenJob(
                                    "gen",
                                    map_name,
                                    data,
                                    chunk,
                                    device,
                                    host,
                                    on_device,
                                    secs * len(sims),
                                    estimate.bytes,
                                    None,
                                    params,
                                    figure,
                                    n,
                                    N,
                                    d,
                                    sims,
                                    searches,
                                )
                            )
    return jobs
