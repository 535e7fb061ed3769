"""``wordsens swap``: the real words that change a map's features most at one position of a review

Put every word of an encoder's vocabulary at one position of a review (through the encoder's embedding layer,
rows of norm sqrt(d)), print the words that change the features phi(X) most, with S_words = ||phi(X') - phi(X)||
/ ||phi(X)||, the continuous word sensitivity on the same weights at the radius the best word moves, and the
distribution over the vocabulary."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...arguments import add_command, add_encoder_args, add_map_args, add_words_output_args, picked, positive_int
from ...data.sources import CACHE, encoder_source, reviews_frame

# the settings of the study's job that the options give as they are
SETTINGS = ("map", "d", "n", "model", "vocabulary", "screen", "sample", "sqrt_d", "max_steps", "device", "seed")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``swap`` subcommand and its options; ``maps``: the registered maps ``--map`` offers."""
    swap = add_command(sub, "swap", __doc__)
    add_map_args(
        swap,
        maps,
        encoder=True,
        n_help="tokens kept: the first n of [CLS] review [SEP], as the studies' samples keep them (row n-1: a word "
        "of a longer review; at most the encoder's positions)",
    )
    swap.add_argument("--review", type=int, default=0, help="0-based index of the review in the data (default 0)")
    swap.add_argument("--text", default=None, help="a text of your own instead of --data and --review")
    swap.add_argument(
        "--position",
        type=int,
        default=1,
        help="0-based position of the word substituted (default 1, the first word); [CLS], [SEP] and [PAD] refused",
    )
    swap.add_argument("--top", type=positive_int, default=10, help="best words printed (default 10)")
    add_encoder_args(swap)
    swap.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the seed the weights' seed is derived from, with the map and the review, as in the study "
        "(default 0; the output's seed is the weights' own)",
    )
    swap.add_argument("--device", default="auto", help="'auto' (CUDA when available), 'cpu' or 'cuda'")
    swap.add_argument("--screen", type=positive_int, default=256, help="screened maps: words scored exactly")
    swap.add_argument("--sample", type=positive_int, default=1024, help="screened maps: words of the statistics")
    swap.add_argument("--chunk-mb", type=float, default=64.0, help="working arrays of a chunk of words (MB)")
    swap.add_argument("--max-steps", type=positive_int, default=1000, help="step cap of the continuous search")
    swap.add_argument("--sqrt-d", action="store_true", help="also the continuous search at the radius sqrt(d)")
    add_words_output_args(swap, CACHE)


def words_encoder(args: argparse.Namespace) -> tuple[Path, str, Any, Any]:
    """``(cache, source, tokenizer, encoder)`` of ``--cache`` and ``--model`` on the CPU (the commands on real
    words); transformers is imported here."""
    from ...data.pretrained import load_encoder

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cache = Path(args.cache).expanduser()
    source = encoder_source(args.model, cache)
    tokenizer, encoder = load_encoder(source, "cpu", setting="--model")
    return cache, source, tokenizer, encoder


def _texts(args: argparse.Namespace, cache: Path) -> tuple[str, int]:
    """The review's text and its id (``--text``: -1)."""
    if args.text is not None:
        return args.text, -1
    frame = reviews_frame(args.data, args.split, cache)
    if not 0 <= args.review < len(frame):
        raise ValueError(f"--review {args.review} is not in [0, {len(frame) - 1}] ({len(frame)} reviews)")
    return str(frame["text"].iloc[args.review]), int(frame["review_id"].iloc[args.review])


def _check_n(encoder: Any, n: int) -> None:
    """``--n`` against the encoder's positions, before anything is read or scored."""
    positions = getattr(encoder.config, "max_position_embeddings", None)
    if positions is not None and n > int(positions):
        raise ValueError(
            f"--n {n} exceeds the encoder's {positions} positions (its max_position_embeddings): lower --n to at most "
            f"{positions}"
        )


