"""The whole pipeline, end to end, in a fresh folder: wall time per rule, the total, the critical
path and the device of each job.

    python benchmarks/bench_pipeline.py                                    # the demo, every core
    python benchmarks/bench_pipeline.py --cores 2                          # as on a 2-core laptop
    python benchmarks/bench_pipeline.py --configfile config.yaml --cores 16 -- \
        --config 'data={source: parquet, path: /data/imdb.parquet}'           # the paper, local IMDb
    python benchmarks/bench_pipeline.py --log RUN/.snakemake/log/X.snakemake.log   # a finished run

It copies the workflow (Snakefile, config.yaml, workflow/, scripts/, config/, profiles/) into the
folder, runs ``snakemake --cores N --configfile CONFIG`` there (anything after ``--`` is passed to
Snakemake), and reads the run's Snakemake log (``wordsens.pipeline.snakemake_log_jobs``): per rule the
jobs, summed and longest wall seconds; the run's elapsed time; the critical path
(``wordsens.pipeline.critical_path``, as the plan's: from the job that finished last, each step to the
input producer it waited for, with the time it waited after that one's finish for a free core or GPU).
The device of a job is where it ran where its result rows record it (the ``device`` column: word
sensitivity, generalisation, the swaps study), else where the plan put it, marked ``(planned)``: the GPUs its
rule requested in the log (``resources: gpu=``; the embeddings, the probes, the trained layers, whose ``auto``
resolves where they run); a step that requests no GPU resource at all (downloads, tables, figures) runs on
the CPU. Log times are whole seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the one copy of the workflow-copying helper
sys.path.insert(0, str(ROOT / "src"))

from workflow_utils import copy_workflow  # noqa: E402

from wordsens.pipeline import LoggedJob, critical_path, snakemake_log_jobs  # noqa: E402


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


def log_path(jobs: Sequence[LoggedJob]) -> list[tuple[LoggedJob, float]]:
    """The critical path of a logged run: each job with the seconds it waited after its last input was made."""
    by_id = {job.jobid: job for job in jobs}
    made_by = {output: job.jobid for job in jobs for output in job.outputs}

    def inputs(jobid: int) -> list[int]:
        return [made_by[f] for f in by_id[jobid].inputs if f in made_by and made_by[f] != jobid]

    path = critical_path({job.jobid: (job.start, job.end) for job in jobs}, inputs)
    return [(by_id[jobid], wait) for jobid, wait in path]


def job_device(job: LoggedJob, workdir: Path) -> str:
    """Where the job computed: its rows' ``device`` column where a Parquet output has one, else where the
    plan put it (``cuda (planned)`` or ``cpu (planned)``, from the GPUs it requested in the log), else
    (no GPU resource requested: not a compute step) the CPU."""
    import pyarrow.parquet as pq

    for output in job.outputs:
        path = workdir / output
        if not output.endswith(".parquet") or not path.is_file():
            continue
        try:
            if "device" not in pq.read_schema(path).names:
                continue
            table = pq.read_table(path, columns=["device"])
        except (OSError, ValueError):
            return "?"
        return ",".join(sorted(set(map(str, table.column("device").to_pylist()))))
    if job.gpu is None:
        return "cpu"
    return f"{'cuda' if job.gpu > 0 else 'cpu'} (planned)"


def run(configfile: str, cores: str, workdir: Path, extra: list[str]) -> Path:
    """Run the workflow in ``workdir``; returns its Snakemake log. ``configfile``: a file of the copied
    workflow (``config/demo.yaml``) or, where the copy has none, a path from here (made absolute)."""
    copy_workflow(workdir)
    if not (workdir / configfile).is_file():
        if not Path(configfile).is_file():
            sys.exit(f"--configfile {configfile}: no such file here or in the workflow's copy")
        configfile = str(Path(configfile).resolve())
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "snakemake", "--cores", cores, "--configfile", configfile, *extra]
    print(f"# in {workdir}: {' '.join(cmd[2:])}", flush=True)
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    print(f"# snakemake returned {out.returncode} after {time.perf_counter() - started:.0f} s", flush=True)
    if out.returncode != 0:
        sys.exit(f"the run failed:\n{out.stderr[-4000:]}")
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        sys.exit(f"no Snakemake log in {workdir}/.snakemake/log")
    return logs[-1]


def report(log: Path, workdir: Path, *, width: int = 70) -> None:
    jobs, info = snakemake_log_jobs(log)
    if not jobs:
        sys.exit(f"{log} lists no finished job")
    print(f"\n# {log}")
    print(f"{'rule':22s} {'jobs':>5s} {'sum s':>8s} {'longest s':>10s} {'first start':>12s} {'last end':>9s}  devices")
    devices: dict[str, set[str]] = {}
    for job in jobs:
        devices.setdefault(job.rule, set()).add(job_device(job, workdir))
    for r in rule_times(jobs):
        print(
            f"{r.rule:22s} {r.jobs:5d} {r.total:8.0f} {r.longest:10.0f} {r.first_start:12.0f} {r.last_end:9.0f}"
            f"  {','.join(sorted(devices[r.rule]))}"
        )
    busy = sum(j.seconds for j in jobs)
    total = info.get("elapsed", max(j.end for j in jobs))
    cores = info.get("cores")
    print(
        f"\ntotal wall time {total:.0f} s ({total / 60:.1f} min) on {cores and int(cores)} cores;"
        f" job seconds {busy:.0f}"
    )
    path = log_path(jobs)
    print(
        f"\ncritical path ({len(path)} jobs, {sum(job.seconds for job, _ in path):.0f} s running, "
        f"{sum(wait for _, wait in path):.0f} s waiting after their inputs were ready):"
    )
    for job, wait in path:
        what = (job.outputs[0] if job.outputs else "(target)")[-width:]
        print(
            f"  {job.rule:20s} {job.start:6.0f} -> {job.end:6.0f}  wait {wait:5.0f}  "
            f"{job_device(job, workdir):14s} {what}"
        )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Arguments after -- go to snakemake.",
    )
    parser.add_argument("--configfile", default="config/demo.yaml", help="the run's configuration (default: the demo)")
    parser.add_argument("--cores", default="all", help="cores Snakemake may use (default: all)")
    parser.add_argument(
        "--workdir", type=Path, help="the fresh folder to run in (default: a new temporary folder, kept)"
    )
    parser.add_argument("--log", type=Path, help="only analyse this Snakemake log of a finished run (no run)")
    args = parser.parse_args(argv)
    if args.log:
        if not args.log.is_file():
            parser.error(f"--log {args.log} is not a file: name a .snakemake/log/*.snakemake.log of a finished run")
        workdir = args.workdir or args.log.resolve().parents[2]
        log = args.log
    else:
        workdir = args.workdir or Path(tempfile.mkdtemp(prefix="wordsens-pipeline-"))
        if workdir.exists() and any(workdir.iterdir()):
            parser.error(f"--workdir {workdir} is not empty: the benchmark runs everything from scratch")
        log = run(args.configfile, args.cores, workdir, extra)
    report(log, workdir)


if __name__ == "__main__":
    main()
