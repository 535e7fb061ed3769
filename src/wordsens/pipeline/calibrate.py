"""The time calibration of this machine: measured jobs matched to a configuration's grid, the fit
(``wordsens.compute.timing``), where it is stored, and the predicted-against-measured table that
``wordsens plan --calibrate`` prints.

A measurement source is a results folder (its Snakemake benchmark files, ``benchmarks/``: the grid's
jobs, the embeddings and the studies' own benchmarked steps) or a Snakemake log
(``.snakemake/log/*.snakemake.log``: every job's start and finish, whole seconds, and the run's
elapsed time). The grid's jobs (every study's) are matched by their output path (``Job.key``), so the
configuration must be the one that made the results; other jobs count by rule. Torch-free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..compute.timing import Calibration, Sample
from ..io import atomic_path
from ..studies import Job
from ..studies import registry as studies
from .runs import benchmark_times, snakemake_log_jobs

__all__ = [
    "Measured",
    "calibration_file",
    "calibration_table",
    "measure",
    "save_calibration",
    "step_family",
    "stored_calibration",
]


def step_family(rule: str) -> str:
    """The calibration family of a step outside the grid: every store's pool and embedding are the main
    store's steps (``pool_<store>``: ``pool``, ``embed_<store>``: ``embed``), any other its rule's."""
    for family in ("pool", "embed"):
        if rule.startswith(f"{family}_"):
            return family
    return rule


def calibration_file() -> Path | None:
    """Where ``wordsens plan --calibrate`` stores this machine's time calibration: ``$WORDSENS_CALIBRATION``
    (``none``: no stored calibration, the built-in one), else
    ``$XDG_CACHE_HOME/wordsens/calibration.json`` (``~/.cache/wordsens/calibration.json``)."""
    chosen = os.environ.get("WORDSENS_CALIBRATION")
    if chosen is not None:
        return None if chosen.lower() in ("", "none") else Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "wordsens" / "calibration.json"


def stored_calibration() -> Calibration:
    """The calibration ``wordsens plan --calibrate`` stored (``calibration_file``), or
    the built-in one where there is none."""
    path = calibration_file()
    if path is None or not path.is_file():
        return Calibration()
    try:
        return Calibration.from_dict(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(
            f"the time calibration {path} cannot be read ({err}); delete it or run "
            "`wordsens plan --calibrate RESULTS_DIR` again"
        ) from None


def save_calibration(calibration: Calibration) -> Path | None:
    """Write ``calibration`` where ``stored_calibration`` reads it; None where storing is off
    (``WORDSENS_CALIBRATION=none``)."""
    path = calibration_file()
    if path is None:
        return None
    text = json.dumps(calibration.to_dict(), indent=1, sort_keys=True) + "\n"

    def write(tmp: Path) -> None:
        tmp.write_text(text)

    return atomic_path(path, write)


@dataclass
class Measured:
    """The samples read from the sources, the runs' elapsed seconds and cores (Snakemake logs), and
    how many measured jobs matched no job of the grid."""

    samples: list[Sample] = field(default_factory=list)
    runs: list[dict[str, float]] = field(default_factory=list)
    unmatched: int = 0


def measure(jobs: Iterable[Job], sources: Iterable[str | Path], benchmarked: Iterable[str] = ()) -> Measured:
    """Samples of the measured jobs of ``sources`` (results folders or Snakemake logs) that match
    ``jobs`` (GPU jobs are not calibrated) or are data, table, figure and study steps. A results
    folder's benchmark files count for the grid's jobs, the embeddings (``embed``, ``embed_<store>``)
    and the steps named in ``benchmarked`` (a study's own rules with a benchmark file:
    ``wordsens.studies.Step.benchmarked``). A job measured twice counts once (a benchmark file before
    a log's whole seconds, whatever the order of ``sources``): a grid job by its key, a step with a benchmark
    file by that file (the log names it)."""
    steps = set(benchmarked)
    grid_rules = set(studies.job_kinds())
    by_key = {job.key: job for job in jobs}
    out = Measured()
    seen: set[str] = set()

    def add(key: str, family: str | None, seconds: float, source: str) -> None:
        if key in seen:
            return
        seen.add(key)
        if key in by_key:
            job = by_key[key]
            if job.device == "cpu":
                out.samples.append(Sample(job.family, job.cost.seconds, seconds, source))
        elif family is not None:
            out.samples.append(Sample(step_family(family), 0.0, seconds, source))
        else:
            out.unmatched += 1

    paths = [Path(source) for source in sources]
    for source in sorted(paths, key=lambda path: not path.is_dir()):  # the folders' benchmark files first
        if source.is_dir():
            if not (source / "benchmarks").is_dir():
                raise ValueError(f"{source} has no benchmarks/ folder: name a results folder of a finished run")
            for key, seconds in benchmark_times(source).items():
                first = key.split("/", 1)[0]
                known = first in steps or step_family(first) == "embed"
                add(key, first if known else None, seconds, str(source))
        elif source.is_file():
            log_jobs, run = snakemake_log_jobs(source)
            out.runs.append(run)
            for job in log_jobs:
                rule, output, seconds = job.rule, job.outputs[0] if job.outputs else "", job.seconds
                if rule == "all" or not output:
                    continue
                # a grid job (word sensitivity, a study, generalisation, a trained layer) by its
                # output path's tail, which is its key (the log names it below the results folder)
                parts = Path(output).with_suffix("").parts
                tails = ("/".join(parts[i:]) for i in range(len(parts)))
                matched = next((tail for tail in tails if tail in by_key), None)
                if matched is not None:
                    add(matched, None, seconds, str(source))
                elif rule in grid_rules:  # a grid job of another configuration
                    out.unmatched += 1
                else:  # a step: by its benchmark file where it has one (as the folder's files count it)
                    add(job.benchmark_key or f"{rule}:{output}", rule, seconds, str(source))
        else:
            raise ValueError(f"{source} does not exist: name a results folder or a Snakemake log")
    return out


def calibration_table(calibration: Calibration, samples: Iterable[Sample]) -> list[str]:
    """Per family: jobs, measured and predicted wall seconds (summed), and the coefficients."""
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.family, []).append(sample)
    lines = [f"  {'family':20s} {'jobs':>5s} {'measured s':>11s} {'predicted s':>12s}  fixed s + scale x model s"]
    for family in sorted(groups):
        group = groups[family]
        c = calibration.of(family)
        measured = sum(s.measured for s in group)
        predicted = sum(c.predict(s.model) for s in group)
        lines.append(
            f"  {family:20s} {len(group):5d} {measured:11.0f} {predicted:12.0f}  {c.fixed:.1f}"
            + ("" if c.scale is None else f" + {c.scale:.2f} x model")
        )
    return lines
