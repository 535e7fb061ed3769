"""What a job needs from a machine, and what the machine has: the memory and time models of every job
(``costs``, ``map_costs``, ``swap_costs``), its wall time here (``timing``), its device and request
(``placement``), the devices and the refusal of a job that cannot fit (``devices``), and what one job may
use (``limits``). Torch-free: the map catalogue, the planner and the numerics all import it.
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
