"""The plan of a configuration, before anything runs: the jobs every registered study that the configuration
runs plans (``StudySpec.jobs``), each with its settings, memory, runtime and device, which of them fit, and
the messages naming what is left out. The workflow looks jobs up by rule and wildcards and asks for the
run's tables, figures and stores; ``describe`` is what ``wordsens plan`` prints. Beside them where the
embedding stores and pools live (``store_dir``, ``pool_file``), and the embedding step of each store as the
workflow requests it (``embed_step``: the job resolves its ``auto`` device where it runs). Torch is not
imported, except to ask a visible GPU for its free memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..compute import costs
from ..compute.costs import GB
from ..compute.limits import Limits
from ..compute.placement import GPU_STARTUP, Request, request
from ..compute.timing import Calibration
from ..data.inputs import store_summary
from ..data.models import model_tag, model_width
from ..io import CorruptCache, read_json
from ..studies import Figure, Job, Store, main_store
from ..studies import registry as studies
from .calibrate import stored_calibration


class Grid:
    """Every job of a configuration, split into those that fit ``limits`` (memory, and the calibrated
    wall time of ``estimate`` against ``limits.max_job_hours``: ``fit``) and those left out (``unfit``)."""

    def __init__(
        self,
        config: dict,
        *,
        limits: Limits | None = None,
        numerics_versions: Mapping[str, str] | None = None,
        calibration: Calibration | None = None,
    ):
        self.config = config
        self.limits = Limits.of(config) if limits is None else limits
        self.calibration = stored_calibration() if calibration is None else calibration
        versions = {**studies.numerics_versions(), **(numerics_versions or {})}
        self.jobs: list[Job] = []
        for spec in studies.specs():
            if spec.jobs is not None and spec.numerics is not None and spec.runs(config):
                self.jobs += spec.jobs(config, self.limits, versions[spec.numerics[0]])
        self.fit = [job for job in self.jobs if self.fits(job)]
        self.unfit = [job for job in self.jobs if not self.fits(job)]
        self._by_wildcards = {(job.rule, tuple(sorted(job.wildcards.items()))): job for job in self.fit}

    def limit(self, device: str) -> int | None:
        """Bytes one job may use on ``device``; None: unknown (a GPU that is not visible here)."""
        return self.limits.gpu if device == "cuda" else self.limits.cpu

    def estimate(self, job: Job) -> float:
        """Expected wall seconds of ``job`` here: its cost model's seconds through the calibration; on a
        GPU its GPU work and a GPU job's start-up (``wordsens.compute.placement``)."""
        if job.device == "cuda":
            return GPU_STARTUP + job.cost.seconds
        return self.calibration.of(job.family).predict(job.cost.seconds)

    def runtime(self, job: Job) -> int:
        """Minutes a scheduler should grant ``job``: ``Job.runtime``, or 5 + 5 x its ``estimate`` in minutes if more."""
        return max(job.runtime, int(5 + 5 * self.estimate(job) / 60))

    def fits_time(self, job: Job) -> bool:
        """The job's ``estimate`` is within ``limits.max_job_hours`` (or there is no such limit)."""
        return self.limits.hours is None or self.estimate(job) <= self.limits.hours * 3600

    def fits_memory(self, job: Job) -> bool:
        """The job's memory estimate is within what one job may use on its device (and its cap)."""
        limit = self.limit(job.device)
        cost = job.cost
        return (limit is None or cost.device_bytes <= limit) and (cost.cap is None or cost.arrays <= cost.cap)

    def fits(self, job: Job) -> bool:
        return self.fits_memory(job) and self.fits_time(job)

    def job(self, wildcards: Mapping[str, Any], rule: str | None = None) -> Job:
        """The job of rule ``rule`` (None: any) that writes the output with these wildcards."""
        key = tuple(sorted((name, str(value)) for name, value in wildcards.items()))
        found = [job for (r, k), job in self._by_wildcards.items() if k == key and rule in (None, r)]
        if len(found) != 1:
            what = f"{len(found)} jobs" if found else "no job"
            raise LookupError(f"{what} with wildcards {dict(key)} (rule {rule}) in this configuration's grid")
        return found[0]

    def select(self, **wildcards: Any) -> list[Job]:
        """The jobs that fit and match ``wildcards`` (e.g. ``map="rf"``)."""
        return [job for job in self.fit if job.matches(**wildcards)]

    def tables(self) -> dict[str, list[Job]]:
        """The tables of the run (a stem below ``tables/``), each with the jobs that fit whose rows it stacks,
        in the order the studies planned them."""
        out: dict[str, list[Job]] = {}
        for job in self.fit:
            out.setdefault(job.table, []).append(job)
        return out

    def figures(self) -> list[Figure]:
        """The figure rules of the studies the configuration runs (``StudySpec.figures``)."""
        return [figure for spec in studies.specs() if spec.runs(self.config) for figure in spec.figures(self)]

    def stores(self) -> dict[str, Store]:
        """The embedding stores the jobs read (fitting or not), by name."""
        known = {"main": main_store(self.config)}
        for spec in studies.specs():
            if spec.runs(self.config):
                known |= {store.name: store for store in spec.stores(self.config)}
        used = {job.store for job in self.jobs if job.store is not None}
        missing = used - set(known)
        if missing:
            raise ValueError(f"jobs read the embedding stores {sorted(missing)}, which no study declares")
        return {name: known[name] for name in known if name in used}

    def store_ns(self, store: str) -> list[int]:
        """The context lengths n of the planned jobs (fitting or not) that read ``store``, sorted."""
        return sorted({job.n for job in self.jobs if job.store == store})  # type: ignore[attr-defined]

    def left_out(self, *, study: str | None = None, **wildcards: Any) -> list[dict[str, Any]]:
        """The grid points left out among jobs of ``study`` matching ``wildcards``, with the memory (and
        hours) they need: what figures and the report mark as not run."""
        seen: dict[str, dict[str, Any]] = {}
        for job in self.unfit:
            if (study is None or job.study == study) and job.matches(**wildcards) and job.point not in seen:
                row: dict[str, Any] = {"point": job.point, "map": job.map, "device": job.device}
                row["needs_gb"] = round(job.cost.device_bytes / GB, 1)
                if self.fits_memory(job) and not self.fits_time(job):
                    row["needs_hours"] = float(f"{self.estimate(job) / 3600:.2g}")
                seen[job.point] = {**row, **job.values()}
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
            cost = job.cost
            if cost.cap is not None and cost.arrays > cost.cap:
                reasons.append(
                    f"needs {cost.arrays / GB:.1f} GB, {cost.cap / GB:.1f} GB allowed by ws.max_memory_gb (arrays)"
                )
            elif allowed is not None and cost.device_bytes > allowed:
                where = "the GPU (limits.gpu_memory_gb)" if job.device == "cuda" else "limits.memory_gb"
                reasons.append(f"needs {cost.device_bytes / GB:.1f} GB, {allowed / GB:.1f} GB allowed by {where}")
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
    """``hours`` to two significant digits, or as many more as it takes to print it above ``limit``."""
    for digits in range(2, 6):
        text = f"{hours:.{digits}g}"
        if limit is None or float(text) > limit:
            return text
    return text


