"""Can one real word carry a learned label? Figures 4 and 5 with real-word substitutions (the
configuration's ``gen_words``): per simulation every word of an encoder's vocabulary put at one word
position of a review and scored exactly (``wordsens.generalisation.words``), beside the continuous Delta on
the same simulation (``wordsens.generalisation.comparison``). One job per map, n, N and chunk of simulations
(``plan``: ``GenWordsJob``), its rows (``run``), its claims (``claims``), its figures and the best words as
text (``figure``), and the command ``wordsens gen-words`` for one simulation (``cli``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..spec import Command, StudySpec, schema_beside
from . import plan


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import gen_words_figure, gen_words_text

    table = tables["table"]
    gen_words_figure(
        table, params["columns"], outputs["figures"], outputs.get("penalised", ()), left_out=params["left_out"],
        settings=settings,
    )  # fmt: skip
    gen_words_text(table, outputs["text"][0], stamp=settings.get("stamp"))


def _add_parser(sub: Any, maps: Any) -> None:
    from .cli import add_parser

    add_parser(sub, maps)


def _run_command(args: Any) -> str:
    from .cli import run

    return run(args)


def _definitions() -> Sequence[Any]:
    from .claims import DEFINITIONS

    return DEFINITIONS


def _claims(rows: Any, tables: Mapping[str, Any]) -> None:
    from ...claims.rows import check_columns
    from .claims import REQUIRED, gen_words_claims

    frame = tables.get("gen_words")
    if frame is not None:
        check_columns("gen_words", frame, REQUIRED)
    gen_words_claims(rows, frame)


SPEC = StudySpec(
    name="gen_words",
    title="Figures 4-5 with real words: can one real word carry a learned label",
    section="gen_words",
    active=plan.active,
    schema=schema_beside(__file__),
    jobs=plan.gen_words_jobs,
    rules=(plan.GEN_WORDS_RULE,),
    numerics=plan.NUMERICS,
    owns="gen_words",
    figures=plan.figures,
    draw=_draw,
    claims=_claims,
    definitions=_definitions,
    needs=plan.needs,
    problems=plan.problems,
    coefficients={"gen_words_figure": (7.0, None)},
    commands=(Command(name="gen-words", add_parser=_add_parser, run=_run_command),),
)
