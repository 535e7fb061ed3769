"""The ``wordsens`` command: ``--plugin`` loaded first, then the parser of every subcommand (the CLI's own and
those of the registered studies, ``StudySpec.commands``), then the subcommand's ``run``, whose text is printed.
A bad input, a missing or corrupt file and an estimate that cannot fit end in ``wordsens <command>: error: ...``
and exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any

from ..arguments import add_plugin_arg
from . import claims, maps, plan


def _commands() -> dict[str, Any]:
    """Every subcommand's module, with its ``add_parser(sub, maps)`` and ``run(args)``: the CLI's own, then
    each registered study's (``StudySpec.commands``: a module or its name)."""
    from ..studies import registry as studies

    found: dict[str, Any] = {"maps": maps, "plan": plan, "claims": claims}
    for spec in studies.specs():
        found |= {name: import_module(m) if isinstance(m, str) else m for name, m in spec.commands.items()}
    return found


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

    parser = argparse.ArgumentParser(
        prog="wordsens",
        description="Word sensitivity of attention layers vs. random features (Bombari & Mondelli, ICML 2024).",
    )
    add_plugin_arg(parser, default=[])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _commands().values():
        command.add_parser(sub, registry.names())
    return parser


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
        text = _commands()[args.command].run(args)
    except (ValueError, FileNotFoundError, CorruptCache, InsufficientResources) as err:
        print(f"wordsens {args.command}: error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0
