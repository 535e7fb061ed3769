"""The plan of a configuration, before anything runs: which jobs its grid holds, which of them
fit, and the messages naming what is left out.

``Grid`` holds every word-sensitivity and generalisation job (``wordsens.pipeline.jobs``) of a
configuration loaded and checked by ``wordsens.pipeline.configuration``, with its params, memory,
runtime and device: the workflow looks jobs up by their wildcards. ``describe`` is what
``wordsens plan`` prints. Torch is not imported, except to ask a visible GPU for its free memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import NUMERICS_VERSIONS
from ..compute.costs import GB
from ..compute.placement import GPU_STARTUP
from ..compute.timing import Calibration
from ..data.inputs import store_summary
from ..maps import registry
from .calibrate import stored_calibration
from .jobs import GenJob, Job, WSJob, gen_jobs, ws_jobs
from .limits import Limits
from .paths import store_metas
from .points import STUDIES
from .swaps import SwapJob, swap_jobs
from .trained import TrainedJob, trained_jobs

__all__ = ["GEN_FIGURES", "WS_FIGURES", "Grid", "describe", "failed_jobs", "store_ns", "study_hours"]


# ----------------------------------------------------------------------------- the grid
WS_FIGURES = {"fig2_rf_drf": ("rf", "drf"), "fig3_raf_relu_raf": ("raf", "relu_raf")}
GEN_FIGURES = {"fig4_generalisation": "fig4", "fig5_penalised": "fig5"}


class Grid:
    """Every job of a configuration, split into those that fit ``limits`` (memory, and the
    calibrated wall time of ``estimate`` against ``limits.max_job_hours``) and those left out.

    The workflow's input functions look jobs up by their output's wildcards (``job``), collect the
    chunk files of a table (``select``) and name what a figure is missing (``left_out``).
    """

    def __init__(
        self,
        config: dict,
        *,
        limits: Limits | None = None,
        numerics_versions: Mapping[str, str] = NUMERICS_VERSIONS,
        calibration: Calibration | None = None,
    ):
        self.limits = Limits.of(config) if limits is None else limits
        # the time calibration (wordsens.pipeline.calibrate): the stored one, else the built-in one
        self.calibration = stored_calibration() if calibration is None else calibration
        self.jobs: list[Job] = [
            *ws_jobs(config, self.limits, numerics_versions["ws"]),
            *gen_jobs(config, self.limits, numerics_versions["gen"]),
            *trained_jobs(config, numerics_versions["trained"]),
            *swap_jobs(config, self.limits, numerics_versions.get("swaps", NUMERICS_VERSIONS["swaps"])),
        ]
        self.fit = [job for job in self.jobs if self.fits(job)]
        self.unfit = [job for job in self.jobs if not self.fits(job)]
        self._by_wildcards = {tuple(sorted(job.wildcards.items())): job for job in self.fit}

    def limit(self, device: str) -> int | None:
        """Bytes one job may use on ``device``; None: unknown (a GPU that is not visible here)."""
        return self.limits.gpu if device == "cuda" else self.limits.cpu

    def estimate(self, job: Job) -> float:
        """Expected wall seconds of ``job`` on this machine: its cost model's seconds through the
        calibration (``wordsens.compute.timing``); on a GPU its GPU work under the GPU's sharing and
        the start-up of a GPU job (``wordsens.compute.placement``, fitted on an H200)."""
        if job.device == "cuda":
            return GPU_STARTUP + job.seconds
        return self.calibration.of(job.family).predict(job.seconds)

    def runtime(self, job: Job) -> int:
        """Minutes a scheduler should grant ``job``: generous, 5 x the larger of its cost model's
        seconds and its calibrated ``estimate``, + 5 minutes (``Job.runtime`` on the model alone)."""
        return max(job.runtime, int(5 + 5 * self.estimate(job) / 60))

    def fits_time(self, job: Job) -> bool:
        """The job's ``estimate`` is within ``limits.max_job_hours`` (or there is no such limit)."""
        return self.limits.hours is None or self.estimate(job) <= self.limits.hours * 3600

    def fits_memory(self, job: Job) -> bool:
        """The job's memory estimate is within what one job may use on its device (and its cap)."""
        limit = self.limit(job.device)
        return (limit is None or job.device_bytes <= limit) and (job.cap is None or job.arrays <= job.cap)

    def fits(self, job: Job) -> bool:
        return self.fits_memory(job) and self.fits_time(job)

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

    def trained(self) -> list[TrainedJob]:
        """The trained study's jobs that fit (one per encoder layer), by layer."""
        return sorted((job for job in self.fit if isinstance(job, TrainedJob)), key=lambda job: job.layer)

    def swaps(self) -> list[SwapJob]:
        """The swaps study's jobs that fit (one per map and n), maps in registry order, then by n."""
        order = {name: i for i, name in enumerate(registry.names())}
        jobs = [job for job in self.fit if isinstance(job, SwapJob)]
        return sorted(jobs, key=lambda job: (order.get(job.map, len(order)), job.map, job.n))

    def gen_tables(self) -> list[tuple[str, str]]:
        """(figure, data) pairs with at least one generalisation job that fits."""
        return sorted({(job.figure, job.data) for job in self.fit if isinstance(job, GenJob)})

    def store_ns(self, store: str) -> list[int]:
        """The context lengths n of the planned jobs (fitting or not) that read the embedding store
        ``store`` (``main`` or ``long``), sorted: the store is checked at each
        (``wordsens.data.inputs.store_problems``)."""
        return sorted({job.n for job in self.jobs if job.store == store})  # type: ignore[attr-defined]

    def left_out(self, **wildcards: Any) -> list[dict[str, Any]]:
        """The grid points left out (every chunk of them) among jobs matching ``wildcards``, with
        the memory they need: what figures and the report mark as not run."""
        seen: dict[str, dict[str, Any]] = {}
        for job in self.unfit:
            if job.matches(**wildcards):
                seen.setdefault(
                    job.point,
                    {
                        "point": job.point,
                        "map": job.map,
                        "device": job.device,
                        "needs_gb": round(job.device_bytes / GB, 1),
                        # left out for its time alone: the hours it needs (figures name them)
                        **(
                            {"needs_hours": float(f"{self.estimate(job) / 3600:.2g}")}
                            if self.fits_memory(job) and not self.fits_time(job)
                            else {}
                        ),
                        **_values(job),
                    },
                )
        return list(seen.values())

    def left_out_message(self, *, fail: bool = False) -> str:
        """One block: the jobs left out, why (memory or time needed against allowed), and the ways out."""
        if not self.unfit:
            return ""
        points: dict[str, list[Job]] = {}
        for job in self.unfit:
            points.setdefault(job.point, []).append(job)
        lines = []
        for point, jobs in points.items():
            job = jobs[0]
            allowed = self.limit(job.device)
            reasons = []
            if job.cap is not None and job.arrays > job.cap:
                reasons.append(
                    f"needs {job.arrays / GB:.1f} GB, {job.cap / GB:.1f} GB allowed by ws.max_memory_gb (arrays)"
                )
            elif allowed is not None and job.device_bytes > allowed:
                where = "the GPU (limits.gpu_memory_gb)" if job.device == "cuda" else "limits.memory_gb"
                reasons.append(f"needs {job.device_bytes / GB:.1f} GB, {allowed / GB:.1f} GB allowed by {where}")
            if not self.fits_time(job):
                reasons.append(
                    f"about {_over(self.estimate(job) / 3600, self.limits.hours)} hours each, "
                    f"{self.limits.hours:g} allowed by limits.max_job_hours"
                )
            lines.append(f"  {point} ({len(jobs)} job{'s' if len(jobs) > 1 else ''}): " + "; ".join(reasons))
        head = (
            f"{len(self.unfit)} job(s) cannot fit the memory or time one job may use here, so nothing runs "
            "(limits.unfit: fail):"
            if fail
            else f"{len(self.unfit)} job(s) left out: they need more memory or time than one job may use here "
            "(limits.unfit: skip runs everything else):"
        )
        ways = (
            "Ways out: a cluster (snakemake --profile profiles/slurm, with limits.cluster_memory_gb in "
            "the profile set to the nodes' memory; it lifts limits.max_job_hours: auto); a GPU for DRF "
            "(ws.device: auto or cuda where one is visible, or limits.gpu_memory_gb on a cluster's GPU "
            "nodes); a smaller d or n; a larger limits.max_job_hours (null: no time limit). "
        )
        ways += (
            "limits.unfit: skip runs the rest."
            if fail
            else "limits.unfit: fail refuses to start while any job is left out."
        )
        return "\n".join([head, *lines, ways])


