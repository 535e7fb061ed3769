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
from .placement import GPU_SLOTS

__all__ = ["LOCAL_MAX_JOB_HOURS", "PLANNED_LIMITS", "Limits", "on_machine", "planned_limits"]

# Expected wall hours one job may take on this machine under limits.max_job_hours: auto; a cluster
# profile lifts it. On a 2-core laptop the default config's longest jobs, DRF at d = 768 aside, stay well
# within it, and the run ends within the hour; at 0.5 h the variants' DRF point at n = 50 runs too, and the
# run takes over an hour (docs/benchmarks.md, "Where the constants come from").
LOCAL_MAX_JOB_HOURS = 0.2


def _gpu_visible() -> bool:
    """A CUDA GPU is usable here. The driver's files are checked first, so that machines without
    one never import torch at planning time."""
    if not (Path("/proc/driver/nvidia/gpus").is_dir() or shutil.which("nvidia-smi")):
        return False
    import torch

    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Limits:
    """What one job may use: ``cpu`` bytes of host memory; ``gpu`` bytes of GPU memory, or None
    where no GPU is known (then every ``device: auto`` means the CPU); ``hours`` of estimated wall
    time (``limits.max_job_hours``), None: no limit. ``shared_gpu``: the GPU jobs run side by side
    on one machine's GPU (a GPU visible here, or ``limits.gpu_memory_gb``), each taking its
    ``gpu_mem_mb`` of it, so ``device: auto`` sends there the jobs that finish sooner there (their cost
    models: ``wordsens.compute.placement``); False under a cluster profile
    (``limits.cluster_memory_gb`` set), where each GPU job is granted a GPU of its own, so ``auto``
    puts there only the maps whose cost model prefers a GPU (DRF): ``jobs.job_device``. On a shared
    GPU, ``gpu_slots`` jobs at most hold it at once (Snakemake's ``gpu`` resource, profiles/gpu-node)
    beside ``cores`` cores (None: unknown), which ``wordsens.compute.placement.gpu_pays`` weighs."""

    cpu: int
    gpu: int | None
    hours: float | None = None
    shared_gpu: bool = True
    gpu_slots: int = GPU_SLOTS
    cores: int | None = None

    @classmethod
    def of(cls, config: dict) -> Limits:
        """``limits.memory_gb``, ``limits.gpu_memory_gb`` and ``limits.max_job_hours``; ``auto``: the
        cluster's where a cluster profile gave them (``limits.cluster_memory_gb``,
        ``limits.cluster_gpu_memory_gb``; hours: no limit once ``cluster_memory_gb`` is set), else
        what this machine (its GPU) has free now (hours: ``LOCAL_MAX_JOB_HOURS``)."""
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
    """The limits a workflow plans with. The planning process (``planner``) measures them and
    exports them in ``WORDSENS_PLANNED_LIMITS``; a cluster job's process, which parses the Snakefile
    again on its node (other free memory, other GPUs), takes the planner's, so that its params and
    device are the ones planned."""
    if planner or PLANNED_LIMITS not in os.environ:
        limits = Limits.of(config)
        os.environ[PLANNED_LIMITS] = limits.to_text()
        return limits
    return Limits.from_text(os.environ[PLANNED_LIMITS])


def on_machine(limits: Limits, cores: int | None, gpu: int | None) -> Limits:
    """``limits`` on the machine of a run: its ``cores`` and the jobs that may hold its GPU at once
    (``gpu``: Snakemake's ``--resources gpu=N``, profiles/gpu-node); None keeps what ``limits`` has."""
    return replace(limits, cores=cores or limits.cores, gpu_slots=gpu or limits.gpu_slots)
