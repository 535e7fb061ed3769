"""Command line: ``wordsens ws ...`` (one word-sensitivity estimate, one JSON line on stdout),
``wordsens maps`` (the registered feature maps, see ``wordsens.maps``), ``wordsens gen ...`` (one
generalisation simulation, one JSON line), ``wordsens plan`` (the planned grid of a workflow
configuration, see ``wordsens.pipeline``), ``wordsens claims RESULTS_DIR`` (the claims table of a run,
see ``wordsens.claims``) and the commands the registered studies add (``StudySpec.commands``: the swaps
study's ``wordsens swap``). One module per subcommand, its parser beside its ``run``;
``wordsens.cli.command`` builds the parser and dispatches; what the commands share is
``wordsens.arguments``.

``--plugin`` (before or after the subcommand) imports modules that register more maps and studies
before the parser is built, so that ``--map`` offers them.

Heavy modules (torch, pandas, transformers, the planner, Snakemake) are imported only by the
subcommands that need them, so ``wordsens --help`` and ``wordsens claims`` import no torch and a
synthetic RF estimate runs in a process of a few hundred MB.
"""

from .command import main

__all__ = ["main"]
