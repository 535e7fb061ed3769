"""The Snakemake workflow within its limits (slow: ``pytest -m "not slow"`` skips it): jobs that do not
fit left out and marked, the shipped configuration's dry run on a small machine, the embedding job first on
a free core after its pool, and jobs sharing a GPU within its memory budget."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pandas as pd
import pytest
from workflow_utils import WS_ONLY, copy_workflow, env, gpu_memory_in_use, snakemake, write_config

pytestmark = pytest.mark.slow

DEMO = "config/demo.yaml"


def test_unfit_jobs_are_left_out_and_marked_in_the_figure_and_the_report(tmp_path):
    """limits.unfit: skip (the default) runs what fits, names what does not at the start and at the
    end of the run, and the WS figure and its report caption mark the points that were not run."""
    workdir = copy_workflow(tmp_path / "wf")
    # every WS job needs more than 0.3 GB (its process alone), so Figures 2 and 3 have no result
    cf = write_config(
        workdir,
        "skip.yaml",
        DEMO,
        {
            "results": "results/skip",
            "limits": {"memory_gb": 0.3},
            "ws": {"maps": {"raf": None, "relu_raf": None}},
            **WS_ONLY,
        },
    )
    out = snakemake(workdir, "--cores", "1", "--configfile", cf)
    text = out.stdout + out.stderr
    assert text.count("10 job(s) left out") == 2, text[-3000:]  # at the start and at the end
    assert "rf d32_n24 (1 job): needs" in text and "drf d16_n12_L3 (1 job): needs" in text
    assert "0.3 GB allowed by limits.memory_gb" in text and "profiles/slurm" in text
    figures = workdir / "results" / "skip" / "figures"
    assert sorted(p.name for p in figures.iterdir()) == [
        "fig2_rf_drf.pdf",
        "fig2_rf_drf.png",
        "fig2_rf_drf_scaled.pdf",
        "fig2_rf_drf_scaled.png",
    ]
    log = (workdir / "results" / "skip" / "logs" / "fig2_rf_drf" / "fig2_rf_drf.log").read_text()
    assert "Error" not in log
    snakemake(workdir, "--configfile", cf, "--report", "report.html")
    html = (workdir / "report.html").read_text(errors="replace")
    assert "Not run" in html and "drf d16_n12_L3 needs" in html


def test_dry_run_of_the_shipped_config_names_what_it_leaves_out(tmp_path):
    """On a small machine (20 GB, no GPU) the paper's configuration plans everything that fits and
    names the DRF points it leaves out, with the ways out."""
    workdir = copy_workflow(tmp_path / "wf")
    small = {**env(), "WORDSENS_MAX_MEMORY_MB": "20000", "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules"],
        cwd=workdir,
        env=small,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert "job(s) left out" in text and "drf d768_n80_L8 (1 job): needs" in text and "Ways out" in text
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", text, re.M))
    assert int(counts["ws"]) >= 3 * 21 and int(counts["gen"]) > 0  # RF, RAF, ReLU-RAF fit; DRF in part


def _started_after_the_pool(workdir, config: str, cores: int) -> tuple[list[str], str]:
    """Run the workflow on ``cores`` cores until the embedding job starts; the rules started after
    the pool job finished, in Snakemake's order, and its log up to there."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", config],
        cwd=workdir,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines, after = [], None
    try:
        for line in proc.stdout:
            lines.append(line)
            if re.match(r"Finished jobid: \d+ \(Rule: pool\)", line):
                after = []
            elif after is not None and line.startswith(("rule ", "localrule ")):
                after.append(line.split()[1].rstrip(":"))
                if after[-1] == "embed":
                    break
    finally:
        if proc.poll() is None:  # the rest of the run (in a temporary copy) is not needed
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    return after or [], "".join(lines)


def test_the_embedding_starts_at_the_first_free_core_after_its_pool(tmp_path):
    """On 2 cores busy with generalisation jobs that need no data, the embedding job is the first
    job to start once the pool is written (a 2-thread job waited there for two cores at once)."""
    workdir = copy_workflow(tmp_path / "wf")
    changes = {
        "ws": {"maps": {"rf": None, "drf": None, "raf": {"d": [16], "n": [8]}, "relu_raf": None}},
        "gen": {"data": ["synthetic"], "fig5": None, "simulations": 6, "simulations_per_job": 1},
        "variants": None,
        "long_context": None,
        "positions": None,
        "trained": None,
        "gen_words": None,
        "probes": {"enabled": False},
    }
    config = write_config(workdir, "busy.yaml", DEMO, changes)
    after, text = _started_after_the_pool(workdir, config, cores=2)
    assert after == ["embed"], (after, text[-3000:])
    busy = re.findall(r"^(?:local)?rule gen:", text, re.M)  # the cores were busy with jobs that need no data
    assert len(busy) >= 2, text[-3000:]


