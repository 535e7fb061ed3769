"""Where a job runs on one machine with a shared GPU: on the CPU or on the GPU, by its cost model.

A job's CPU time is its family's calibrated time (``wordsens.compute.timing``, the built-in
coefficients: a fixed rule, so that a new calibration never moves a job, whose device is in its
params, to another device). Its GPU time is ``GPU_STARTUP`` (the process, torch's CUDA context, the
sample and the write) plus the work, which the ``slots`` processes sharing the GPU
(``Limits.gpu_slots``, the profile's ``gpu`` resource) slow down ``slots`` times: CUDA time-slices
processes (no MPS), so a job running beside others gets its share of the GPU. The work is
``per_search`` seconds of latency per estimate (small kernels and host synchronisations: an RF or
attention search takes hundreds of steps of a few small products) and ``ratio`` GPU seconds per second
of the CPU model (the arrays' work). ``GPU_RATES`` holds them per family, fitted (``fit_rates``) on
one H200 node's run of the default configuration and single jobs (docs/gpu.md, "What runs where"), each
given by the job rule that runs the family (``JobRule.gpu_rates``) and joined when its study registers.

``gpu_pays``: ``device: auto`` sends a job to the GPU only where its GPU time, counted ``cores /
slots`` times, is below its CPU time: each of the GPU's ``slots`` must do the work of ``cores /
slots`` cores, or the GPU becomes the queue the run waits for while cores idle (a job moved to the
GPU shortens the CPU side by its time over ``cores``, and lengthens the GPU side by its GPU time over
``slots``). ``gpu_trials_per_job``: the trials of a map worth a GPU split into as many jobs as can
run there side by side. Torch-free, and nothing of wordsens beyond ``wordsens.compute.timing``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .timing import Calibration

__all__ = [
    "DTYPES",
    "GPU_RATES",
    "GPU_SLOTS",
    "GPU_STARTUP",
    "GpuRate",
    "GpuSample",
    "add_rates",
    "cpu_seconds",
    "fit_rates",
    "gpu_pays",
    "gpu_rate",
    "gpu_seconds",
    "gpu_trials_per_job",
    "gpu_work",
    "rates_snapshot",
    "rates_table",
    "restore_rates",
    "working_dtype",
]

# Processes that share the GPU at once (profiles/gpu-node: resources gpu). The GPU's big jobs (DRF)
# are bound by reading their layers: a second one beside the first gains nothing but its half of the
# GPU. What a second process does hide is the other's start-up (GPU_STARTUP: about half of DRF's
# largest job alone), during which the GPU would idle. More processes only add CUDA contexts and
# time-slice the GPU among more jobs, the critical path's DRF jobs among them (docs/gpu.md: 16 shared
# it in the run the rates below were fitted on).
GPU_SLOTS = 2

# Seconds of a GPU job beside its work (the process, torch's CUDA context, the sample and the write): a
# DRF job alone on an H200, its wall time less its search (docs/benchmarks.md, "Where the constants come from").
GPU_STARTUP = 5.5


@dataclass(frozen=True)
class GpuRate:
    """A family's GPU work, alone on the GPU: ``per_search`` seconds per estimate (its latency) plus
    ``ratio`` seconds per second of its CPU cost model."""

    per_search: float
    ratio: float

    def work(self, model_seconds: float, searches: int) -> float:
        return self.per_search * searches + self.ratio * model_seconds


# Each job rule's families (``JobRule.gpu_rates``, joined by the study registry through ``add_rates``), fitted
# by fit_rates on the H200 run of the default configuration (docs/gpu.md; docs/benchmarks.md, "Where the
# constants come from"). A family ``kind:map`` may have one per working dtype (``kind:map:dtype``).
GPU_RATES: dict[str, GpuRate] = {}


def add_rates(rates: Mapping[str, GpuRate]) -> None:
    """Add job families' GPU rates (a registered job rule's); the same ones again are a no-op, other
    ones for a known family an error."""
    for family, rate in rates.items():
        if GPU_RATES.setdefault(family, rate) != rate:
            raise ValueError(f"the GPU rate of {family!r} is {GPU_RATES[family]}, not {rate}")


def rates_snapshot() -> dict[str, GpuRate]:
    """A copy of the GPU rates (``restore_rates`` puts it back)."""
    return dict(GPU_RATES)


def restore_rates(saved: Mapping[str, GpuRate]) -> None:
    GPU_RATES.clear()
    GPU_RATES.update(saved)


def _slowest(rates: Iterable[GpuRate]) -> GpuRate | None:
    rates = list(rates)
    if not rates:
        return None
    return GpuRate(max(r.per_search for r in rates), max(r.ratio for r in rates))


def gpu_rate(family: str, dtype: str | None = None) -> GpuRate:
    """The GPU rate of ``family`` searching in ``dtype`` (``ws:drf`` in bfloat16 has its own), else the
    family's, else the slowest of its kind (the part before ``:``; a plugin's map, not measured on a GPU,
    is not sent there on a guess), else the slowest of all."""
    if dtype and f"{family}:{dtype}" in GPU_RATES:
        return GPU_RATES[f"{family}:{dtype}"]
    if family in GPU_RATES:
        return GPU_RATES[family]
    kind = family.partition(":")[0]
    rate = _slowest(r for f, r in GPU_RATES.items() if f.startswith(f"{kind}:")) or _slowest(GPU_RATES.values())
    if rate is None:
        raise LookupError(
            f"no GPU rate for {family!r}: none is registered; the job rules' rates join with the studies "
            "(wordsens.studies.registry.specs() loads them)"
        )
    return rate


def gpu_work(family: str, model_seconds: float, searches: int, *, sharing: int = 1, dtype: str | None = None) -> float:
    """Seconds of GPU work of a job (its ``GpuRate``), ``sharing`` processes sharing the GPU."""
    return sharing * gpu_rate(family, dtype).work(model_seconds, searches)


def gpu_seconds(
    family: str, model_seconds: float, searches: int, *, sharing: int = 1, dtype: str | None = None
) -> float:
    """Wall seconds of a job on the GPU: ``GPU_STARTUP`` and its ``gpu_work``."""
    return GPU_STARTUP + gpu_work(family, model_seconds, searches, sharing=sharing, dtype=dtype)


def cpu_seconds(family: str, model_seconds: float) -> float:
    """Wall seconds of a job on one core: the built-in calibrated time of its family."""
    return Calibration().seconds(family, model_seconds)


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
    many as slots): its ``gpu_seconds`` there times ``cores / slots`` below its ``cpu_seconds``."""
    if slots < 1:
        raise ValueError(f"the GPU's slots must be at least 1, got {slots}")
    weight = (cores or slots) / slots
    gpu = gpu_seconds(family, model_seconds, searches, sharing=slots, dtype=dtype)
    return gpu * weight < cpu_seconds(family, model_seconds)


