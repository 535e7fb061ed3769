"""A logged GPU run, replayed and fitted (a developer's tool: ``benchmarks/gpu_fit.py`` and the tests, which
put this folder on ``sys.path``, import it). Every job a Snakemake log started, with its resources, start and
finish (``logged_jobs``; the jobs still running when the run stopped are kept), kept as a small CSV
(``write_jobs``, ``read_jobs``); the plan's scheduler (``wordsens.pipeline.schedule.simulate``) given them as
tasks with their measured durations (``replay_tasks``), and the steps done by a time (``steps_done``); the
GPU jobs as samples of the GPU's time model (``gpu_samples``, with ``sharing``: the GPU jobs beside each)
and the fit of ``wordsens.compute.placement``'s rates on them (``fit_rates``, ``rates_table``).
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from wordsens.compute.placement import GpuRate
from wordsens.pipeline.schedule import DATA_PRIORITY, Task
from wordsens.studies import Job

# The rules of workflow/rules/data.smk, embed.smk and pretrained.smk: their priority: 50
DATA_RULES = ("demo_corpus", "demo_model", "reviews", "pool", "pool_long", "embed", "embed_long", "packaged_model")
FIELDS = ("jobid", "rule", "output", "start", "end", "threads", "gpu", "gpu_mem_mb", "after")


@dataclass(frozen=True)
class StartedJob:
    """A job a Snakemake log started: its id, rule, first output, start and finish (seconds after the
    log's first time stamp; ``end`` None: still running when the log stops), threads, ``gpu`` and
    ``gpu_mem_mb`` resources and the ids of the logged jobs that wrote its inputs (``after``)."""

    jobid: int
    rule: str
    output: str
    start: float
    end: float | None
    threads: int
    gpu: int
    gpu_mem_mb: int
    after: tuple[int, ...]


def logged_jobs(path: str | os.PathLike) -> list[StartedJob]:
    """Every job started in the Snakemake log at ``path``, in starting order."""
    text = Path(path).read_text(errors="replace")
    parts = re.split(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$", text, flags=re.M)
    origin: datetime | None = None
    blocks: list[tuple[float, str]] = []
    ends: dict[int, float] = {}
    for when, block in zip(parts[1::2], parts[2::2], strict=True):
        at = datetime.strptime(" ".join(when.split()), "%a %b %d %H:%M:%S %Y")
        origin = origin or at
        seconds = (at - origin).total_seconds()
        if re.match(r"\s*(?:local)?(?:checkpoint|rule) \w+:", block):
            blocks.append((seconds, block))
        ends.update((int(done), seconds) for done in re.findall(r"^Finished jobid: (\d+)", block, re.M))
    starts = [_started(seconds, block) for seconds, block in blocks]
    made_by = {output: job.jobid for job, _, outputs in starts for output in outputs}
    return [
        replace(
            job,
            end=ends.get(job.jobid),
            after=tuple(sorted({made_by[f] for f in inputs if f in made_by} - {job.jobid})),
        )
        for job, inputs, _ in starts
    ]


def _started(seconds: float, block: str) -> tuple[StartedJob, tuple[str, ...], tuple[str, ...]]:
    """One start block: the job (without its end and producers), its inputs and its outputs."""

    def files(key: str) -> tuple[str, ...]:
        match = re.search(rf"^\s+{key}: (.*)$", block, re.M)
        return tuple(f.strip() for f in match.group(1).split(",") if f.strip()) if match else ()

    def resource(name: str) -> int:
        match = re.search(rf"^\s+resources: .*\b{name}=(\d+)", block, re.M)
        return int(match.group(1)) if match else 0

    head = re.match(r"\s*(?:local)?(?:checkpoint|rule) (\w+):", block)
    number = re.search(r"^\s+jobid: (\d+)$", block, re.M)
    threads = re.search(r"^\s+threads: (\d+)$", block, re.M)
    assert head and number, block[:200]
    outputs = files("output")
    job = StartedJob(
        int(number.group(1)),
        head.group(1),
        outputs[0] if outputs else "",
        seconds,
        None,
        int(threads.group(1)) if threads else 1,
        resource("gpu"),
        resource("gpu_mem_mb"),
        (),
    )
    return job, files("input"), outputs


def write_jobs(jobs: Sequence[StartedJob], path: str | os.PathLike) -> None:
    """The jobs as CSV (one row per job; ``end`` empty where the job did not finish)."""
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(FIELDS)
        for j in jobs:
            end = "" if j.end is None else f"{j.end:g}"
            row = [j.jobid, j.rule, j.output, f"{j.start:g}", end, j.threads, j.gpu, j.gpu_mem_mb]
            out.writerow([*row, " ".join(map(str, j.after))])


def read_jobs(path: str | os.PathLike) -> list[StartedJob]:
    """The jobs of ``write_jobs``."""
    with open(path, newline="") as fh:
        return [
            StartedJob(
                int(row["jobid"]),
                row["rule"],
                row["output"],
                float(row["start"]),
                float(row["end"]) if row["end"] else None,
                int(row["threads"]),
                int(row["gpu"]),
                int(row["gpu_mem_mb"]),
                tuple(int(a) for a in row["after"].split()),
            )
            for row in csv.DictReader(fh)
        ]


def replay_tasks(jobs: Sequence[StartedJob], stop: float, order: Mapping[int, int] | None = None) -> list[Task]:
    """The scheduler's tasks of the logged jobs: each with its measured duration, threads, GPU memory,
    the data rules' priority (as the rules declare it; every other job none) and the jobs it waits for.
    A job unfinished when the log stops at ``stop`` did not finish within the run in its schedule: it
    gets a duration longer than the run (it finishes in no replayed schedule either). ``order``: the
    order in which equal-priority tasks are taken (default: by job id, Snakemake's numbering)."""
    rank = order or {j.jobid: j.jobid for j in jobs}
    tasks = [
        Task(
            str(j.jobid),
            j.rule,
            (j.end - j.start) if j.end is not None else 2 * stop,
            j.threads,
            j.gpu_mem_mb,
            DATA_PRIORITY if j.rule in DATA_RULES else 0,
            tuple(str(a) for a in j.after),
        )
        for j in jobs
    ]
    return sorted(tasks, key=lambda t: rank[int(t.name)])


def steps_done(times: Mapping[str, tuple[float, float]], at: float) -> int:
    """The tasks finished by ``at`` seconds."""
    return sum(1 for _, end in times.values() if end <= at)


def sharing(job: StartedJob, jobs: Sequence[StartedJob], stop: float) -> float:
    """The mean number of GPU jobs (``gpu`` > 0) running while ``job`` ran, itself included."""
    end = stop if job.end is None else job.end
    if end <= job.start:
        return float(job.gpu > 0)
    busy = sum(
        max(0.0, min(end, stop if other.end is None else other.end) - max(job.start, other.start))
        for other in jobs
        if other.gpu
    )
    return busy / (end - job.start)


@dataclass(frozen=True)
class GpuSample:
    """One job measured on a GPU: its family, estimates (``searches``), CPU cost-model seconds, wall
    seconds and the mean number of GPU jobs running beside it (itself included: ``sharing``)."""

    family: str
    searches: int
    model: float
    measured: float
    sharing: float


def gpu_samples(
    jobs: Sequence[StartedJob], planned: Iterable[Job], stop: float, results: str, cpu: Iterable[Job] | None = None
) -> list[GpuSample]:
    """The finished GPU jobs of a logged run as samples of the GPU's time model
    (``fit_rates``): each matched to its job of ``planned`` (the run's grid as it was planned)
    by its output under ``results``, with its estimates (``Job.rows``), its CPU cost-model seconds (those
    of its grid point planned for the CPU, ``cpu``, per row; None: ``planned`` is that grid), wall
    seconds and ``sharing``."""
    planned = list(planned)
    per_row = {(job.rule, job.point): job.cost.seconds / job.rows for job in (planned if cpu is None else cpu)}
    by_output = {f"{results}/{job.key}.parquet": job for job in planned}
    samples = []
    for logged in jobs:
        job = by_output.get(logged.output)
        if job is None or logged.end is None or not logged.gpu or (job.rule, job.point) not in per_row:
            continue
        model = per_row[job.rule, job.point] * job.rows
        samples.append(GpuSample(job.family, job.rows, model, logged.end - logged.start, sharing(logged, jobs, stop)))
    return samples


def fit_rates(samples: Iterable[GpuSample]) -> tuple[float, dict[str, GpuRate]]:
    """The start-up and each family's ``GpuRate`` from jobs measured on a shared GPU: ``measured =
    startup + sharing (per_search searches + ratio model)``, by non-negative least squares on relative
    errors (a coefficient that comes out negative is set to 0 and the rest fitted again). The work of
    ``sharing`` processes shares the GPU; their start-up runs beside it."""
    rows = [s for s in samples if s.measured > 0 and math.isfinite(s.measured)]
    families = sorted({s.family for s in rows})
    columns = 1 + 2 * len(families)
    A = np.zeros((len(rows), columns))
    for i, s in enumerate(rows):
        j = 1 + 2 * families.index(s.family)
        A[i, 0], A[i, j], A[i, j + 1] = 1.0, s.sharing * s.searches, s.sharing * s.model
    t = np.array([s.measured for s in rows])
    A, b = A / t[:, None], np.ones(len(rows))
    free = [j for j in range(columns) if A[:, j].any()]
    while True:
        x = np.zeros(columns)
        x[free] = np.linalg.lstsq(A[:, free], b, rcond=None)[0]
        negative = [j for j in free if x[j] < 0]
        if not negative:
            break
        free = [j for j in free if j not in negative]
    rates = {f: GpuRate(float(x[1 + 2 * i]), float(x[2 + 2 * i])) for i, f in enumerate(families)}
    return float(x[0]), rates


def rates_table(rates: Mapping[str, GpuRate]) -> list[str]:
    """The rates, one line per family (what docs/gpu.md shows)."""
    return [f"  {f:18s} {r.per_search:8.4f} s/search  {r.ratio:9.5f} s per model s" for f, r in sorted(rates.items())]
