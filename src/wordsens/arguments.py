"""What the ``wordsens`` commands share: argument types, ``add_command`` (a subcommand whose module
docstring is its help), the options more than one command takes, and ``picked``. argparse only.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

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


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, doc: str | None
) -> argparse.ArgumentParser:
    """The subcommand ``name`` with its texts from its module's docstring ``doc``: the first paragraph, less the
    prefix that names the command, is its line in ``wordsens --help``; the rest is the description its own
    ``--help`` prints (argparse rewraps both)."""
    summary, _, description = (doc or "").partition("\n\n")
    return sub.add_parser(name, help=summary.removeprefix(f"``wordsens {name}``: "), description=description or None)


def add_map_args(
    parser: argparse.ArgumentParser,
    maps: Sequence[str],
    map_help: str = "the feature map: any registered map (`wordsens maps` lists them with their formulas)",
    n_help: str = "context length (tokens kept)",
    encoder: bool = False,
) -> None:
    """``--map`` (one of the registered ``maps``), ``--d`` and ``--n``: what every study command needs;
    ``encoder``: a command on an encoder's words, whose width bounds d."""
    parser.add_argument("--map", required=True, choices=maps, help=map_help)
    d_help = "at most the encoder's width" if encoder else "coordinates kept per token"
    parser.add_argument("--d", required=True, type=positive_int, help=f"embedding dimension ({d_help})")
    parser.add_argument("--n", required=True, type=positive_int, help=n_help)


def add_method_arg(parser: argparse.ArgumentParser, help: str) -> None:
    """``--method``: ``default`` (the package's algorithm) or ``reference`` (the authors')."""
    parser.add_argument("--method", choices=["default", "reference"], default="default", help=help)


def add_encoder_args(parser: argparse.ArgumentParser) -> None:
    """The commands on real words: the encoder (``--model``), the reviews (``--data``, ``--split``) and the
    candidate words (``--vocabulary``)."""
    parser.add_argument(
        "--model",
        default="bert-base-uncased",
        help="the encoder: a local folder, a Hub name, 'minilm' (the packaged all-MiniLM-L6-v2, unpacked into "
        "--cache) or 'demo-tiny-bert' (built into --cache); default bert-base-uncased",
    )
    parser.add_argument(
        "--data",
        default="hub",
        metavar="hub|demo|PATH",
        help="the reviews: 'hub' (stanfordnlp/imdb), 'demo' (a generated corpus) or a local copy (a .parquet file "
        "or folder, an aclImdb/ folder, aclImdb_v1.tar.gz)",
    )
    parser.add_argument("--split", default="train", help="the IMDb split (default train)")
    parser.add_argument(
        "--vocabulary",
        choices=["words", "tokens"],
        default="words",
        help="candidates: whole-word tokens (default) or every token (## pieces too); never specials or [unused*]",
    )


def add_words_output_args(parser: argparse.ArgumentParser, cache: str) -> None:
    """What the commands on real words end with: ``--cache`` (default ``cache``), ``--json``, ``--option`` and
    ``--plugin``."""
    parser.add_argument(
        "--cache", default=cache, help=f"where minilm and demo-tiny-bert are unpacked (default {cache})"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line instead of text")
    add_option_arg(parser)
    add_plugin_arg(parser)


def picked(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options ``names`` of ``args`` as keyword arguments, for a function whose parameters they name."""
    return {name: getattr(args, name) for name in names}
