"""The GPU's time model and the plan's scheduler against a run of the default configuration on one GPU
node: the fit of ``wordsens.compute.placement``'s rates (GPU_RATES) on its jobs, and the replay of the run
by ``wordsens.pipeline.schedule.simulate`` (both in gpu_replay.py).

    python benchmarks/gpu_fit.py                                   # tests/data/gpu/h200_run.csv
    python benchmarks/gpu_fit.py --log RUN/.snakemake/log/X.snakemake.log --stop 468 --write RUN.csv

``--log``: a Snakemake log of ``config.yaml`` through profiles/gpu-node (every job it started, with its
resources; ``--write`` keeps them as the CSV the tests read); ``--gpu-gb``: the GPU that run was planned
for (its jobs' chunks and devices; none for the run of 2026-11-28, planned before jobs were placed).
Prints the fit (start-up, per family the latency per search and the GPU seconds per CPU-model
second), how well it and the shipped rates (GPU_RATES) explain the run's jobs, and the replay: the
steps done at ``--stop`` seconds after the log's first time stamp, simulated for the run's cores and GPU
memory, against the log's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpu_replay import (  # noqa: E402
    fit_rates,
    gpu_samples,
    logged_jobs,
    rates_table,
    read_jobs,
    replay_tasks,
    steps_done,
    write_jobs,
)

from wordsens import compute, pipeline  # noqa: E402
from wordsens.compute import placement  # noqa: E402
from wordsens.compute.timing import Calibration  # noqa: E402

GB = 1024**3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", help="a Snakemake log of config.yaml on a GPU node")
    parser.add_argument("--csv", default=str(ROOT / "tests" / "data" / "gpu" / "h200_run.csv"))
    parser.add_argument("--write", help="write the log's jobs to this CSV")
    parser.add_argument("--stop", type=float, default=468.0, help="seconds after the log's first stamp it stops")
    parser.add_argument("--cores", type=int, default=16)
    parser.add_argument("--gpu-mb", type=int, default=143771, help="the GPU memory the run shared (MB)")
    parser.add_argument("--gpu-gb", type=float, help="the GPU the run was planned for (GB; default: none)")
    args = parser.parse_args()
    jobs = logged_jobs(args.log) if args.log else read_jobs(args.csv)
    if args.write:
        write_jobs(jobs, args.write)
        print(f"{len(jobs)} jobs written to {args.write}")
    config = pipeline.load_config(str(ROOT / "config.yaml"))
    on_cpu = compute.Limits(125 * GB, None, None)
    cpu = pipeline.Grid(config, limits=on_cpu, calibration=Calibration()).jobs
    # the run's grid as it was planned: the H200 run of 2026-11-28 ran every job with the CPU's chunks
    node = replace(on_cpu, gpu=int(args.gpu_gb * GB), cores=args.cores) if args.gpu_gb else on_cpu
    planned = pipeline.Grid(config, limits=node, calibration=Calibration()).jobs
    samples = gpu_samples(jobs, planned, args.stop, config["results"], cpu)
    start, rates = fit_rates(samples)
    print(f"fit on {len(samples)} finished GPU jobs: start-up {start:.2f} s beside the shared work")
    print("\n".join(rates_table(rates)))
    for label, table, startup in (("the fit", rates, start), ("GPU_RATES", placement.GPU_RATES, start)):
        errors = [
            (startup + s.sharing * table.get(s.family, placement.gpu_rate(s.family)).work(s.model, s.searches))
            / s.measured
            - 1
            for s in samples
        ]
        share = sum(abs(e) <= 0.25 for e in errors) / len(errors)
        print(
            f"{label}: median |error| {statistics.median(abs(e) for e in errors):.0%}, "
            f"{share:.0%} of the jobs within 25 %, median error {statistics.median(errors):+.0%}"
        )
    order = {job.jobid: i for i, job in enumerate(jobs)}
    times = pipeline.simulate(replay_tasks(jobs, args.stop, order), args.cores, args.gpu_mb)
    logged = sum(1 for job in jobs if job.end is not None and job.end <= args.stop)
    shift = statistics.median(abs(times[str(job.jobid)][0] - job.start) for job in jobs)
    print(
        f"replay ({args.cores} cores, {args.gpu_mb} MB, the log's order for ties): {steps_done(times, args.stop)} "
        f"steps done at {args.stop:.0f} s, the log {logged}; median |start - logged start| {shift:.1f} s"
    )
    reverse = {job.jobid: -i for i, job in enumerate(jobs)}
    for name, ties in (("job ids", {job.jobid: job.jobid for job in jobs}), ("log reversed", reverse)):
        other = pipeline.simulate(replay_tasks(jobs, args.stop, ties), args.cores, args.gpu_mb)
        print(f"  ties in the order of the {name}: {steps_done(other, args.stop)} steps done")


if __name__ == "__main__":
    main()
