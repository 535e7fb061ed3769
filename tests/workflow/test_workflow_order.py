"""The longest chain first, in a real Snakemake run (slow: ``pytest -m "not slow"`` skips it): the
rules take each job's priority from the plan (``wordsens.pipeline.schedule``), and Snakemake's
scheduler starts the ready jobs in that order. Log order, not wall time."""

from __future__ import annotations

import re

import pytest
from workflow_utils import WS_ONLY, copy_workflow, demo_config, env, snakemake, write_config

from wordsens import compute, pipeline
from wordsens.compute.timing import Calibration

pytestmark = pytest.mark.slow

GB = 1024**3
# Synthetic WS jobs only (none waits for data): the ReLU-RAF point, last in the grid's order, is the
# longest in the plan's estimates (its map's time scale), so neither the grid's nor the job ids' order
# would start it first.
CHANGES = {
    "ws": {
        "data": "synthetic",
        "device": "cpu",
        "trials": 2,
        "trials_per_job": 2,
        "maps": {
            "rf": {"d": [8], "n": [4]},
            "drf": None,
            "raf": {"d": [16], "n": [8, 48]},
            "relu_raf": {"d": [8], "n": [4]},
        },
    },
    **WS_ONLY,
}


def _started(log: str) -> list[tuple[str, float]]:
    """The ws jobs of a Snakemake log in starting order: (output, priority; 0 where the log names none)."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", log):
        if re.match(r"(?:local)?rule ws:", block):
            output = re.search(r"^\s+output: (\S+)", block, re.M)
            priority = re.search(r"^\s+priority: ([\d.]+)", block, re.M)
            assert output, block
            jobs.append((output.group(1), float(priority.group(1)) if priority else 0.0))
    return jobs


@pytest.mark.parametrize("scheduler", ["greedy", "ilp"])
def test_the_job_with_the_longest_chain_starts_first(tmp_path, scheduler):
    """On one core every start is one choice among all the ready jobs: the log's ws jobs start by
    decreasing priority, the plan's longest first, with the priorities the plan gives them (the built-in
    time model in both processes). The profile's greedy scheduler and Snakemake's default (ilp) agree."""
    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(workdir, "order.yaml", "config/demo.yaml", {"results": "results/order", **CHANGES})
    config = demo_config(CHANGES)
    grid = pipeline.Grid(config, limits=compute.Limits(8 * GB, None), calibration=Calibration())
    planned = {t.name: t.priority for t in pipeline.run_tasks(config, grid)}
    jobs = [job for job in grid.fit if job.rule == "ws"]
    longest = max(jobs, key=lambda job: planned[job.key])
    assert longest.map == "relu_raf" and jobs[0].map != "relu_raf"
    targets = [f"results/order/{job.key}.parquet" for job in jobs]
    quiet = {**env(), "WORDSENS_CALIBRATION": "none"}
    out = snakemake(workdir, *targets, "--cores", "1", "--scheduler", scheduler, "--configfile", cf, environ=quiet)
    started = _started(out.stdout + out.stderr)
    assert sorted(output for output, _ in started) == sorted(targets)
    assert started[0][0] == f"results/order/{longest.key}.parquet", started
    priorities = [priority for _, priority in started]
    assert priorities == sorted(priorities, reverse=True), started
    assert {output: p for output, p in started} == {
        f"results/order/{job.key}.parquet": pytest.approx(planned[job.key], abs=1e-3) for job in jobs
    }
