"""The plan's scheduler against a real run (the replay: benchmarks/gpu_replay.py): the default config.yaml
on one H200 node (16 cores, --resources gpu_mem_mb=143771, no priorities but the data steps', Snakemake's
ilp scheduler; stopped 474 s after Snakemake started, 468 s after its log's first stamp). The jobs its log
started, with their measured durations, resources and inputs, are extracted into
tests/data/gpu/h200_run.csv (18 KB; the log itself, 214 KB, stays in the shared folder:
``benchmarks/gpu_fit.py --log`` writes the file again).

The ilp scheduler breaks ties among equal priorities by its solver's choice, which no simulator can
know: the replay takes the ties in the order the log started the jobs, and the 13 jobs still running at
the stop (no duration measured) last beyond the run wherever they start."""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import pytest

from wordsens.pipeline import simulate

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the replay (a developer's tool)
from gpu_replay import logged_jobs, read_jobs, replay_tasks, steps_done  # noqa: E402

RUN = ROOT / "tests" / "data" / "gpu" / "h200_run.csv"
LOG = ROOT.parent / "shared" / "gpu" / "paper-run-h200" / "snakemake.log"
STOP, CORES, GPU_MB = 468.0, 16, 143771


def _replay(cores: int = CORES, gpu_mb: int = GPU_MB, order: dict[int, int] | None = None):
    jobs = read_jobs(RUN)
    order = order if order is not None else {job.jobid: i for i, job in enumerate(jobs)}
    return jobs, simulate(replay_tasks(jobs, STOP, order), cores, gpu_mb)


def test_the_replay_reproduces_the_runs_progress():
    """Same settings as the run: the steps done at the stop within 10 % of the log's (203), and each job
    started within seconds of its logged start."""
    jobs, times = _replay()
    logged = sum(1 for job in jobs if job.end is not None and job.end <= STOP)
    assert logged == 203 and len(jobs) == 216
    assert abs(steps_done(times, STOP) - logged) <= 0.1 * logged
    assert statistics.median(abs(times[str(job.jobid)][0] - job.start) for job in jobs) <= 5.0


def test_the_replay_fails_on_other_settings():
    """The check can fail: with 12 cores the replay is more than 10 % behind the run, and with 14 its
    jobs start half a minute off."""
    jobs, times = _replay(cores=12)
    assert steps_done(times, STOP) < 0.9 * 203
    jobs, times = _replay(cores=14)
    assert statistics.median(abs(times[str(job.jobid)][0] - job.start) for job in jobs) > 20.0


def test_other_tie_orders_start_the_unfinished_jobs_earlier():
    """Where the ties are taken in another order (the job ids', or shuffled), the jobs that never
    finished in the run start earlier and hold their cores to the stop: fewer steps are done."""
    jobs = read_jobs(RUN)
    ids = [job.jobid for job in jobs]
    random.Random(0).shuffle(ids)
    for order in ({job.jobid: job.jobid for job in jobs}, {jobid: i for i, jobid in enumerate(ids)}):
        _, times = _replay(order=order)
        assert steps_done(times, STOP) < 203


@pytest.mark.skipif(not LOG.is_file(), reason="the H200 run's log is not here (../shared/gpu/paper-run-h200)")
def test_the_extracted_jobs_are_the_logs():
    assert logged_jobs(LOG) == read_jobs(RUN)
