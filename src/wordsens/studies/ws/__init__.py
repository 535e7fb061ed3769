"""Figures 2 and 3 (panels 1-2): the word sensitivity of the paper's maps against the context length n
on the paper's grids (the configuration's ``ws.maps``), its claims (RF's law and slope, DRF's decay,
RAF's floor, ReLU-RAF below RAF) and its figures, plain and times sqrt(n). Its jobs are the
word-sensitivity jobs every WS study shares (``wordsens.studies.sensitivity``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..sensitivity import WS_NUMERICS, WS_RULE
from ..spec import Command, StudySpec, schema_beside
from . import plan

# the columns every row of a word-sensitivity table has (the claims read them)
REQUIRED = ("map", "data", "d", "n", "trial", "lower")


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import ws_figure

    for name, scaled in (("plain", False), ("scaled", True)):
        ws_figure(tables, params["maps"], outputs[name], scaled=scaled, left_out=params["left_out"], settings=settings)


def _claims(rows: Any, tables: Mapping[str, Any]) -> None:
    """The paper's word-sensitivity claims on the ``ws_<map>`` tables (a study that lends its rows,
    ``StudySpec.lends_ws_rows``, adds one per map that has none: ``wordsens.claims.claims_inputs``)."""
    from ...claims.rows import check_columns
    from .claims import ws_claims

    for key, frame in tables.items():
        check_columns(key, frame, REQUIRED)
    ws_claims(rows, {key[3:]: frame for key, frame in tables.items() if not frame.empty})


def _add_parser(sub: Any, maps: Any) -> None:
    from .cli import add_parser

    add_parser(sub, maps)


def _run_command(args: Any) -> str:
    from .cli import run

    return run(args)


SPEC = StudySpec(
    name="ws",
    title="Figures 2-3: the word sensitivity of the paper's maps against n on the paper's grids",
    section="ws",
    active=plan.active,
    schema=schema_beside(__file__),
    jobs=plan.jobs,
    rules=(WS_RULE,),
    numerics=WS_NUMERICS,
    owns=r"ws_\w+",
    figures=plan.figures,
    draw=_draw,
    claims=_claims,
    problems=plan.problems,
    coefficients={"ws_figure": (3.7, None)},
    commands=(Command(name="ws", add_parser=_add_parser, run=_run_command),),
)
