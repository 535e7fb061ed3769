"""What a finished run took: wall time per rule and the critical path, from the jobs of its
Snakemake log (``wordsens.io.snakemake_log_jobs``). ``benchmarks/bench_pipeline.py`` prints them.

The critical path is followed backwards from the job that finished last: each step goes to the
job's input producer that finished last (the one it waited for). Along the path, a job's *wait* is
the time between that producer's finish and its own start: time spent queueing for cores or a
GPU, which more cores (or fewer jobs ahead of it) would remove. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..io import LoggedJob

__all__ = ["PathStep", "RuleTime", "critical_path", "rule_times"]


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
