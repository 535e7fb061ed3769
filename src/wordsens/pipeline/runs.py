"""What a finished run took: its jobs and times as its Snakemake log (``snakemake_log_jobs``) and its
benchmark files (``benchmark_times``) record them, wall time per rule and the critical path.
``benchmarks/bench_pipeline.py`` prints them; ``wordsens plan --calibrate`` fits the time model on them.

The critical path is followed backwards from the job that finished last: each step goes to the
job's input producer that finished last (the one it waited for). Along the path, a job's *wait* is
the time between that producer's finish and its own start: time spent queueing for cores or a
GPU, which more cores (or fewer jobs ahead of it) would remove. Torch-free.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LoggedJob", "PathStep", "RuleTime", "benchmark_times", "critical_path", "rule_times", "snakemake_log_jobs"]


def benchmark_times(results: str | os.PathLike) -> dict[str, float]:
    """Wall seconds of every job with a Snakemake benchmark file under ``results/benchmarks`` (the
    ``benchmark:`` of the rules), by its path below that folder without ``.tsv``
    (``ws/rf/d16_n8/chunk0``, ``gen/fig4/imdb/raf_n8_N6_d16/chunk0``, ``embed/<model>_layer0``);
    the mean of the ``s`` column where a file holds repeats."""
    import csv

    root = Path(results) / "benchmarks"
    times: dict[str, float] = {}
    for path in sorted(root.rglob("*.tsv")):
        with open(path, newline="") as fh:
            seconds = [float(row["s"]) for row in csv.DictReader(fh, delimiter="\t") if row.get("s")]
        if seconds:
            times[path.relative_to(root).with_suffix("").as_posix()] = sum(seconds) / len(seconds)
    return times


@dataclass(frozen=True)
class LoggedJob:
    """One finished job of a Snakemake log: its id, rule, inputs and outputs, start and finish
    (whole seconds since the run's first stamp, as the log writes them), its benchmark file (``benchmark``,
    None where the rule has none) and the GPUs it requested (``gpu``: its ``resources:`` gpu, None where
    the rule requests none: a step that never computes on a device)."""

    jobid: int
    rule: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    start: float
    end: float
    benchmark: str | None = None
    gpu: int | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def benchmark_key(self) -> str | None:
        """Its benchmark file as ``benchmark_times`` names it (the path below ``benchmarks/`` without
        ``.tsv``), or None."""
        if not self.benchmark:
            return None
        parts = Path(self.benchmark).with_suffix("").parts
        if "benchmarks" not in parts:
            return None
        last = len(parts) - 1 - parts[::-1].index("benchmarks")
        return "/".join(parts[last + 1 :]) or None


def snakemake_log_jobs(path: str | os.PathLike) -> tuple[list[LoggedJob], dict[str, float]]:
    """The finished jobs of a Snakemake log (``.snakemake/log/*.snakemake.log``), in finishing order
    (with their benchmark file and requested GPUs where the log names them), and the run's ``elapsed``
    seconds and ``cores`` where the log states them. A job that started but
    never finished (failed, or the run was stopped) is not listed."""
    import re
    from datetime import datetime

    text = Path(path).read_text(errors="replace")
    stamp = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$", re.M)
    parts = stamp.split(text)
    started: dict[int, tuple[str, tuple[str, ...], tuple[str, ...], datetime, str | None, int | None]] = {}
    finished: list[tuple[int, datetime]] = []
    origin: datetime | None = None

    def files(block: str, key: str) -> tuple[str, ...]:
        match = re.search(rf"^\s+{key}: (.*)$", block, re.M)
        return tuple(f.strip() for f in match.group(1).split(",") if f.strip()) if match else ()

    for when, block in zip(parts[1::2], parts[2::2], strict=True):
        at = datetime.strptime(" ".join(when.split()), "%a %b %d %H:%M:%S %Y")
        origin = origin or at
        head = re.match(r"\s*(?:local)?(?:checkpoint|rule) (\w+):", block)
        number = re.search(r"^\s+jobid: (\d+)$", block, re.M)
        if head and number:
            benchmark = next(iter(files(block, "benchmark")), None)
            resources = re.search(r"^\s+resources: .*\bgpu=(\d+)", block, re.M)
            started[int(number.group(1))] = (
                head.group(1), files(block, "input"), files(block, "output"), at, benchmark,
                int(resources.group(1)) if resources else None,
            )  # fmt: skip
        finished += [(int(done), at) for done in re.findall(r"^Finished jobid: (\d+)", block, re.M)]
    jobs = []
    for jobid, at in finished:
        if jobid in started and origin is not None:
            rule, inputs, outputs, begin, benchmark, gpu = started[jobid]
            start, end = (begin - origin).total_seconds(), (at - origin).total_seconds()
            jobs.append(LoggedJob(jobid, rule, inputs, outputs, start, end, benchmark, gpu))
    run: dict[str, float] = {}
    elapsed = re.search(r"^Elapsed time: (\d+):(\d\d):(\d\d(?:\.\d+)?)", text, re.M)
    if elapsed:
        h, m, s = elapsed.groups()
        run["elapsed"] = int(h) * 3600 + int(m) * 60 + float(s)
    cores = re.search(r"^Provided cores: (\d+)", text, re.M)
    if cores:
        run["cores"] = float(cores.group(1))
    return jobs, run


@dataclass(frozen=True)
class RuleTime:
    """A rule's finished jobs: how many, their summed and longest wall seconds, and the span from
    its first start to its last finish."""

    rule: str
    jobs: int
    total: float
    longest: float
    first_start: float
    last_end: float


@dataclass(frozen=True)
class PathStep:
    """A job on the critical path and the seconds it waited after its last input was ready."""

    job: LoggedJob
    wait: float


def rule_times(jobs: Sequence[LoggedJob]) -> list[RuleTime]:
    """One entry per rule, the rule with the largest summed wall time first."""
    by_rule: dict[str, list[LoggedJob]] = {}
    for job in jobs:
        by_rule.setdefault(job.rule, []).append(job)
    out = [
        RuleTime(
            rule,
            len(group),
            sum(j.seconds for j in group),
            max(j.seconds for j in group),
            min(j.start for j in group),
            max(j.end for j in group),
        )
        for rule, group in by_rule.items()
    ]
    return sorted(out, key=lambda r: (-r.total, r.rule))


def _producers(jobs: Sequence[LoggedJob]) -> dict[str, LoggedJob]:
    return {output: job for job in jobs for output in job.outputs}


def critical_path(jobs: Sequence[LoggedJob]) -> list[PathStep]:
    """The chain of jobs that ended the run, first job first (empty for no jobs)."""
    if not jobs:
        return []
    made_by = _producers(jobs)
    job: LoggedJob | None = max(jobs, key=lambda j: (j.end, j.start))
    steps: list[PathStep] = []
    seen: set[int] = set()
    while job is not None and job.jobid not in seen:
        seen.add(job.jobid)
        inputs = [made_by[f] for f in job.inputs if f in made_by and made_by[f].jobid != job.jobid]
        before = max(inputs, key=lambda j: (j.end, j.start)) if inputs else None
        steps.append(PathStep(job, max(job.start - (before.end if before else 0.0), 0.0)))
        job = before
    return steps[::-1]
