"""The ``wordsens`` command (docs/cli.md): a module per subcommand of its own (``maps``, ``plan``, ``claims``)
and each study's in the study's folder (``StudySpec.commands``: ``ws``, ``gen``, ``swap``, ``gen-words``), each
a parser beside its ``run``; ``command`` builds the parser and dispatches; what the commands share is
``wordsens.arguments``. ``--plugin`` imports the modules that register more maps and studies before the parser
is built, so that ``--map`` offers them. Heavy modules (torch, pandas, transformers, the planner, Snakemake) are
imported only by the subcommands that need them: ``wordsens --help`` and ``wordsens claims`` import no torch.
"""

from .command import main

__all__ = ["main"]
