"""What one job may use on this machine or cluster (``Limits``), from ``limits`` of a
configuration, and the limits a workflow plans with (``planned_limits``). Torch is not imported,
except to ask a visible GPU for its free memory.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .costs import GB
from .devices import available_bytes

# Expected wall hours one job may take here under limits.max_job_hours: auto (a cluster profile lifts it):
# on a 2-core laptop the default run ends within the hour (docs/benchmarks.md, "Where the constants come from")
LOCAL_MAX_JOB_HOURS = 0.2

# Processes that share the GPU at once (profiles/gpu-node): DRF's jobs are bound by reading their layers,
# so a second process only hides the other's start-up; more add CUDA contexts and time-slice the GPU
# among more jobs (docs/gpu.md)
GPU_SLOTS = 2


def _gpu_visible() -> bool:
    """A CUDA GPU is usable here (the driver's files checked first: without one, torch is not imported)."""
    if not (Path("/proc/driver/nvidia/gpus").is_dir() or shutil.which("nvidia-smi")):
        return False
    import torch

    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Limits:
    """What one job may use: ``cpu`` bytes of host memory; ``gpu`` bytes of GPU memory (None: no GPU known,
    ``device: auto`` means the CPU); ``hours`` of estimated wall time (None: no limit). ``shared_gpu``: the
    GPU jobs share one machine's GPU, at most ``gpu_slots`` at once beside ``cores`` cores (None: unknown);
    False under a cluster profile, where each GPU job has a GPU of its own (``placement.job_device``)."""

    cpu: int
    gpu: int | None
    hours: float | None = None
    shared_gpu: bool = True
    gpu_slots: int = GPU_SLOTS
    cores: int | None = None

    @classmethod
    def of(cls, config: dict) -> Limits:
        """The configuration's ``limits``; ``auto``: the cluster's where a cluster profile gave them (hours: no
        limit), else what this machine has free now (hours: ``LOCAL_MAX_JOB_HOURS``)."""
        limits = config["limits"]
        cpu, gpu = limits["memory_gb"], limits["gpu_memory_gb"]
        if cpu == "auto" and limits.get("cluster_memory_gb") is not None:
            cpu = limits["cluster_memory_gb"]
        if gpu == "auto" and limits.get("cluster_gpu_memory_gb") is not None:
            gpu = limits["cluster_gpu_memory_gb"]
        cpu_bytes = available_bytes("cpu") if cpu == "auto" else int(float(cpu) * GB)
        if gpu != "auto":
            gpu_bytes: int | None = int(float(gpu) * GB)
        else:
            gpu_bytes = available_bytes("cuda") if _gpu_visible() else None
        cluster = limits.get("cluster_memory_gb") is not None
        hours = limits.get("max_job_hours", "auto")  # --config passes it as text ("null", "0.5")
        if hours == "auto":
            hours = None if cluster else LOCAL_MAX_JOB_HOURS
        return cls(cpu_bytes, gpu_bytes, None if hours in (None, "null") else float(hours), shared_gpu=not cluster)

    def to_text(self) -> str:
        """JSON text for ``from_text`` (the planner hands its limits to the jobs' processes)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_text(cls, text: str) -> Limits:
        return cls(**json.loads(text))


PLANNED_LIMITS = "WORDSENS_PLANNED_LIMITS"


def planned_limits(config: dict, *, planner: bool) -> Limits:
    """The limits a workflow plans with: the planning process (``planner``) measures and exports them in
    ``WORDSENS_PLANNED_LIMITS``; a cluster job, which parses the Snakefile again on its node, takes them."""
    if planner or PLANNED_LIMITS not in os.environ:
        limits = Limits.of(config)
        os.environ[PLANNED_LIMITS] = limits.to_text()
        return limits
    return Limits.from_text(os.environ[PLANNED_LIMITS])


def on_machine(limits: Limits, cores: int | None, gpu: int | None) -> Limits:
    """``limits`` with a run's ``cores`` and GPU slots (``--resources gpu=N``); None keeps what it has."""
    return replace(limits, cores=cores or limits.cores, gpu_slots=gpu or limits.gpu_slots)
