"""The workflow on a real SLURM cluster through the Snakemake SLURM executor plugin.

CI starts a single-node cluster on localhost (scripts/local-slurm.sh) and sets
WORDSENS_REQUIRE_SLURM=1, which turns a missing SLURM into a failure instead of a skip.

Each job's final state is read from files that do not expire: the SLURM log that the executor keeps
(``--slurm-keep-successful-logs``) under .snakemake/slurm_logs/, named by the SLURM job id. squeue
forgets finished jobs after MinJobAge, so no check depends on how fast the machine is.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import NO_STUDIES, copy_workflow, env, write_config

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

REQUIRE = os.environ.get("WORDSENS_REQUIRE_SLURM") == "1"
DEMO = "config/demo.yaml"
METRICS = ["lower", "upper", "phi_norm", "delta_norm", "steps", "review_id", "seed"]
# the executor settings measured to work with a SLURM that has no accounting database
SLURM_ARGS = [
    "--profile",
    "profiles/slurm",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-keep-successful-logs",
    "--cores",  # the one-node cluster has 2 CPUs: a group job asks for at most that many
    "2",
]


def _slurm_works() -> str | None:
    if not shutil.which("sbatch"):
        return "sbatch not found"
    out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
    if out.returncode != 0 or not re.search(r"idle|mix|alloc", out.stdout):
        return f"no idle SLURM node (sinfo: {out.stdout.strip() or out.stderr.strip()})"
    return None


@pytest.fixture(scope="module")
def slurm():
    problem = _slurm_works()
    if problem:
        if REQUIRE:
            pytest.fail(f"WORDSENS_REQUIRE_SLURM=1 but SLURM is not usable: {problem}")
        pytest.skip(f"no SLURM cluster here ({problem}); start one with scripts/local-slurm.sh")


def _run_slurm(workdir: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    # the plugin can wait forever on a finished job when status checks fail: hard timeout, KILL
    cmd = [
        "timeout",
        "-s",
        "KILL",
        str(timeout),
        sys.executable,
        "-m",
        "snakemake",
        "--directory",
        str(workdir),
        *SLURM_ARGS,
        *args,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=workdir)
    if out.returncode != 0:
        raise AssertionError(f"SLURM run failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-8000:]}")
    return out


def _slurm_log(workdir: Path, job_id: str) -> str:
    """The SLURM log of job ``job_id`` (its stdout and stderr, kept by the executor plugin)."""
    logs = list((workdir / ".snakemake" / "slurm_logs").rglob(f"{job_id}.log"))
    assert len(logs) == 1, f"no SLURM log for job {job_id}: {logs}"
    return logs[0].read_text(errors="replace")


def _completed(log: str) -> bool:
    """The Snakemake process inside the SLURM job finished every step it was given."""
    steps = re.findall(r"^(\d+) of (\d+) steps \(100%\) done$", log, re.M)
    return bool(steps) and "Error in rule" not in log and "CANCELLED" not in log


def _cancelled(log: str, job_id: str) -> bool:
    """slurmstepd writes this line into the job's output when scancel ends it."""
    return re.search(rf"\*\*\* JOB {job_id} ON \S+ CANCELLED AT", log) is not None


# the studies beyond the paper (variants, long contexts, positions: ordinary WS jobs) are left to the
# local demo run, which keeps these runs within their time limits on a 2-core machine


