"""Real words against the continuous worst case (the configuration's ``swaps``): every word of an
encoder's vocabulary put in place of a review's word, scored exactly (``wordsens.search.swaps``), beside
the continuous search at the radius the best word moves. One job per map and n (``plan``: ``SwapJob``),
its rows (``run``), its claims (two reported ratios and ``continuous_covers_words``), its figure and the
readable top substitutions (``figure``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec import Command, Figure, Output, PlanView, StudySpec, beside, schema_beside
from . import plan


def _figures(grid: PlanView) -> list[Figure]:
    """``fig_swaps`` and ``tables/swaps_top.md`` where the study has a job that fits."""
    if not any(job.study == "swaps" for job in grid.fit):
        return []
    category = "Beyond the paper"
    return [
        Figure(
            name="swaps_figure",
            study="swaps",
            kind="swaps",
            tables={"table": "swaps"},
            outputs={
                "figures": Output(
                    stem="fig_swaps", caption=beside(__file__, "report", "fig_swaps.rst"), category=category
                ),
                "text": Output(
                    stem="swaps_top.md",
                    caption=beside(__file__, "report", "swaps_top.rst"),
                    category=category,
                    text=True,
                ),
            },
            params={"left_out": grid.left_out(study="swaps")},
        )
    ]


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import swaps_figure, swaps_text

    swaps_figure(tables["table"], outputs["figures"], left_out=params["left_out"], settings=settings)
    swaps_text(tables["table"], outputs["text"][0], stamp=settings.get("stamp"))


def _add_parser(sub: Any, maps: Any) -> None:
    from .cli import add_parser

    add_parser(sub, maps)


def _run_command(args: Any) -> str:
    from .cli import run

    return run(args)


def _claims(rows: Any, tables: Mapping[str, Any]) -> None:
    from ...claims.rows import check_columns
    from .claims import SWAPS_REQUIRED, swap_claims

    frame = tables.get("swaps")
    if frame is not None:
        check_columns("swaps", frame, SWAPS_REQUIRED)
    swap_claims(rows, None if frame is None or frame.empty else frame)


def _definitions() -> Any:
    from .claims import DEFINITIONS

    return DEFINITIONS


SPEC = StudySpec(
    name="swaps",
    title="real words against the continuous worst case, scored exactly over an encoder's vocabulary",
    section="swaps",
    active=plan.active,
    schema=schema_beside(__file__),
    jobs=plan.swap_jobs,
    rules=(plan.SWAPS_RULE,),
    numerics=plan.NUMERICS,
    owns="swaps",
    figures=_figures,
    draw=_draw,
    claims=_claims,
    definitions=_definitions,
    needs=plan.needs,
    problems=plan.swap_problems,
    coefficients={"swaps_figure": (4.0, None)},
    commands=(Command(name="swap", add_parser=_add_parser, run=_run_command),),
)