def _check_position(tokenizer: Any, ids: list[int], position: int) -> None:
    """``--position`` against the sample's tokens ``ids``: a word's position, never a special token's
    (the study substitutes words only: ``wordsens.data.vocabulary.swap_positions``)."""
    n = len(ids)
    specials = {int(i) for i in tokenizer.all_special_ids}
    words = [p for p in range(n) if ids[p] not in specials]
    span = f"between {words[0]} and {words[-1]}" if words else "none: the sample holds no word"
    if not 0 <= position < n:
        raise ValueError(f"--position {position} is outside the n = {n} tokens of the sample; its words are {span}")
    if ids[position] in specials:
        token = tokenizer.convert_ids_to_tokens([ids[position]])[0]
        raise ValueError(
            f"--position {position} holds the special token {token}, not a word: a substitution puts a word in place "
            f"of a word, and the study never moves [CLS], [SEP], [PAD] or another special token; choose a word "
            f"position ({span})"
        )


def run(args: argparse.Namespace) -> str:
    """The substitutions of ``args`` as text, or one JSON line with ``--json``: the sample is the review's
    first n tokens as the studies read them (``wordsens.data.vocabulary.review_tokens``), and ``seed`` is
    the weights' seed (derived from ``--seed``, the map and the review, as in the study's table). torch and
    transformers are imported here."""
    import torch

    from ... import __version__
    from ...data.vocabulary import review_tokens
    from . import NUMERICS, SwapJob
    from .run import swap_rows

    cache, source, tokenizer, encoder = words_encoder(args)
    text, review_id = _texts(args, cache)
    _check_n(encoder, args.n)
    job = SwapJob(
        study="swaps",
        **picked(args, *SETTINGS),
        options=dict(args.options),
        reviews=1,
        positions=1,
        n_min=args.n,
        n_max=args.n,
        top_k=args.top,
        numerics_version=NUMERICS[1],
    )
    if len(tokenizer(text)["input_ids"]) < args.n:
        raise ValueError(f"the review has fewer than --n {args.n} tokens: its last rows would be [PAD]; lower --n")
    _check_position(tokenizer, review_tokens(tokenizer, text, args.n), args.position)
    (row,) = swap_rows(
        tokenizer, encoder, [text], job, model=source, review_ids=[review_id], positions=[args.position],
        chunk_mb=args.chunk_mb,
    )  # fmt: skip
    row.update(review_id=review_id, model=args.model, version=__version__, torch=torch.__version__)
    if args.json:
        out = {**row, "top_words": json.loads(row["top_words"]), "top_scores": json.loads(row["top_scores"])}
        return json.dumps(out, sort_keys=True, default=str) + "\n"
    return _text(row)


def _text(row: dict[str, Any]) -> str:
    words, scores = json.loads(row["top_words"]), json.loads(row["top_scores"])
    kind = "every word scored" if row["exhaustive"] else f"screened: {row['screened']} words of a shortlist"
    lines = [
        f"{row['map']}, d = {row['d']}, n = {row['n']}, review {row['review_id']}, position {row['position']} "
        f"({row['original']}); {row['vocab']} words ({kind})",
        f"  {row['context']}",
        "",
        "  rank  word                  S_words",
        *(
            f"  {rank:4d}  {word:20s}  {score:.6g}"
            for rank, word, score in zip(range(1, 1 + len(words)), words, scores, strict=True)
        ),
        "",
        f"  continuous word sensitivity at the best word's radius r = {row['radius']:.4g}: {row['continuous']:.6g} "
        f"(best / continuous = {row['ratio']:.4g}{': a continuous-search miss' if row['ratio'] > 1 + 1e-6 else ''})",
    ]
    if row["continuous_sqrt_d"] == row["continuous_sqrt_d"]:  # not NaN: --sqrt-d
        lines.append(f"  continuous word sensitivity at sqrt(d): {row['continuous_sqrt_d']:.6g}")
    lines += [
        f"  over the vocabulary ({row['stats_words']} words): mean {row['mean']:.4g}, median {row['median']:.4g}, "
        f"99th percentile {row['p99']:.4g}; mean / best {row['mean_over_best']:.3g}",
        f"  seconds: scan {row['seconds']:.2f}, continuous {row['continuous_seconds']:.2f} "
        f"({row['device']}, {row['dtype']})",
    ]
    return "\n".join(lines) + "\n"