DTYPES = ("auto", "float32", "bfloat16", "float64")


def working_dtype(setting: str, device: str, default: str, reduced: tuple[str, ...] = ()) -> str | None:
    """The working dtype of a map's search under the setting ``ws.dtype`` (``DTYPES``), or None where
    it is the map's own (``default``, ``SearchSettings.dtype``): ``auto`` is bfloat16 on ``cuda`` for the
    maps whose search runs in it (``reduced``, ``SearchSettings.reduced``: DRF), the map's own
    elsewhere; ``bfloat16`` is it for those maps on any device, the others keep their own."""
    if setting not in DTYPES:
        raise ValueError(f"unknown dtype {setting!r}; choose one of {', '.join(DTYPES)}")
    if setting in ("auto", "bfloat16"):
        wanted = "bfloat16" if "bfloat16" in reduced and (setting == "bfloat16" or device == "cuda") else None
    else:
        wanted = setting
    return None if wanted == default else wanted


def gpu_trials_per_job(trials: int, per_job: int, job_bytes: int, budget: int, slots: int = GPU_SLOTS) -> int:
    """Trials per job of a grid point on the GPU: its ``trials`` split into as many jobs as run there
    side by side (the GPU's ``slots``, as many as its ``budget`` bytes hold jobs of ``job_bytes``), never
    more per job than the configured ``per_job``."""
    side_by_side = max(1, min(slots, budget // max(job_bytes, 1)))
    return max(1, min(per_job, math.ceil(trials / side_by_side)))


# ----------------------------------------------------------------------------- the fit
@dataclass(frozen=True)
class GpuSample:
    """One job measured on a GPU: its family, estimates (``searches``), CPU cost-model seconds, wall
    seconds and the mean number of GPU jobs running beside it (itself included: ``sharing``)."""

    family: str
    searches: int
    model: float
    measured: float
    sharing: float


def fit_rates(samples: Iterable[GpuSample]) -> tuple[float, dict[str, GpuRate]]:
    """The start-up and each family's ``GpuRate`` from jobs measured on a shared GPU: ``measured =
    startup + sharing (per_search searches + ratio model)``, by non-negative least squares on relative
    errors (a coefficient that comes out negative is set to 0 and the rest fitted again). The work of
    ``sharing`` processes shares the GPU; their start-up runs beside it."""
    import numpy as np

    rows = [s for s in samples if s.measured > 0 and math.isfinite(s.measured)]
    families = sorted({s.family for s in rows})
    columns = 1 + 2 * len(families)
    A = np.zeros((len(rows), columns))
    for i, s in enumerate(rows):
        j = 1 + 2 * families.index(s.family)
        A[i, 0], A[i, j], A[i, j + 1] = 1.0, s.sharing * s.searches, s.sharing * s.model
    t = np.array([s.measured for s in rows])
    A, b = A / t[:, None], np.ones(len(rows))
    free = [j for j in range(columns) if A[:, j].any()]
    while True:
        x = np.zeros(columns)
        x[free] = np.linalg.lstsq(A[:, free], b, rcond=None)[0]
        negative = [j for j in free if x[j] < 0]
        if not negative:
            break
        free = [j for j in free if j not in negative]
    rates = {f: GpuRate(float(x[1 + 2 * i]), float(x[2 + 2 * i])) for i, f in enumerate(families)}
    return float(x[0]), rates


def rates_table(rates: Mapping[str, GpuRate]) -> list[str]:
    """The rates, one line per family (what docs/gpu.md shows)."""
    return [f"  {f:18s} {r.per_search:8.4f} s/search  {r.ratio:9.5f} s per model s" for f, r in sorted(rates.items())]
