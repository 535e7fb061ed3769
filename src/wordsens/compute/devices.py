"""What a machine has, and what a job reached: the device a job runs on, the memory it may use (free
memory, cgroup and SLURM limits), the refusal of jobs that cannot fit (``check_fits``, with the ways out),
and the peak memory of a process and of its SLURM job step. Torch is imported only to ask a GPU.
"""

from __future__ import annotations

import os
import resource
import sys
from typing import TYPE_CHECKING

from .costs import GB, MB, PROCESS_OVERHEAD, MemoryEstimate

if TYPE_CHECKING:  # torch is imported lazily: the Snakefile plans jobs without loading it
    import torch


class InsufficientResources(RuntimeError):
    """A job needs more memory than its device offers."""


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``"auto"``/None -> CUDA when available, else CPU; otherwise the named device, validated."""
    import torch

    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda'") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but no CUDA device is available; use 'cpu' or 'auto'")
    return dev


def workflow_device(planned: str) -> str:
    """The device a workflow job planned for ``planned`` runs on here: ``planned``, except that a job planned
    for ``cuda`` where no CUDA device is visible runs on the CPU and says so in its log (its numbers are equal
    in law to a GPU run's; the command line refuses ``--device cuda`` instead: ``resolve_device``)."""
    import torch

    if planned == "cuda" and not torch.cuda.is_available():
        print(
            "warning: this job was planned for a GPU (device cuda) but no CUDA device is visible here: it runs on "
            "the CPU, and its rows record device cpu. To plan for this machine, leave limits.gpu_memory_gb at "
            "auto, or set the section's device to cpu.",
            file=sys.stderr,
            flush=True,
        )
        return "cpu"
    return planned


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def available_bytes(device: torch.device | str) -> int:
    """Memory a job may use on ``device``. CUDA: free device memory. CPU: the smallest of MemAvailable, the
    cgroup limit, the SLURM allocation and ``WORDSENS_MAX_MEMORY_MB``."""
    if str(device).startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    limits: list[int] = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    cg = _cgroup_limit()
    if cg is not None:
        limits.append(cg)
    env = os.environ
    if env.get("SLURM_MEM_PER_NODE", "").isdigit():
        limits.append(int(env["SLURM_MEM_PER_NODE"]) * MB)
    elif env.get("SLURM_MEM_PER_CPU", "").isdigit() and env.get("SLURM_CPUS_ON_NODE", "").isdigit():
        limits.append(int(env["SLURM_MEM_PER_CPU"]) * int(env["SLURM_CPUS_ON_NODE"]) * MB)
    if env.get("WORDSENS_MAX_MEMORY_MB", "").strip():
        try:
            limits.append(int(float(env["WORDSENS_MAX_MEMORY_MB"]) * MB))
        except ValueError:
            raise ValueError(
                f"WORDSENS_MAX_MEMORY_MB must be a number of megabytes, got {env['WORDSENS_MAX_MEMORY_MB']!r}"
            ) from None
    return min(limits) if limits else 2**62


def memory_budget(device: torch.device, max_memory_gb: float | None = None) -> int:
    """Bytes of arrays one job may hold on ``device``: ``max_memory_gb`` when set, else what the
    device has free (``available_bytes``; on the CPU less the process's own overhead)."""
    if max_memory_gb is not None:
        if isinstance(max_memory_gb, bool) or not isinstance(max_memory_gb, (int, float)) or not max_memory_gb > 0:
            raise ValueError(f"max_memory_gb must be a positive number of GB, got {max_memory_gb!r}")
        return int(max_memory_gb * GB)
    have = available_bytes(device)
    return have if device.type == "cuda" else max(0, have - PROCESS_OVERHEAD)


def check_fits(estimate: MemoryEstimate, device: torch.device, what: str, *, limit: int | None = None) -> None:
    """Raise ``InsufficientResources`` with the ways out when ``estimate`` exceeds what ``device`` has,
    or the ``limit`` (bytes of arrays) that the job was given."""
    need = estimate.bytes if device.type == "cuda" else estimate.total
    have = available_bytes(device)
    if limit is not None and estimate.bytes > limit:
        raise InsufficientResources(
            f"{what} needs about {estimate.bytes / GB:.2f} GB of arrays ({estimate.detail}) but its memory setting "
            f"allows {limit / GB:.2f} GB. Ways out: raise the setting (--max-memory-gb, ws.max_memory_gb), run it on a "
            "GPU or a cluster node with more memory (snakemake --profile profiles/slurm), or choose a smaller d or n."
        )
    if need <= have:
        return
    raise InsufficientResources(
        f"{what} needs about {need / GB:.1f} GB ({estimate.detail}) but {device} has {have / GB:.1f} GB available. "
        "Ways out: run it on a GPU with enough memory (device 'cuda'), submit it to a cluster node with "
        "more memory (snakemake --profile profiles/slurm), or choose a smaller d or n."
    )


def peak_rss_bytes() -> int:
    """Peak resident memory of this process so far (bytes): Linux's ``VmHWM`` (``ru_maxrss`` keeps the
    parent's peak after fork + exec)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def job_processes() -> list[tuple[int, str, int]]:
    """``(pid, name, peak RSS bytes)`` of this process and its ancestors inside a SLURM job step
    (the Snakemake job process, shells, srun); empty outside SLURM or without /proc."""
    if not os.environ.get("SLURM_JOB_ID"):
        return []
    out, pid = [], os.getpid()
    try:
        while pid > 1:
            with open(f"/proc/{pid}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            name = fields.get("Name", "").strip()
            if name.startswith("slurmstepd"):
                break
            out.append((pid, name, int(fields.get("VmHWM", "0 kB").split()[0]) * 1024))
            pid = int(fields["PPid"])
    except (OSError, KeyError, ValueError):
        return []
    return out


def job_peak_bytes() -> int | None:
    """Peak resident memory of this process plus its ancestors inside a SLURM job step (what the job's
    request must cover); None outside SLURM or without /proc."""
    processes = job_processes()
    return sum(hwm for _, _, hwm in processes) if processes else None
