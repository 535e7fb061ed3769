"""Can one real word carry a learned label? Figures 4 and 5 with real-word substitutions, scored exactly over
an encoder's vocabulary (``wordsens.generalisation.words``), beside the continuous Delta on the same
simulations (``wordsens.generalisation.comparison``): its command ``wordsens gen-words`` (``cli``) and one
simulation on reviews (``run``).
"""

from __future__ import annotations

from typing import Any

from ..spec import Command, StudySpec


def _add_parser(sub: Any, maps: Any) -> None:
    from .cli import add_parser

    add_parser(sub, maps)


def _run_command(args: Any) -> str:
    from .cli import run

    return run(args)


SPEC = StudySpec(
    name="gen_words",
    title="Figures 4-5 with real words: can one real word carry a learned label",
    section=None,
    active=lambda config: False,
    commands=(Command(name="gen-words", add_parser=_add_parser, run=_run_command),),
)
