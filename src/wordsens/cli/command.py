"""The ``wordsens`` command: ``--plugin`` loaded first, then the parser of every subcommand (the CLI's own,
each from its module: ``maps``, ``plan``, ``claims``; and each command a registered study adds,
``StudySpec.commands``: ``ws``, ``gen``, ``swap``, ``gen-words``, a plugin's), then the subcommand's ``run``,
whose text is printed. A bad input, a missing or corrupt file and an estimate that cannot fit end in
``wordsens <command>: error: ...`` and exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from ..arguments import add_plugin_arg
from . import claims, maps, plan

__all__ = ["build_parser", "load_plugins", "main"]

COMMANDS = {"maps": maps.run, "plan": plan.run, "claims": claims.run}


def load_plugins(argv: Sequence[str]) -> None:
    """Export the ``--plugin`` values in WORDSENS_PLUGINS (beside any already there) and import them."""
    from ..maps import registry

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--plugin", action="append", default=[])
    plugins = pre.parse_known_args(list(argv))[0].plugin
    if plugins:
        plugins = [os.path.abspath(p) if p.endswith(".py") else p for p in plugins]
        present = [p for p in os.environ.get(registry.PLUGINS_ENV, "").split(",") if p]
        os.environ[registry.PLUGINS_ENV] = ",".join(dict.fromkeys([*present, *plugins]))
    registry.load_plugins()


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand; ``--map`` offers the maps registered when it is built."""
    from ..maps import registry
    from ..studies import registry as studies

    parser = argparse.ArgumentParser(
        prog="wordsens",
        description="Word sensitivity of attention layers vs. random features (Bombari & Mondelli, ICML 2024).",
    )
    add_plugin_arg(parser, default=[])
    sub = parser.add_subparsers(dest="command", required=True)
    maps.add_parser(sub)
    plan.add_parser(sub)
    claims.add_parser(sub)
    for spec in studies.specs():
        for command in spec.commands:
            command.add_parser(sub, registry.names())
    return parser


def _runner(name: str) -> Callable[[argparse.Namespace], str]:
    """The ``run`` of a subcommand: the CLI's own, or a registered study's."""
    from ..studies import registry as studies

    if name in COMMANDS:
        return COMMANDS[name]
    return next(command.run for spec in studies.specs() for command in spec.commands if command.name == name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``wordsens`` on ``argv`` (default: the process's arguments); the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        load_plugins(argv)
    except ValueError as err:
        print(f"wordsens: error: {err}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    from ..compute.devices import InsufficientResources
    from ..io import CorruptCache

    try:
        text = _runner(args.command)(args)
    except (ValueError, FileNotFoundError, CorruptCache, InsufficientResources) as err:
        print(f"wordsens {args.command}: error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0
