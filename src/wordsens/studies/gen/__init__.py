"""Figures 4 and 5: generalisation after changing one word (the configuration's ``gen``). Per figure,
data source, map, n and N, simulations that fit a first stage on N samples, learn a new sample (fine-tuned
or re-trained) and search the change Delta of one word that flips its label (``plan``: ``GenJob``;
``run``: its rows), the claims on them (``claims``) and Figures 4 and 5 with their alignment companions
(``figure``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..spec import Command, StudySpec, schema_beside
from . import plan

# the columns every row of a generalisation table has (the claims read them)
REQUIRED = (
    "figure",
    "map",
    "data",
    "d",
    "n",
    "N",
    "simulation",
    "training",
    "loss",
    "penalty",
    "y",
    "t0",
    "D0",
    "D1",
    "err",
    "gamma_min",
)


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from ...plots.generalisation import gen_figure

    for name, y in (("figures", "err"), ("alignment", "alignment")):
        gen_figure(
            tables["table"], params["columns"], outputs[name], hue=params["hue"], y=y, left_out=params["left_out"],
            settings=settings,
        )  # fmt: skip


def _claims(rows: Any, tables: Mapping[str, Any]) -> None:
    from ...claims.rows import check_columns
    from .claims import gen_claims

    for key, frame in tables.items():
        check_columns(key, frame, REQUIRED)
    gen_claims(rows, {key: frame for key, frame in tables.items() if not frame.empty})


def _add_parser(sub: Any, maps: Any) -> None:
    from .cli import add_parser

    add_parser(sub, maps)


def _run_command(args: Any) -> str:
    from .cli import run

    return run(args)


SPEC = StudySpec(
    name="gen",
    title="Figures 4-5: can one changed word flip a learned label (generalisation after a one-word change)",
    section="gen",
    active=plan.active,
    schema=schema_beside(__file__),
    jobs=plan.gen_jobs,
    rules=(plan.GEN_RULE,),
    numerics=plan.NUMERICS,
    owns=r"gen_fig[45]_\w+",
    figures=plan.figures,
    draw=_draw,
    claims=_claims,
    problems=plan.problems,
    normalise=plan.normalise,
    coefficients={"gen_figure": (7.0, None)},
    commands=(Command(name="gen", add_parser=_add_parser, run=_run_command),),
)
