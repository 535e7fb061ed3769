"""What a finished run took and the time calibration of this machine fitted on it: the jobs and times a run's
Snakemake log (``snakemake_log_jobs``) and benchmark files (``benchmark_times``) record, matched to a
configuration's grid (``measure``), the fit (``wordsens.compute.timing``), where it is stored, and the table
``wordsens plan --calibrate`` prints. The grid's jobs are matched by their output path (``Job.key``), so the
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


def benchmark_times(results: str | os.PathLike) -> dict[str, float]:
    """Wall seconds of every job with a benchmark file under ``results/benchmarks``, by its path below that
    folder without ``.tsv`` (``ws/rf/d16_n8/chunk0``); the mean of the ``s`` column over repeats."""
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
    """One finished job of a Snakemake log: its id, rule, inputs and outputs, start and finish (whole seconds
    since the run's first stamp), its benchmark file and the GPUs it requested (None: none named)."""

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
    """The finished jobs of a Snakemake log, in finishing order, and the run's ``elapsed`` seconds and
    ``cores`` where the log states them."""
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


def step_family(rule: str) -> str:
    """The calibration family of a step outside the grid: ``pool_<store>`` is ``pool``, ``embed_<store>``
    ``embed``, any other its rule."""
    for family in ("pool", "embed"):
        if rule.startswith(f"{family}_"):
            return family
    return rule


def calibration_file() -> Path | None:
    """Where ``wordsens plan --calibrate`` stores this machine's time calibration: ``$WORDSENS_CALIBRATION``
    (``none``: nowhere), else ``$XDG_CACHE_HOME/wordsens/calibration.json``."""
    chosen = os.environ.get("WORDSENS_CALIBRATION")
    if chosen is not None:
        return None if chosen.lower() in ("", "none") else Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "wordsens" / "calibration.json"


def stored_calibration() -> Calibration:
    """The calibration stored in ``calibration_file``, or the built-in one where there is none."""
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
    return atomic_path(path, lambda tmp: tmp.write_text(text))


@dataclass
class Measured:
    """The samples read from the sources, the runs' elapsed seconds and cores (Snakemake logs), and
    how many measured jobs matched no job of the grid."""

    samples: list[Sample] = field(default_factory=list)
    runs: list[dict[str, float]] = field(default_factory=list)
    unmatched: int = 0


def measure(jobs: Iterable[Job], sources: Iterable[str | Path], benchmarked: Iterable[str] = ()) -> Measured:
    """Samples of the measured jobs of ``sources`` that match ``jobs`` (CPU jobs only) or are steps. A
    results folder's benchmark files count for the grid's jobs, the embeddings and the steps named in
    ``benchmarked``. A job measured twice counts once, a benchmark file before a log's whole seconds: a grid
    job by its key, a step with a benchmark file by that file."""
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