HAND_MADE_LOG = """rule ws:
    output: small0
    log: small0.log
    jobid: 1
    threads: 1
    resources: tmpdir=/tmp, mem_mb=500, gpu=1, gpu_mem_mb=1037

rule ws:
    output: big
    jobid: 2
    resources: tmpdir=/tmp, gpu=1, gpu_mem_mb=1047

localrule table:
    output: table
    jobid: 3
    resources: tmpdir=/tmp

Finished jobid: 1 (Rule: ws)
rule ws:
    output: small1
    jobid: 4
    resources: tmpdir=/tmp, gpu=1, gpu_mem_mb=1037
Finished jobid: 2 (Rule: ws)
Finished jobid: 4 (Rule: ws)
"""


def test_the_gpu_memory_check_reads_what_ran_side_by_side_from_the_log():
    """The check of the test below fails where jobs over the budget ran together: here small0 and big."""
    states = gpu_memory_in_use(HAND_MADE_LOG)
    assert states == [
        {"small0": 1037},
        {"small0": 1037, "big": 1047},
        {"small0": 1037, "big": 1047, "table": 0},
        {"big": 1047, "table": 0, "small1": 1037},
    ]
    assert max(sum(state.values()) for state in states) > 2083


def test_jobs_share_a_gpu_within_the_gpu_memory_budget(tmp_path):
    """limits.gpu_memory_gb declares a GPU (none is visible here) and ws.device: cuda sends every WS
    job there (auto would keep these toy jobs on the CPU): each declares its gpu_mem_mb (1,037 MB for
    each RF chunk, 1,048 MB for the DRF job in float32: arrays + CUDA context). Under --resources
    gpu_mem_mb=2083 two RF jobs fit side by side, the DRF job with no other: Snakemake's log shows RF
    jobs running together and the DRF job always alone. The jobs run on the CPU, each saying so in its
    log, and the rows record it."""
    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(
        workdir,
        "gpu.yaml",
        DEMO,
        {
            "results": "results/gpu",
            "limits": {"gpu_memory_gb": 4},
            "ws": {
                "data": "synthetic",
                "device": "cuda",
                "dtype": "float32",
                "trials": 3,
                "trials_per_job": 1,
                "maps": {
                    "rf": {"d": [8], "n": [4]},
                    "drf": {"d": [32], "n": [48], "L": [2]},
                    "raf": None,
                    "relu_raf": None,
                },
            },
            **WS_ONLY,
        },
    )
    results = workdir / "results" / "gpu"
    small = [f"results/gpu/ws/rf/d8_n4/chunk{c}.parquet" for c in range(3)]
    big = "results/gpu/ws/drf/d32_n48_L2/chunk0.parquet"
    out = snakemake(workdir, *small, big, "--cores", "2", "--configfile", cf, "--resources", "gpu_mem_mb=2083")
    states = gpu_memory_in_use(out.stdout + out.stderr)
    declared = {path: mb for state in states for path, mb in state.items()}
    assert declared == {**dict.fromkeys(small, 1037), big: 1048}, states
    assert max(sum(state.values()) for state in states) <= 2083, states
    assert all(set(state) == {big} for state in states if big in state), states  # the DRF job alone
    assert any(len(state) == 2 for state in states), states  # two RF jobs side by side
    rows = pd.concat(pd.read_parquet(workdir / path) for path in (*small, big))
    assert set(rows["device"]) == {"cpu"}
    assert "planned for a GPU (device cuda)" in (results / "logs" / "ws" / "rf" / "d8_n4" / "chunk0.log").read_text()
    # a budget too small for one job is named before anything runs, with the ways out
    again = snakemake(workdir, "--cores", "2", "--configfile", cf, "--resources", "gpu_mem_mb=1040", "-n", check=False)
    assert again.returncode != 0 and "drf d32_n48_L2: 1048 MB" in again.stdout + again.stderr
    assert "limits.gpu_memory_gb to at most 1.0" in again.stdout + again.stderr
