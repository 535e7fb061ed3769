"""The plan's time model against measured jobs: for representative jobs of a configuration's grid,
the seconds the plan predicts (the built-in calibration; ``WORDSENS_CALIBRATION`` set: the one it
names) side by side with the CPU seconds the job's own code takes on this machine, and the scales
that would make them agree.

Each measured unit is one trial (word sensitivity) or one simulation with all its searches
(generalisation) of a real grid job, run by the workflow's own function (``ws_rows``, ``gen_rows``)
in its own subprocess on one thread, on synthetic rows (the cost of a search does not depend on the
rows' source). CPU seconds, not wall seconds, are measured, from after the imports to the end of
the unit: they do not grow with other work on the machine, so the numbers hold on a shared machine.
A job's start-up (imports, reading its inputs, writing its rows) is the calibration's ``fixed`` part,
which this script does not measure (``wordsens plan --calibrate`` fits it on a finished run).

Per family (``ws:<map>``, ``gen:<map>``) it prints the measured seconds over the cost model's seconds
(the ``scale`` of ``wordsens.compute.timing``), their median over the family's jobs, and the run's
expected wall time under those scales next to the built-in one. These are one-thread CPU-second
ratios of single units, a check of the cost model's shape across a grid; the built-in coefficients
are a fit of whole 2-core pipeline runs' wall seconds (``wordsens plan --calibrate``, docs/benchmarks.md),
so the two scales differ by what a run adds (two jobs sharing the memory bandwidth, page faults).

    python benchmarks/bench_model.py                      # the default config.yaml, every family
    python benchmarks/bench_model.py --quick              # one job per family, capped at 20 s each
    python benchmarks/bench_model.py --families ws:rf gen:raf --per-family 3
    python benchmarks/bench_model.py --configfile config/pretrained.yaml --cores 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import ROOT, add_worker_flags, run_worker


def worker(job_json: str) -> dict:
    """Run one unit of the job (its first trial or simulation) on synthetic rows; CPU seconds of
    the unit alone (after the imports)."""
    import torch

    from wordsens.studies.gen import GenJob
    from wordsens.studies.gen.run import gen_rows
    from wordsens.studies.sensitivity import WSJob, ws_rows

    torch.set_num_threads(1)
    params = json.loads(job_json)
    synthetic = {"data": "synthetic", "data_label": "synthetic"}
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    if "figure" in params:
        gen = GenJob.of(params)
        gen_rows(dataclasses.replace(gen, simulations=gen.simulations[:1], **synthetic), "synthetic")
    else:
        ws = WSJob.of(params)
        ws_rows(dataclasses.replace(ws, trials=ws.trials[:1], **synthetic), "synthetic")
    return {"cpu": time.process_time() - start_cpu, "wall": time.perf_counter() - start_wall}


def _units(job) -> int:  # trials or simulations of a job
    return len(job.simulations) if hasattr(job, "simulations") else len(job.trials)


def pick(grid, families: list[str] | None, per_family: int, max_seconds: float | None) -> list:
    """Per family, up to ``per_family`` CPU jobs that fit, spread over the family's range of model
    seconds (the largest first, then the smallest, then the middle ones); ``max_seconds``: only units
    the plan expects to take at most this long."""
    by_family: dict[str, dict[tuple, object]] = {}
    for job in grid.fit:
        if job.rule not in ("ws", "gen") or job.device != "cpu" or job.chunk != 0:
            continue
        if families and job.family not in families:
            continue
        unit = grid.estimate(job) / _units(job)
        if max_seconds is not None and unit > max_seconds:
            continue
        # one job per grid point (its other data sources and chunks cost the same)
        by_family.setdefault(job.family, {}).setdefault((job.map, job.setting), job)
    chosen = []
    for family in sorted(by_family):
        jobs = sorted(by_family[family].values(), key=lambda j: j.cost.seconds / _units(j))
        order = [jobs[-1], jobs[0], *(jobs[len(jobs) * i // per_family] for i in range(1, per_family))]
        seen: list = []
        for job in order:
            if job not in seen and len(seen) < per_family:
                seen.append(job)
        chosen += seen
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", nargs="*", default=[], help="config files merged over config.yaml")
    parser.add_argument("--families", nargs="*", default=None, help="families to measure (ws:rf, gen:raf, ...)")
    parser.add_argument("--per-family", type=int, default=2, help="jobs measured per family (default 2)")
    parser.add_argument("--max-seconds", type=float, default=None, help="skip units the plan expects above this")
    parser.add_argument("--quick", action="store_true", help="one job per family, units of at most 20 s planned")
    parser.add_argument("--cores", type=int, default=2, help="cores of the run whose wall time is printed")
    add_worker_flags(parser, ("--job",), ())
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.job)))
        return

    os.environ.setdefault("WORDSENS_CALIBRATION", "none")  # the built-in calibration, not a stored one
    from wordsens.compute.timing import Calibration, Coefficients
    from wordsens.pipeline.configuration import load_config
    from wordsens.pipeline.grid import Grid
    from wordsens.pipeline.schedule import finish_lines

    config = load_config(str(ROOT / "config.yaml"), *args.configfile)
    grid = Grid(config)
    per_family = 1 if args.quick else args.per_family
    max_seconds = 20.0 if args.quick and args.max_seconds is None else args.max_seconds
    jobs = pick(grid, args.families, per_family, max_seconds)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(jobs)} jobs; CPU seconds of one unit, one thread")
    head = ("family", "job", "model s", "planned s", "measured s", "meas/plan", "scale")
    print(f"{head[0]:16s} {head[1]:34s} {head[2]:>8s} {head[3]:>9s} {head[4]:>10s} {head[5]:>9s} {head[6]:>6s}")
    scales: dict[str, list[float]] = {}
    for job in jobs:
        units = _units(job)
        model = job.cost.seconds / units
        planned = (grid.estimate(job) - grid.calibration.of(job.family).fixed) / units
        out = run_worker(__file__, ["--job", json.dumps(job.params)])
        if "error" in out:
            print(f"{job.family:16s} {job.key:34s} error: {out['error']}")
            continue
        scale = out["cpu"] / model
        scales.setdefault(job.family, []).append(scale)
        print(
            f"{job.family:16s} {job.point:34s} {model:8.2f} {planned:9.2f} {out['cpu']:10.2f} "
            f"{out['cpu'] / planned:9.2f} {scale:6.2f}",
            flush=True,
        )
    print("\nscale per family (median of measured CPU / model seconds), against the calibration's (wall seconds):")
    measured = {}
    for family, values in sorted(scales.items()):
        built = grid.calibration.of(family)
        measured[family] = Coefficients(built.fixed, statistics.median(values), len(values))
        print(f"  {family:16s} {statistics.median(values):6.2f}  (calibration {built.scale:.2f}; {len(values)} jobs)")
    print(f"\nthe run's expected wall time on {args.cores} cores, built-in calibration:")
    print("\n".join(finish_lines(config, grid, args.cores)[:1]))
    refit = Grid(config, limits=grid.limits, calibration=Calibration(measured, ("bench_model",)))
    print("with the measured scales (the other families built in):")
    print("\n".join(finish_lines(config, refit, args.cores)))


if __name__ == "__main__":
    main()
