"""Generalisation after changing one word (the paper's Figures 4 and 5): a simulation's first stage
(``prepare``, ``core``), its Delta searches (``search``, ``search_many``, ``simulate``, ``searches``), its
linear algebra (``functionals``), the tasks (``tasks``) and the authors' algorithm (``gen_search``, ``reference``).
"""

from .core import LOSSES, TRAININGS, Setup, prepare
from .first_stage import INTERPOLATION_TOL, Fit, interpolate
from .reference import RELIABLE_ERROR, gen_search, projection_error
from .searches import GenResult, search, search_many, simulate
from .tasks import check_distinct, check_task, distinct_rows, draw_task, synthetic_task

__all__ = [
    "INTERPOLATION_TOL",
    "LOSSES",
    "RELIABLE_ERROR",
    "TRAININGS",
    "Fit",
    "GenResult",
    "Setup",
    "check_distinct",
    "check_task",
    "distinct_rows",
    "draw_task",
    "gen_search",
    "interpolate",
    "prepare",
    "projection_error",
    "search",
    "search_many",
    "simulate",
    "synthetic_task",
]
