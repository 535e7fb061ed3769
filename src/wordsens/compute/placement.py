"""Where a job runs on one machine with a shared GPU, and what it asks of the machine (``Cost``, ``Request``).

A job's CPU time is its family's built-in calibrated time (a fixed rule: a new calibration never moves a job
to another device); its GPU time ``GPU_STARTUP`` plus its family's ``GpuRate`` work (``GPU_RATES``, joined
as the studies register; fitted on a GPU node's run: docs/gpu.md), slowed ``slots`` times by the processes
sharing the GPU. ``gpu_pays``: ``device: auto`` sends a job to the GPU only where its GPU time, counted
``cores / slots`` times, is below its CPU time, or the GPU becomes the queue while cores idle. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .costs import GB, JOBSTEP_OVERHEAD, MB, PROCESS_OVERHEAD, MemoryEstimate
from .limits import GPU_SLOTS, Limits
from .timing import Calibration, Registered

GPU_STARTUP = 5.5  # seconds of a GPU job beside its work (docs/benchmarks.md, "Where the constants come from")


@dataclass(frozen=True)
class GpuRate:
    """A family's GPU work, alone on the GPU: ``per_search`` seconds per estimate (its latency: small
    kernels and host synchronisations) plus ``ratio`` seconds per second of its CPU cost model."""

    per_search: float
    ratio: float

    def work(self, model_seconds: float, searches: int) -> float:
        return self.per_search * searches + self.ratio * model_seconds


# Each job rule's families (``JobRule.gpu_rates``, joined through ``add_rates``); a family ``kind:map`` may
# have one per working dtype (``kind:map:dtype``)
GPU_RATES: Registered[GpuRate] = Registered("the GPU rate")
rates_snapshot, restore_rates = GPU_RATES.snapshot, GPU_RATES.restore


def add_rates(rates: Mapping[str, GpuRate]) -> None:
    """Add job families' GPU rates (a registered job rule's: ``Registered.join``)."""
    for family, rate in rates.items():
        GPU_RATES.join(family, rate)


def gpu_rate(family: str, dtype: str | None = None) -> GpuRate:
    """The GPU rate of ``family`` searching in ``dtype``, else the family's, else the slowest of its kind (a
    plugin's map is not sent to a GPU on a guess), else the slowest of all."""
    if dtype and f"{family}:{dtype}" in GPU_RATES:
        return GPU_RATES[f"{family}:{dtype}"]
    if family in GPU_RATES:
        return GPU_RATES[family]
    kind = family.partition(":")[0]
    rates = [r for f, r in GPU_RATES.items() if f.startswith(f"{kind}:")] or list(GPU_RATES.values())
    if not rates:
        raise LookupError(
            f"no GPU rate for {family!r}: none is registered; the job rules' rates join with the studies "
            "(wordsens.studies.registry.specs() loads them)"
        )
    return GpuRate(max(r.per_search for r in rates), max(r.ratio for r in rates))


def gpu_work(family: str, model_seconds: float, searches: int, *, sharing: int = 1, dtype: str | None = None) -> float:
    """Seconds of GPU work of a job (its ``GpuRate``), ``sharing`` processes sharing the GPU."""
    return sharing * gpu_rate(family, dtype).work(model_seconds, searches)


def gpu_pays(
    family: str,
    model_seconds: float,
    searches: int,
    *,
    slots: int = GPU_SLOTS,
    cores: int | None = None,
    dtype: str | None = None,
) -> bool:
    """Whether a job is sent to the GPU shared by ``slots`` processes beside ``cores`` cores (None: as
    many as slots): its GPU seconds times ``cores / slots`` below its built-in CPU seconds."""
    if slots < 1:
        raise ValueError(f"the GPU's slots must be at least 1, got {slots}")
    weight = (cores or slots) / slots
    gpu = GPU_STARTUP + gpu_work(family, model_seconds, searches, sharing=slots, dtype=dtype)
    return gpu * weight < Calibration().seconds(family, model_seconds)


DTYPES = ("auto", "float32", "bfloat16", "float64")


def working_dtype(setting: str, device: str, default: str, reduced: tuple[str, ...] = ()) -> str | None:
    """The working dtype of a map's search under ``ws.dtype`` (``DTYPES``), or None where it is the map's
    own (``default``): ``auto`` is bfloat16 on ``cuda`` for the maps whose search runs in it (``reduced``:
    DRF), ``bfloat16`` is it for those maps on any device; the others keep their own."""
    if setting not in DTYPES:
        raise ValueError(f"unknown dtype {setting!r}; choose one of {', '.join(DTYPES)}")
    if setting in ("auto", "bfloat16"):
        wanted = "bfloat16" if "bfloat16" in reduced and (setting == "bfloat16" or device == "cuda") else None
    else:
        wanted = setting
    return None if wanted == default else wanted


