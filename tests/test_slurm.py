"""The workflow on a real SLURM cluster through the Snakemake SLURM executor plugin.

CI starts a single-node cluster on localhost (scripts/local-slurm.sh) and sets
WORDSENS_REQUIRE_SLURM=1, which turns a missing SLURM into a failure instead of a skip.
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

from workflow_utils import copy_workflow, env, write_config

REQUIRE = os.environ.get("WORDSENS_REQUIRE_SLURM") == "1"
DEMO = "config/demo.yaml"
METRICS = ["lower", "upper", "phi_norm", "delta_norm", "steps", "review_id", "seed"]
# the executor settings measured to work with a SLURM that has no accounting database
SLURM_ARGS = ["--profile", "profiles/slurm", "--slurm-status-command", "squeue",
              "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"]


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
    cmd = ["timeout", "-s", "KILL", str(timeout), sys.executable, "-m", "snakemake", "--directory", str(workdir),
           *SLURM_ARGS, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=workdir)
    if out.returncode != 0:
        raise AssertionError(f"SLURM run failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-8000:]}")
    return out


def _squeue_states() -> dict[str, str]:
    out = subprocess.run(["squeue", "-t", "all", "-h", "-o", "%i %T"], capture_output=True, text=True, check=True)
    return dict(line.split() for line in out.stdout.splitlines() if line.strip())


def _job_ids_in_logs(folder: Path) -> dict[Path, list[str]]:
    found = {}
    for log in folder.rglob("*.log"):
        ids = re.findall(r"slurm_job_id=(\d+)", log.read_text(errors="replace"))
        found[log] = ids
    return found


def test_demo_runs_as_slurm_jobs_with_local_results(slurm, demo_run, tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    _run_slurm(workdir, "--configfile", DEMO)
    config = yaml.safe_load((workdir / DEMO).read_text())
    results, local = workdir / config["results"], demo_run / config["results"]
    # every compute job ran as a SLURM job: its log names the job, squeue still knows it
    states = _squeue_states()
    compute_logs = list((results / "logs" / "ws").rglob("*.log"))
    compute_logs += list((workdir / config["resources"]).rglob("embed.log"))
    compute_logs += list((workdir / config["resources"] / "logs").glob("pool-*.log"))
    assert len(compute_logs) == 26 + 2
    for log in compute_logs:
        ids = re.findall(r"slurm_job_id=(\d+)", log.read_text())
        assert ids, f"{log} was not written inside a SLURM job"
        assert states.get(ids[-1]) == "COMPLETED", (log, ids, states.get(ids[-1]))
    # the same numbers as the local run (same seeds, same thread counts)
    for map_name in config["ws"]["maps"]:
        ours = pd.read_parquet(results / "tables" / f"ws_{map_name}.parquet")
        theirs = pd.read_parquet(local / "tables" / f"ws_{map_name}.parquet")
        key = ["d", "n", "L", "trial"] if map_name == "drf" else ["d", "n", "trial"]
        ours, theirs = ours.sort_values(key).reset_index(drop=True), theirs.sort_values(key).reset_index(drop=True)
        assert (ours["slurm_job_id"] != "").all() and (theirs["slurm_job_id"] == "").all()
        for column in METRICS:
            np.testing.assert_array_equal(ours[column].to_numpy(), theirs[column].to_numpy(), err_msg=column)
        # each job's measured memory (its process and the Snakemake job process) is within its request
        from wordsens.plan import ws_jobs

        requests = {(j.map, j.d, j.n, j.L): j.memory_bytes / 1024**2 for j in ws_jobs(config)}
        for _, row in ours.iterrows():
            L = None if pd.isna(row["L"]) else int(row["L"])
            request = requests[(map_name, int(row["d"]), int(row["n"]), L)]
            assert row["job_peak_memory_mb"] <= request <= 2 * row["job_peak_memory_mb"] + 256


def test_cancelled_job_is_retried_and_the_workflow_completes(slurm, tmp_path):
    """scancel a running WS job once it has written its 'started' marker: the profile's retries
    resubmit it and the results equal those of a local run of the same configuration."""
    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(workdir, "fault.yaml", DEMO, {
        "results": "results/fault", "ws": {"data": "synthetic", "method": "reference", "trials": 6,
                                           "trials_per_job": 6,
                                           "maps": {"rf": {"d": [64], "n": [60]}, "drf": None, "raf": None,
                                                    "relu_raf": None}},
    })
    log = workdir / "results" / "fault" / "logs" / "ws" / "rf" / "d64_n60" / "chunk0.log"
    cmd = ["timeout", "-s", "KILL", "900", sys.executable, "-m", "snakemake", "--directory", str(workdir),
           *SLURM_ARGS, "--configfile", cf]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=workdir,
                            start_new_session=True)
    try:
        deadline = time.time() + 300
        job_id = None
        while time.time() < deadline and job_id is None:
            if log.exists():
                match = re.search(r"started trial 0 .*slurm_job_id=(\d+)", log.read_text())
                job_id = match.group(1) if match else None
            time.sleep(0.5)
        assert job_id, "the WS job never started under SLURM"
        subprocess.run(["scancel", job_id], check=True)
        output, _ = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, output[-6000:]
    # the cancelled attempt is known to SLURM as cancelled; the retry (a new SLURM job) wrote the
    # log that remains (Snakemake removes a failed attempt's outputs and log before retrying)
    assert _squeue_states().get(job_id) == "CANCELLED"
    attempts = re.findall(r"^# .* slurm_job_id=(\d+)", log.read_text(), re.M)
    assert attempts and attempts[-1] != job_id
    assert _squeue_states().get(attempts[-1]) == "COMPLETED"
    slurm_logs = {p.stem for p in (workdir / ".snakemake" / "slurm_logs").rglob("*.log")}
    assert {job_id, attempts[-1]} <= slurm_logs
    ours = pd.read_parquet(workdir / "results" / "fault" / "tables" / "ws_rf.parquet").sort_values("trial")
    # the reference: the same configuration run locally
    local = copy_workflow(tmp_path / "local")
    shutil.copy2(workdir / cf, local / cf)
    subprocess.run([sys.executable, "-m", "snakemake", "--directory", str(local), "--cores", "2", "--configfile", cf],
                   check=True, capture_output=True, env=env(), cwd=local, timeout=900)
    theirs = pd.read_parquet(local / "results" / "fault" / "tables" / "ws_rf.parquet").sort_values("trial")
    assert len(ours) == 6
    for column in METRICS:
        np.testing.assert_array_equal(ours[column].to_numpy(), theirs[column].to_numpy(), err_msg=column)