def _over(hours: float, limit: float | None) -> str:
    """``hours`` to two significant digits, or as many more as it takes to print it above ``limit``
    (0.504 h against 0.5 allowed reads 0.504, not 0.5)."""
    for digits in range(2, 6):
        text = f"{hours:.{digits}g}"
        if limit is None or float(text) > limit:
            return text
    return text


def _values(job: Job) -> dict[str, Any]:
    if isinstance(job, SwapJob):
        return {"study": job.study, "data": job.data, "d": job.d, "n": job.n}
    if isinstance(job, TrainedJob):
        return {"study": job.study, "data": job.data, "layer": job.layer}
    if isinstance(job, WSJob):
        return {"study": job.study, "data": job.data, "d": job.d, "n": job.n, **job.swept}
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
        found[output or f"{match.group(1)}:{fields.get('jobid', '')}"] = {
            "rule": match.group(1),
            "output": output,
            "log": log,
        }
    return list(found.values())


def _group(job: Job) -> str:
    """The experiment of a job, as ``describe`` groups them: ``ws``, a study or a figure."""
    return job.figure if isinstance(job, GenJob) else job.study  # type: ignore[attr-defined]


def study_hours(grid: Grid) -> dict[str, float]:
    """Expected wall hours of the jobs that fit, per experiment (``ws``, each study, ``fig4``,
    ``fig5``, ``trained``): ``Grid.estimate`` (calibrated), added up; jobs left out not counted."""
    hours: dict[str, float] = {}
    for job in grid.fit:
        hours[_group(job)] = hours.get(_group(job), 0.0) + grid.estimate(job) / 3600
    return hours


