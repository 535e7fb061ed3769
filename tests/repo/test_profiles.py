"""The profiles as Snakemake reads them (its own argument parsing and profile loading): the
workflow profile (profiles/default, applied to every run) leaves the executor's settings to
--profile, and the SLURM profile's memory stands only where the user's configuration leaves
``limits.memory_gb`` at ``auto``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wordsens import compute, pipeline
from wordsens.compute import limits as planning
from wordsens.compute import placement
from wordsens.compute.costs import GB

ROOT = Path(__file__).resolve().parents[2]


def _snakemake_args(monkeypatch, *argv: str):
    """Snakemake's arguments for ``snakemake ARGV`` run in the checkout, profiles loaded."""
    from snakemake.cli import parse_args

    monkeypatch.chdir(ROOT)
    return parse_args(["--snakefile", str(ROOT / "Snakefile"), *argv])[1]


def _config(args) -> dict:
    """The configuration the Snakefile sees: config.yaml, the --configfile files, then --config
    (the profile's ``config:`` line), merged as Snakemake merges them, then validated."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    for path in args.configfile or []:
        update_config(config, yaml.safe_load(Path(path).read_text()))
    update_config(config, parse_config(args.config or []))
    return pipeline.validate(config)


def _user_config(tmp_path: Path, limits: dict | None) -> str:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"results": "results/mine", **({"limits": limits} if limits else {})}))
    return str(path)


def test_the_slurm_profile_wins_over_the_local_defaults(monkeypatch, tmp_path):
    args = _snakemake_args(monkeypatch, "--profile", "profiles/slurm", "--configfile", _user_config(tmp_path, None))
    assert args.executor == "slurm" and args.latency_wait == 60 and args.jobs == 200
    # the profile's own width of a group job (its SLURM CPUs), not this host's cores: without one,
    # a group of 10 one-thread jobs asked for 10 CPUs and stayed pending on a 2-CPU node
    assert args.cores == 4
    assert args.rerun_incomplete and args.keep_going and args.show_failed_logs  # every run's settings
    local = _snakemake_args(monkeypatch, "--cores", "3")
    assert local.executor is None and local.cores == 3 and local.latency_wait == 5
    assert local.rerun_incomplete and local.keep_going and local.show_failed_logs


@pytest.mark.parametrize(
    "limits, cpu_gb, gpu_gb, hours",
    [
        ({"memory_gb": 8, "max_job_hours": 3, "unfit": "fail"}, 8, None, 3),  # the user's own limits stand
        ({"memory_gb": "12.5", "gpu_memory_gb": 40}, 12.5, 40, None),
        (None, 250, None, None),  # left at auto: the cluster's nodes, from the profile, and no time limit
    ],
)
def test_the_users_limits_stand_under_the_slurm_profile(monkeypatch, tmp_path, limits, cpu_gb, gpu_gb, hours):
    monkeypatch.setattr(planning, "_gpu_visible", lambda: False)
    args = _snakemake_args(monkeypatch, "--profile", "profiles/slurm", "--configfile", _user_config(tmp_path, limits))
    config = _config(args)
    gpu = None if gpu_gb is None else gpu_gb * GB
    # each GPU job of a cluster is granted a GPU of its own (Limits.shared_gpu)
    assert compute.Limits.of(config) == compute.Limits(int(cpu_gb * GB), gpu, hours, shared_gpu=False)
    assert config["limits"]["unfit"] == (limits or {}).get("unfit", "skip")
    assert config["results"] == "results/mine"


def test_without_a_cluster_profile_auto_is_this_machine(monkeypatch, tmp_path):
    monkeypatch.setattr(planning, "_gpu_visible", lambda: False)
    monkeypatch.setattr(planning, "available_bytes", lambda device: 3 * GB)
    args = _snakemake_args(monkeypatch, "--cores", "1", "--configfile", _user_config(tmp_path, None))
    assert compute.Limits.of(_config(args)) == compute.Limits(3 * GB, None, compute.LOCAL_MAX_JOB_HOURS)


def test_the_gpu_node_profile_runs_here_on_every_core_with_a_gpu_memory_budget(monkeypatch, tmp_path):
    """profiles/gpu-node: a plain local run (every core, the workflow profile's settings) whose jobs
    share the GPU by the gpu_mem_mb they declare, within the profile's budget, at most GPU_SLOTS at once
    (the number the plan weighs the GPU by), started by priority (the greedy scheduler)."""
    args = _snakemake_args(monkeypatch, "--profile", "profiles/gpu-node", "--configfile", _user_config(tmp_path, None))
    local = _snakemake_args(monkeypatch, "--cores", "all")
    assert args.executor is None and args.cores == local.cores  # every core, as --cores all
    assert args.latency_wait == local.latency_wait and args.jobs == local.jobs
    assert args.rerun_incomplete and args.keep_going and args.show_failed_logs
    budget = args.resources["gpu_mem_mb"].value
    assert isinstance(budget, int) and budget >= 40 * 1024  # a data-centre GPU's memory, in MB
    assert set(args.resources) == {"gpu_mem_mb", "gpu"} and not args.config  # the user's limits stand
    assert args.resources["gpu"].value == placement.GPU_SLOTS == compute.Limits(0, None).gpu_slots
    assert args.scheduler == "greedy"
    monkeypatch.setattr(planning, "_gpu_visible", lambda: False)
    assert compute.Limits.of(_config(args)).shared_gpu  # one machine: its GPU jobs share the GPU
    # the command line wins over the profile's budget
    smaller = _snakemake_args(monkeypatch, "--profile", "profiles/gpu-node", "--resources", "gpu_mem_mb=24000")
    assert smaller.resources["gpu_mem_mb"].value == 24000
