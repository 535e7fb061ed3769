"""Generalisation after changing one word (the paper's Figures 4 and 5): a simulation's first-stage
fit (``prepare``, ``wordsens.generalisation.core``), its Delta searches (``search``, ``search_many``,
``simulate``, ``wordsens.generalisation.searches``), its linear algebra
(``wordsens.generalisation.functionals``), the tasks (``synthetic_task``, ``draw_task``) and the
authors' algorithm (``gen_search``, ``wordsens.generalisation.reference``).
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
