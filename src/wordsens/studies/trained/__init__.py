"""A pre-trained encoder's own layers against their random counterparts (the configuration's ``trained``):
one job per encoder layer (``plan``: ``TrainedJob``), its rows (``run``), the trained / random ratios
reported in the claims table without a verdict (``claims``) and its figure (``figure``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside
from . import plan


def _figures(grid: PlanView) -> list[Figure]:
    """``fig_trained`` where the study has a layer (fitting or not: the layers left out are marked)."""
    if not any(job.study == "trained" for job in grid.jobs):
        return []
    fitting = any(job.study == "trained" for job in grid.fit)
    caption = beside(__file__, "report", "fig_trained.rst")
    return [
        Figure(
            name="trained_figure",
            study="trained",
            kind="trained",
            tables={"table": "trained"} if fitting else {},
            outputs={"figures": Output(stem="fig_trained", caption=caption, category="Beyond the paper")},
            params={"left_out": grid.left_out(study="trained")},
        )
    ]


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import trained_figure

    trained_figure(tables.get("table"), outputs["figures"], left_out=params["left_out"], settings=settings)


def _claims(rows: Any, tables: Mapping[str, Any]) -> None:
    from ...claims.rows import check_columns
    from .claims import TRAINED_REQUIRED, trained_claims

    frame = tables.get("trained")
    if frame is not None:
        check_columns("trained", frame, TRAINED_REQUIRED)
    trained_claims(rows, None if frame is None or frame.empty else frame)


def _definitions() -> Any:
    from .claims import DEFINITIONS

    return DEFINITIONS


SPEC = StudySpec(
    name="trained",
    title="a pre-trained encoder's own attention and layers against their random counterparts",
    section="trained",
    active=plan.active,
    schema=schema_beside(__file__),
    jobs=plan.trained_jobs,
    rules=(plan.TRAINED_RULE,),
    numerics=plan.NUMERICS,
    owns="trained",
    figures=_figures,
    draw=_draw,
    claims=_claims,
    definitions=_definitions,
    needs=plan.needs,
    problems=plan.trained_problems,
    coefficients={"trained_figure": (3.0, None)},
)
