"""A grid point's two sides, CPU and GPU, for ``wordsens.studies.job_device`` to choose between: its cost model's
seconds on the CPU, its GPU time under the machine's sharing (``wordsens.compute.placement``), the
working dtype on each device (``ws.dtype``) and how its trials split on a GPU. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compute import placement
from ..compute.limits import Limits

__all__ = ["Placement", "split_trials", "work_placement", "ws_placement"]


@dataclass(frozen=True)
class Placement:
    """One unit of work of a grid point (a WS trial, a generalisation simulation): its ``family``, CPU
    cost-model seconds (``model``), estimates (``searches``), working dtype on each device (None: the
    map's own) and the processes sharing the GPU with it (``sharing``) beside ``cores`` cores."""

    family: str
    model: float
    searches: int
    cpu_dtype: str | None = None
    gpu_dtype: str | None = None
    sharing: int = 1
    cores: int | None = None

    def pays(self, units: int) -> bool:
        """Whether a job of ``units`` units goes to the GPU under ``device: auto``
        (``placement.gpu_pays``)."""
        return placement.gpu_pays(
            self.family,
            self.model * units,
            self.searches * units,
            slots=self.sharing,
            cores=self.cores,
            dtype=self.gpu_dtype,
        )

    def dtype(self, device: str) -> str | None:
        return self.gpu_dtype if device == "cuda" else self.cpu_dtype

    def seconds(self, device: str) -> float:
        """Seconds of one unit on ``device``: the cost model's on the CPU (the calibration scales it),
        the GPU's work under its sharing on ``cuda`` (its start-up added per job: ``Grid.estimate``)."""
        if device != "cuda":
            return self.model
        return placement.gpu_work(self.family, self.model, self.searches, sharing=self.sharing, dtype=self.gpu_dtype)


def _sharing(limits: Limits) -> int:
    """Processes sharing the GPU with a job: the shared GPU's slots, or one GPU per job on a cluster."""
    return limits.gpu_slots if limits.shared_gpu else 1


def ws_placement(ws: dict, limits: Limits, spec: Any, family: str, model: float, positions: int) -> Placement:
    """The two sides of a WS trial of ``model`` CPU seconds searching ``positions`` positions, its
    working dtype from ``ws.dtype`` (``placement.working_dtype``)."""
    settings = spec.settings

    def dtype(device: str) -> str | None:
        return placement.working_dtype(ws.get("dtype", "auto"), device, settings.dtype, settings.reduced)

    return Placement(family, model, positions, dtype("cpu"), dtype("cuda"), _sharing(limits), limits.cores)


def work_placement(limits: Limits, family: str, model: float, searches: int) -> Placement:
    """The two sides of a unit of ``model`` CPU seconds running ``searches`` searches: a generalisation
    simulation (its Delta searches), a swaps study's position (its scan and continuous searches)."""
    return Placement(family, model, searches, sharing=_sharing(limits), cores=limits.cores)


def split_trials(trials: int, per_job: int, job_bytes: int, device: str, limits: Limits, prefers_gpu: bool) -> int:
    """Trials per job of a grid point: ``per_job`` (the configuration's), except for a map worth a GPU
    (``prefers_gpu``: DRF) on a shared GPU, whose trials split into as many jobs as the GPU holds
    side by side (``placement.gpu_trials_per_job``: its slots and memory; ``job_bytes``: what one job declares)."""
    if device != "cuda" or not prefers_gpu or not limits.shared_gpu or limits.gpu is None:
        return per_job
    return placement.gpu_trials_per_job(trials, per_job, job_bytes, limits.gpu, limits.gpu_slots)