def failed_jobs(log_text: str) -> list[dict[str, str]]:
    """The failed jobs of a Snakemake log: rule, output and log files, one entry per job, in order."""
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


def study_hours(grid: Grid) -> dict[str, float]:
    """Expected wall hours of the jobs that fit (``Grid.estimate``), per experiment (``Job.group``)."""
    hours: dict[str, float] = {}
    for job in grid.fit:
        hours[job.group] = hours.get(job.group, 0.0) + grid.estimate(job) / 3600
    return hours


def store_ns(config: dict, store: str) -> list[int]:
    """``Grid.store_ns`` of a configuration, without measuring this machine (the embedding job)."""
    return Grid(config, limits=Limits(cpu=0, gpu=None)).store_ns(store)


def describe(config: dict, limits: Limits | None = None, *, grid: Grid | None = None) -> str:
    """Human summary: job counts, expected hours, peak memory, where jobs run, what is left out (``grid``:
    a planned grid of ``config``, else planned here)."""
    grid = Grid(config, limits=limits) if grid is None else grid
    lines = [
        "jobs (word sensitivity: per study, map, grid point and chunk of trials; generalisation: per figure, "
        "data, map, n, N and chunk of simulations; hours: their expected wall time on this machine, added up):"
    ]
    groups: dict[str, list[Job]] = {}
    for job in grid.jobs:
        groups.setdefault(f"{job.group} {job.what} ({job.device})", []).append(job)
    for name, mine in [*sorted(groups.items()), ("total", grid.jobs)]:
        hours = sum(grid.estimate(job) for job in mine) / 3600
        peak = max((job.cost.device_bytes for job in mine), default=0) / GB
        lines.append(f"  {name:30s} {len(mine):5d} jobs  {hours:8.2f} hours  peak {peak:6.1f} GB")
    per = ", ".join(f"{key} {value:.2f}" for key, value in study_hours(grid).items())
    gpu = "none visible" if grid.limits.gpu is None else f"{grid.limits.gpu / GB:.1f} GB"
    cpu = f"{grid.limits.cpu / GB:.1f} GB"
    lines.append(f"job-hours per experiment (calibrated; the jobs that fit): {per}")
    lines.append(f"memory per job allowed here: {cpu} (limits.memory_gb), GPU: {gpu} (limits.gpu_memory_gb)")
    lines.append(grid.left_out_message(fail=config["limits"]["unfit"] == "fail") or "every job fits")
    for store, meta in store_metas(config, grid.stores().values()).items():  # the stores made already (docs/inputs.md)
        lines += store_summary(meta, grid.store_ns(store), config["data"]["min_distinct_share"], f"{store} store")
    return "\n".join(lines)