def test_demo_runs_as_slurm_jobs_with_local_results(slurm, demo_run, tmp_path):
    """The demo's data steps and word-sensitivity jobs, submitted through the SLURM executor, give
    the local run's numbers. The targets are the RF and DRF tables (10 WS jobs, DRF with its depth
    key and its own memory request): the attention maps, generalisation, probe and plot jobs of the
    demo are the same Snakemake jobs on the same or another rule, and each SLURM job costs start-up
    and status polling that a 2-core machine pays serially (the whole demo, studies left out, took
    505 s through SLURM in one CI run; the four WS tables 273 s)."""
    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(workdir, "slurm_demo.yaml", DEMO, NO_STUDIES)
    config = yaml.safe_load((workdir / cf).read_text())
    names = ["rf", "drf"]
    targets = [f"{config['results']}/tables/ws_{name}.parquet" for name in names]
    _run_slurm(workdir, *targets, "--configfile", cf)  # targets first: --configfile takes several files
    results, local = workdir / config["results"], demo_run / config["results"]
    # every compute job ran as a SLURM job: its log names the job, whose SLURM log shows it completed
    compute_logs = list((results / "logs" / "ws").rglob("*.log"))
    compute_logs += list((results / "logs" / "embed").glob("*.log")) + list((results / "logs" / "pool").glob("*.log"))
    assert len(compute_logs) == 6 + 4 + 2
    for log in compute_logs:
        ids = re.findall(r"slurm_job_id=(\d+)", log.read_text())
        assert ids, f"{log} was not written inside a SLURM job"
        assert _completed(_slurm_log(workdir, ids[-1])), (log, ids)
    # the same numbers as the local run (same seeds, same thread counts)
    for map_name in names:
        ours = pd.read_parquet(results / "tables" / f"ws_{map_name}.parquet")
        theirs = pd.read_parquet(local / "tables" / f"ws_{map_name}.parquet")
        key = ["d", "n", "L", "trial"] if map_name == "drf" else ["d", "n", "trial"]
        ours, theirs = ours.sort_values(key).reset_index(drop=True), theirs.sort_values(key).reset_index(drop=True)
        assert (ours["slurm_job_id"] != "").all() and (theirs["slurm_job_id"] == "").all()
        for column in METRICS:
            np.testing.assert_array_equal(ours[column].to_numpy(), theirs[column].to_numpy(), err_msg=column)
        # each job's measured memory (its process and the Snakemake job process) is within its request
        from wordsens import pipeline

        grid = pipeline.Grid(pipeline.load_config(workdir / "config.yaml", workdir / cf))
        requests = {
            (j.map, j.d, j.n, j.swept.get("L")): j.mem_mb for j in grid.jobs if j.rule == "ws" and j.study == "ws"
        }
        for _, row in ours.iterrows():
            L = None if pd.isna(row["L"]) else int(row["L"])
            request = requests[(map_name, int(row["d"]), int(row["n"]), L)]
            assert row["job_peak_memory_mb"] <= request <= 2 * row["job_peak_memory_mb"] + 256


def test_cancelled_job_is_retried_and_the_workflow_completes(slurm, tmp_path):
    """scancel a running WS job once it has written its 'started' marker: the profile's retries
    resubmit it and the results equal those of a local run of the same configuration."""
    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(
        workdir,
        "fault.yaml",
        DEMO,
        {
            "results": "results/fault",
            "ws": {
                "data": "synthetic",
                "method": "reference",
                "trials": 6,
                "trials_per_job": 6,
                "maps": {"rf": {"d": [64], "n": [60]}, "drf": None, "raf": None, "relu_raf": None},
            },
            **NO_STUDIES,
        },
    )
    log = workdir / "results" / "fault" / "logs" / "ws" / "rf" / "d64_n60" / "chunk0.log"
    target = "results/fault/tables/ws_rf.parquet"  # the WS job and its table: nothing else of the demo
    cmd = [
        "timeout",
        "-s",
        "KILL",
        "3600",
        sys.executable,
        "-m",
        "snakemake",
        "--directory",
        str(workdir),
        *SLURM_ARGS,
        target,
        "--configfile",
        cf,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=workdir, start_new_session=True
    )
    try:
        deadline = time.time() + 1800  # a hang guard: the job starts when SLURM schedules it
        job_id = None
        while time.time() < deadline and job_id is None:
            if log.exists():
                match = re.search(r"started trial 0 .*slurm_job_id=(\d+)", log.read_text())
                job_id = match.group(1) if match else None
            time.sleep(0.5)
        assert job_id, "the WS job never started under SLURM"
        subprocess.run(["scancel", job_id], check=True)
        output, _ = proc.communicate(timeout=3600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, output[-6000:]
    # the cancelled attempt's SLURM log says it was cancelled; the retry (a new SLURM job) wrote the
    # job log that remains (Snakemake removes a failed attempt's outputs and log before retrying)
    assert _cancelled(_slurm_log(workdir, job_id), job_id)
    attempts = re.findall(r"^# .* slurm_job_id=(\d+)", log.read_text(), re.M)
    assert attempts and attempts[-1] != job_id
    assert _completed(_slurm_log(workdir, attempts[-1]))
    ours = pd.read_parquet(workdir / "results" / "fault" / "tables" / "ws_rf.parquet").sort_values("trial")
    # the reference: the same configuration run locally
    local = copy_workflow(tmp_path / "local")
    shutil.copy2(workdir / cf, local / cf)
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--directory", str(local), "--cores", "2", target, "--configfile", cf],
        check=True,
        capture_output=True,
        env=env(),
        cwd=local,
        timeout=3600,
    )
    theirs = pd.read_parquet(local / "results" / "fault" / "tables" / "ws_rf.parquet").sort_values("trial")
    assert len(ours) == 6
    for column in METRICS:
        np.testing.assert_array_equal(ours[column].to_numpy(), theirs[column].to_numpy(), err_msg=column)
