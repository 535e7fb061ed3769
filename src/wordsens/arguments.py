"""What the ``wordsens`` commands share (``wordsens.cli``'s and the studies' own): the argument types
(``positive_int``, ``position``, ``parse_option``) and the options that more than one command takes
(``--option``, ``--data`` with ``--min-tokens``, ``--plugin``). argparse only."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = [
    "PLUGIN_HELP",
    "add_data_args",
    "add_option_arg",
    "add_plugin_arg",
    "parse_option",
    "position",
    "positive_int",
]

PLUGIN_HELP = (
    "a module name or .py file that registers feature maps (wordsens.maps); repeatable, also "
    "after the subcommand; added to WORDSENS_PLUGINS"
)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def position(text: str) -> int | str:
    """A 0-based token index, or ``all``."""
    if text == "all":
        return "all"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"position must be a 0-based token index or 'all', got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"position must be >= 0, got {value}")
    return value


def parse_option(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as an int, a float, null/none (None), true/false, or text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value (e.g. heads=4), got {text!r}")
    value: Any = raw
    for parse in (int, float):
        try:
            value = parse(raw)
            break
        except ValueError:
            continue
    else:
        value = {"null": None, "none": None, "true": True, "false": False}.get(raw.lower(), raw)
    return key, value


def add_plugin_arg(parser: argparse.ArgumentParser, default: Any = argparse.SUPPRESS) -> None:
    """``--plugin``: on the top-level parser with ``default=[]``; on a subcommand's without a default,
    so that it does not overwrite the plugins given before the subcommand."""
    parser.add_argument("--plugin", action="append", default=default, metavar="MODULE|FILE.py", help=PLUGIN_HELP)


def add_option_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--option",
        type=parse_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="options",
        help="a map option (repeatable), e.g. --option L=4 (DRF's depth), --option heads=4 (mh_raf, block); values "
        "are read as int, float, true/false, null or text; `wordsens maps` lists each map's options",
    )


def add_data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        default="synthetic",
        metavar="synthetic|PATH",
        help="'synthetic' (i.i.d. Gaussian rows rescaled to norm sqrt(d), the default) or an embedding "
        "store written by the workflow (a directory with hidden.npy, index.parquet, meta.json)",
    )
    parser.add_argument(
        "--min-tokens", action="store_true", help="with --data PATH: draw only reviews with at least n real tokens"
    )
