"""What a job needs from a machine, and what the machine has: the memory and time models of every
job (``wordsens.compute.costs``, the built-in maps' in ``wordsens.compute.map_costs``, a vocabulary
scan's in ``wordsens.compute.swap_costs``), its wall time on this machine (``wordsens.compute.timing``)
and its device (``wordsens.compute.placement``), the devices and the refusal of a job that cannot fit
(``wordsens.compute.devices``), and what one job may use here (``wordsens.compute.limits``). Torch-free:
the map catalogue, the planner and the numerics all import it.
"""

from .costs import GB, MB, CostModel, DenseCost, MemoryEstimate, Work
from .devices import InsufficientResources, check_fits
from .limits import LOCAL_MAX_JOB_HOURS, PLANNED_LIMITS, Limits, on_machine, planned_limits

__all__ = [
    "GB",
    "LOCAL_MAX_JOB_HOURS",
    "MB",
    "PLANNED_LIMITS",
    "CostModel",
    "DenseCost",
    "InsufficientResources",
    "Limits",
    "MemoryEstimate",
    "Work",
    "check_fits",
    "on_machine",
    "planned_limits",
]
