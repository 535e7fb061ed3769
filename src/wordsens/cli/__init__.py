"""The ``wordsens`` command (docs/cli.md): a module per subcommand of its own (``maps``, ``plan``,
``claims``) and each study's in its folder (``StudySpec.commands``), each a parser beside its ``run``;
``command`` builds the parser (after ``--plugin``) and dispatches. Heavy modules are imported only by the
subcommands that need them: ``wordsens --help`` and ``wordsens claims`` import no torch.
"""

from .command import main

__all__ = ["main"]