def store_ns(config: dict, store: str) -> list[int]:
    """``Grid.store_ns`` of a configuration, without measuring this machine (the embedding job)."""
    return Grid(config, limits=Limits(cpu=0, gpu=None)).store_ns(store)


def describe(config: dict, limits: Limits | None = None, *, grid: Grid | None = None) -> str:
    """Human summary: job counts, expected hours (calibrated: ``Grid.estimate``), peak memory, where
    jobs run, what is left out (``grid``: a planned grid of ``config``, else planned here)."""
    grid = Grid(config, limits=limits) if grid is None else grid
    lines = [
        "jobs (word sensitivity: per study, map, grid point and chunk of trials; generalisation: per figure, "
        "data, map, n, N and chunk of simulations; hours: their expected wall time on this machine, added up):"
    ]
    groups: dict[str, list[Job]] = {}
    for job in grid.jobs:
        groups.setdefault(f"{_group(job)} {job.map} ({job.device})", []).append(job)
    for name in sorted(groups):
        mine = groups[name]
        hours = sum(grid.estimate(job) for job in mine) / 3600
        peak = max(job.device_bytes for job in mine) / GB
        lines.append(f"  {name:30s} {len(mine):5d} jobs  {hours:8.2f} hours  peak {peak:6.1f} GB")
    total_h = sum(grid.estimate(job) for job in grid.jobs) / 3600
    peak = max((job.device_bytes for job in grid.jobs), default=0) / GB
    lines.append(f"  {'total':30s} {len(grid.jobs):5d} jobs  {total_h:8.2f} hours  peak {peak:6.1f} GB")
    per = study_hours(grid)
    lines.append(
        "job-hours per experiment (calibrated; the jobs that fit): "
        + ", ".join(f"{key} {value:.2f}" for key, value in per.items())
    )
    beyond = sum(per.get(key, 0.0) for key in ("variants", "long_synthetic", "long_imdb"))
    if beyond:
        lines.append(
            f"variants + long_context: {beyond:.2f} job-hours "
            "(the defaults are sized to stay within about 1.2 on a 2-core laptop)"
        )
    lines.append(
        f"memory per job allowed here: {grid.limits.cpu / GB:.1f} GB (limits.memory_gb), GPU: "
        + (
            f"{grid.limits.gpu / GB:.1f} GB (limits.gpu_memory_gb)"
            if grid.limits.gpu is not None
            else "none visible (limits.gpu_memory_gb)"
        )
    )
    lines.append(grid.left_out_message(fail=config["limits"]["unfit"] == "fail") or "every job fits")
    for store, meta in store_metas(config).items():  # the inputs of the stores made already (docs/inputs.md)
        lines += store_summary(meta, grid.store_ns(store), config["data"]["min_distinct_share"], f"{store} store")
    return "\n".join(lines)