def store_dir(config: dict, store: Store | None = None) -> str:
    """The folder of an embedding store: one per model and layer (the main store), each other store beside
    it at its length."""
    model = config["model"]
    path = f"{config['resources'].rstrip('/')}/embeddings/{model_tag(model['name'])}/layer{model['layer']}"
    return path if store is None or store.name == "main" else f"{path}_len{store.max_length}"


def pool_file(config: dict, store: Store | None = None) -> str:
    """The review pool a store embeds: ``pool.parquet`` per model (the main store's), else the store's own."""
    folder = f"{config['resources'].rstrip('/')}/pools/{model_tag(config['model']['name'])}"
    if store is None or store.name == "main":
        return f"{folder}/pool.parquet"
    return f"{folder}/pool_{store.name}{store.max_length}.parquet"


def store_metas(config: dict, stores: Iterable[Store]) -> dict[str, dict[str, Any]]:
    """The readable meta.json of each of ``stores``, by store name."""
    found = {}
    for store in stores:
        meta = Path(store_dir(config, store)) / "meta.json"
        if meta.is_file():
            try:
                found[store.name] = read_json(meta)
            except CorruptCache:
                continue
    return found


def embed_step(config: dict, limits: Limits, store: Store) -> Request:
    """The embedding job of ``store``: a forward pass over its pool, worth a GPU of its own."""
    model = config["model"]
    estimate = costs.embed_memory(
        pool_size=store.pool_size,
        max_length=store.max_length,
        width=model_width(model["name"]),
        batch_size=model["batch_size"],
        dtype=model["dtype"],
    )
    return request(estimate, model["device"], limits, prefers_gpu=True)


def gpu_budget_problem(jobs: Iterable, steps: Mapping[str, int], budget: int) -> str | None:
    """Every job and step (name -> ``gpu_mem_mb``) that declares more GPU memory than ``budget`` MB, in one
    message with the ways out, or None (Snakemake would refuse each only when its turn comes)."""
    over = [(job.point, job.gpu_mem_mb) for job in jobs]
    over += list(steps.items())
    over = [(what, mb) for what, mb in over if mb > budget]
    if not over:
        return None
    return (
        f"{len(over)} job(s) declare more GPU memory than --resources gpu_mem_mb={budget} (MB):\n  "
        + "\n  ".join(f"{what}: {mb} MB" for what, mb in over)
        + "\n  Set the budget to the GPU's memory (profiles/gpu-node), or limits.gpu_memory_gb to at"
        f" most {budget / 1024:.1f} (GB), so that the plan leaves such jobs out."
    )