def gpu_trials_per_job(trials: int, per_job: int, job_bytes: int, budget: int, slots: int = GPU_SLOTS) -> int:
    """Trials per job of a grid point on the GPU: ``trials`` split into as many jobs as run there side by
    side (``slots``, as many as ``budget`` bytes hold), never more per job than ``per_job``."""
    side_by_side = max(1, min(slots, budget // max(job_bytes, 1)))
    return max(1, min(per_job, math.ceil(trials / side_by_side)))


# Host memory of a job on a GPU (its processes, torch's CUDA context and kernels), and the GPU memory each
# process holds beyond its arrays (context, workspaces, allocator slack); assumed, not measured here
CUDA_HOST_BYTES = PROCESS_OVERHEAD + JOBSTEP_OVERHEAD + 2 * GB
CUDA_CONTEXT_BYTES = 1 * GB


def job_device(setting: str, limits: Limits, *, prefers_gpu: bool = True, gpu_pays: bool | None = None) -> str:
    """Where a job runs, the one rule for every job and step: ``cpu``/``cuda`` as set; ``auto``: ``cuda``
    when a GPU is known and either it is shared by one machine's jobs and ``gpu_pays`` (None: every job)
    or, on a cluster (a GPU of its own), the job ``prefers_gpu``; else ``cpu``."""
    if setting == "auto":
        if limits.gpu is None:
            return "cpu"
        if limits.shared_gpu:
            return "cpu" if gpu_pays is False else "cuda"
        return "cuda" if prefers_gpu else "cpu"
    return setting


@dataclass(frozen=True)
class Placement:
    """One unit of work of a grid point (a trial, a simulation, a row) on either device: its ``family``, CPU
    cost-model seconds (``model``), estimates (``searches``), working dtype on each device (None: the map's
    own) and the processes sharing the GPU with it (``sharing``) beside ``cores`` cores."""

    family: str
    model: float
    searches: int
    cpu_dtype: str | None = None
    gpu_dtype: str | None = None
    sharing: int = 1
    cores: int | None = None

    @classmethod
    def on(cls, limits: Limits, family: str, model: float, searches: int, **dtypes: str | None) -> Placement:
        """A unit under ``limits``: the shared GPU's slots share it, else one GPU per job (a cluster)."""
        return cls(
            family, model, searches, sharing=limits.gpu_slots if limits.shared_gpu else 1, cores=limits.cores, **dtypes
        )

    def device(self, setting: str, limits: Limits, units: int, prefers_gpu: bool) -> str:
        """Where a job of ``units`` units runs (``job_device``)."""
        pays = gpu_pays(
            self.family,
            self.model * units,
            self.searches * units,
            slots=self.sharing,
            cores=self.cores,
            dtype=self.gpu_dtype,
        )
        return job_device(setting, limits, prefers_gpu=prefers_gpu, gpu_pays=pays)

    def dtype(self, device: str) -> str | None:
        return self.gpu_dtype if device == "cuda" else self.cpu_dtype

    def seconds(self, device: str) -> float:
        """Seconds of one unit on ``device``: the cost model's on the CPU, the GPU's work on ``cuda`` (its
        start-up added per job: ``Grid.estimate``)."""
        if device != "cuda":
            return self.model
        return gpu_work(self.family, self.model, self.searches, sharing=self.sharing, dtype=self.gpu_dtype)


@dataclass(frozen=True)
class Cost:
    """What a job asks of the machine: its estimated ``seconds`` on its device (``Placement.seconds``), the
    peak bytes of its ``arrays``, the host memory it requests (``host_bytes``), what must fit its device
    (``device_bytes``), its ``threads`` and the arrays its memory setting allows (``cap``; None: none)."""

    seconds: float = 1.0
    arrays: int = 0
    host_bytes: int = PROCESS_OVERHEAD + JOBSTEP_OVERHEAD
    device_bytes: int = PROCESS_OVERHEAD + JOBSTEP_OVERHEAD
    threads: int = 1
    cap: int | None = None


def placed(
    arrays: int, device: str, seconds: float, *, resident: int = 0, threads: int = 1, cap: int | None = None
) -> Cost:
    """The cost of a job whose arrays take ``arrays`` bytes on ``device`` for ``seconds``, holding
    ``resident`` host bytes beside them (an encoder)."""
    if device == "cuda":
        return Cost(seconds, arrays, CUDA_HOST_BYTES + resident, arrays + CUDA_CONTEXT_BYTES, threads, cap)
    host = MemoryEstimate(arrays + resident, "").job
    return Cost(seconds, arrays, host, host, threads, cap)


def gpu_mem_mb(device: str, device_bytes: int) -> int:
    """GPU memory (MB) a job declares to Snakemake (its ``gpu_mem_mb`` resource): 0 on the CPU."""
    return -(-device_bytes // MB) if device == "cuda" else 0


@dataclass(frozen=True)
class Request:
    """What a step outside the grid requests (an embedding, a probe): host ``mem_mb``, its ``device`` and
    the GPU memory it declares there."""

    mem_mb: int
    device: str
    gpu_mem_mb: int

    @property
    def gpu(self) -> int:
        """GPUs to request (the SLURM plugin's ``--gpus``): 1 on ``cuda``."""
        return 1 if self.device == "cuda" else 0


def request(estimate: MemoryEstimate, setting: str, limits: Limits, *, prefers_gpu: bool) -> Request:
    """A step of memory ``estimate`` and device ``setting``; on a GPU it declares its whole estimate and its
    CUDA context."""
    device = job_device(setting, limits, prefers_gpu=prefers_gpu)
    return Request(-(-estimate.job // MB), device, gpu_mem_mb(device, estimate.bytes + CUDA_CONTEXT_BYTES))
