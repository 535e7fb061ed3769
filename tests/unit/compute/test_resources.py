"""Memory estimates against measured peaks; runtime estimates; the refusal message."""

from __future__ import annotations

import json

import pytest
import torch
import yaml
from workflow_utils import run_cli

from wordsens import compute, pipeline
from wordsens.compute import costs, devices
from wordsens.maps import registry


@pytest.mark.parametrize(
    "map_name,n,d,L",
    [
        ("rf", 90, 192, 2),
        pytest.param("rf", 150, 256, 2, marks=pytest.mark.slow),  # 8 s: the largest
        ("drf", 40, 64, 2),
        ("drf", 20, 64, 3),
        ("raf", 200, 256, 2),
        ("relu_raf", 50, 768, 2),
    ],
)
def test_memory_estimate_covers_the_measured_peak(map_name, n, d, L):
    """A fresh process runs one estimate (what a workflow job's Python process does): its peak
    RSS is below the estimate, and the estimate stays within 2 x peak + 256 MB."""
    out = run_cli("ws", "--map", map_name, "--n", n, "--d", d, "--L", L, "--device", "cpu", "--max-steps", "30")
    assert out.returncode == 0, out.stderr
    peak = json.loads(out.stdout)["peak_memory_mb"]
    estimate = (
        registry.get(map_name)
        .ws_memory(n, d, {"L": L} if map_name == "drf" else {}, sampler="exact", restarts=64)
        .total
        / 1024**2
    )
    assert peak <= estimate <= 2 * peak + 256, (peak, estimate)


def test_runtime_estimates_are_positive_and_grow():
    small = registry.get("rf").ws_seconds(20, 64)
    big = registry.get("rf").ws_seconds(150, 768)
    assert 0 < small < big
    assert registry.get("drf").ws_seconds(50, 192, device="cuda") < registry.get("drf").ws_seconds(50, 192)
    assert registry.get("raf").ws_seconds(50, 768, method="reference") > registry.get("raf").ws_seconds(50, 768)


def test_plan_lists_unfit_jobs_with_the_ways_out(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "ws": {
                    "data": "synthetic",
                    "trials": 10,
                    "trials_per_job": 5,
                    "maps": {"drf": {"d": [768], "n": [80], "L": [8]}, "raf": {"d": [64], "n": [10]}},
                },
                "limits": {"memory_gb": 16, "gpu_memory_gb": "auto", "unfit": "fail"},
            }
        )
    )
    loaded = pipeline.load_config(config, schema=pipeline.SCHEMA)
    limits = compute.Limits(cpu=16 * costs.GB, gpu=None)
    jobs = [job for job in pipeline.Grid(loaded, limits=limits).jobs if job.rule == "ws"]
    assert len(jobs) == 4 and {job.chunk for job in jobs} == {0, 1}
    text = pipeline.describe(loaded, limits)
    assert "drf d768_n80_L8 (2 jobs)" in text and "profiles/slurm" in text and "limits.unfit: skip" in text
    assert "ws raf (cpu)" in text and "hours" in text


def test_available_memory_respects_limits(monkeypatch):
    monkeypatch.setenv("WORDSENS_MAX_MEMORY_MB", "123")
    assert devices.available_bytes(torch.device("cpu")) == 123 * 1024**2
    monkeypatch.setenv("WORDSENS_MAX_MEMORY_MB", "lots")
    with pytest.raises(ValueError, match="WORDSENS_MAX_MEMORY_MB"):
        devices.available_bytes("cpu")
    monkeypatch.delenv("WORDSENS_MAX_MEMORY_MB")
    monkeypatch.setenv("SLURM_MEM_PER_NODE", "456")
    assert devices.available_bytes("cpu") <= 456 * 1024**2
