"""What a job needs from a machine, and what the machine has: the memory and time models of every
job (``wordsens.compute.costs``: the ``CostModel`` of a map and the data steps' models;
``wordsens.compute.map_costs``: the built-in maps' models) and the devices, budgets and memory limits
(``wordsens.compute.devices``, which refuses a job that cannot fit, with the ways out), and what one job may
use on this machine or cluster (``wordsens.compute.limits``). Torch-free: the map catalogue, the planner and
the numerics all import it.
"""

from .costs import (
    GB,
    JOBSTEP_OVERHEAD,
    MB,
    PROCESS_OVERHEAD,
    SAMPLERS,
    CostModel,
    DenseCost,
    MemoryEstimate,
    embed_memory,
    encoder_memory,
    encoder_parameters,
    itemsize,
    probe_memory,
)
from .devices import (
    InsufficientResources,
    available_bytes,
    check_fits,
    job_peak_bytes,
    job_processes,
    memory_budget,
    peak_rss_bytes,
    resolve_device,
)
from .limits import LOCAL_MAX_JOB_HOURS, PLANNED_LIMITS, Limits, on_machine, planned_limits
from .map_costs import AttentionCost, DeepCost, DRFLayout, FirstLayerCost, drf_layout

__all__ = [
    "GB",
    "JOBSTEP_OVERHEAD",
    "LOCAL_MAX_JOB_HOURS",
    "MB",
    "PLANNED_LIMITS",
    "PROCESS_OVERHEAD",
    "SAMPLERS",
    "AttentionCost",
    "CostModel",
    "DRFLayout",
    "DeepCost",
    "DenseCost",
    "FirstLayerCost",
    "InsufficientResources",
    "Limits",
    "MemoryEstimate",
    "available_bytes",
    "check_fits",
    "drf_layout",
    "embed_memory",
    "encoder_memory",
    "encoder_parameters",
    "itemsize",
    "job_peak_bytes",
    "job_processes",
    "memory_budget",
    "on_machine",
    "peak_rss_bytes",
    "planned_limits",
    "probe_memory",
    "resolve_device",
]
