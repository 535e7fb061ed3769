"""``wordsens gen-words``: one generalisation simulation with real words: can one word carry the learned label?

Train the min-norm interpolator on N reviews, learn a new review (X, y) by fine-tuning and by re-training, then
put every word of the encoder's vocabulary at one word position of X (through the encoder's embedding layer, rows
of norm sqrt(d)) and print, for each training and loss (surrogate, direct Err, penalised Err + penalty D0^2), the
word that minimises it with its Err, gamma_min and alignment a, the lower-left frontier of (gamma_min, Err) over
the vocabulary, and the continuous Delta of the same simulation at [CLS] and at the word position (radius sqrt(d)
and the best word's radius)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

from ...arguments import add_command, add_encoder_args, add_map_args, add_words_output_args, positive_int
from ...data.sources import CACHE, reviews_frame
from ..swaps.cli import words_encoder


def _penalties(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, e.g. 1,0.1,0.01, got {text!r}") from None
    if not values or not all(0 <= v < math.inf for v in values):
        raise argparse.ArgumentTypeError(f"penalties must be finite numbers >= 0, got {text!r}")
    return values


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``gen-words`` subcommand and its options; ``maps``: the registered maps ``--map`` offers."""
    cmd = add_command(sub, "gen-words", __doc__)
    add_map_args(cmd, maps, n_help="tokens kept: [CLS], the review's words, [SEP]", encoder=True)
    cmd.add_argument("--N", required=True, type=positive_int, dest="N_train", help="training set size")
    cmd.add_argument("--review", type=int, default=0, help="0-based index of the new sample in the data (default 0)")
    cmd.add_argument(
        "--position", type=int, default=None, help="0-based word position changed (default: drawn as the swaps study's)"
    )
    cmd.add_argument(
        "--penalties",
        type=_penalties,
        default=[1.0, 0.1, 0.01],
        help="the penalised loss's weights (default 1,0.1,0.01)",
    )
    cmd.add_argument("--top", type=positive_int, default=5, help="best words printed per loss (default 5)")
    add_encoder_args(cmd)
    cmd.add_argument("--seed", type=int, default=0, help="seeds the training set, the weights and the searches")
    cmd.add_argument("--device", default="cpu", help="'cpu' (default), 'cuda' or 'auto'")
    cmd.add_argument("--words-only", action="store_true", help="the words alone, without the continuous searches")
    cmd.add_argument("--restarts", type=positive_int, default=16, help="restarts of each continuous search")
    cmd.add_argument("--max-steps", type=positive_int, default=500, help="step cap of each continuous search")
    cmd.add_argument("--chunk-mb", type=float, default=64.0, help="working arrays of a chunk of words (MB)")
    add_words_output_args(cmd, CACHE)


def _check_inputs(args: argparse.Namespace, tokenizer: Any, layer: Any) -> None:
    """The tokenizer, ``--n`` and ``--d`` against the encoder, before any work."""
    if len(tokenizer.get_vocab()) <= len(set(tokenizer.all_special_ids)):
        raise ValueError(
            f"--model {args.model}: its tokenizer knows only its special tokens (a folder without tokenizer files "
            "beside config.json: vocab.txt or tokenizer.json); copy the tokenizer's files into it"
        )
    positions, width = int(layer.position.shape[0]), layer.width
    if args.n > positions:
        raise ValueError(f"--n {args.n} is beyond the encoder's {positions} positions: lower --n")
    if args.d > width:
        raise ValueError(f"--d {args.d} is beyond the encoder's width {width}: lower --d")
    if args.chunk_mb <= 0:
        raise ValueError(f"--chunk-mb must be positive, got {args.chunk_mb}")


def run(args: argparse.Namespace) -> str:
    """The simulation of ``args`` (``wordsens.studies.gen_words.run``) as text, or one JSON line with ``--json``;
    torch and transformers are imported here."""
    import torch

    from ... import __version__
    from ...compute.devices import peak_rss_bytes
    from ...data.vocabulary import EmbeddingLayer
    from .run import gen_word_simulation, word_rows, word_task

    cache, _, tokenizer, encoder = words_encoder(args)
    layer = EmbeddingLayer.of(encoder)
    _check_inputs(args, tokenizer, layer)
    frame = reviews_frame(args.data, args.split, cache)
    texts, labels = [str(t) for t in frame["text"]], [int(v) for v in frame["label"]]
    task = word_task(
        tokenizer, layer, texts, labels, review=args.review, N=args.N_train, n=args.n, d=args.d, seed=args.seed
    )
    sim, info = gen_word_simulation(
        tokenizer, layer, task, args.map, seed=args.seed, position=args.position, vocabulary=args.vocabulary,
        options=dict(args.options), device=args.device, penalties=args.penalties, continuous=not args.words_only,
        top_k=args.top, chunk_mb=args.chunk_mb, search={"restarts": args.restarts, "max_steps": args.max_steps},
    )  # fmt: skip
    names, words = info["names"], sim.words
    out: dict[str, Any] = {
        "map": args.map, "model": args.model, "d": args.d, "n": args.n, "N": args.N_train, "seed": args.seed,
        "review": args.review, "review_id": int(frame["review_id"].iloc[args.review]), "y": words.y,
        "position": info["position"], "original": info["original"], "context": info["context"],
        "vocab": words.vocab, "words": words.words, "t0": words.t0, "dtype": words.dtype,
        "rechecked": words.rechecked, "fit": vars(info["fit"]), "rows": word_rows(sim, names),
        "frontiers": {
            f.training: [
                {"word": names[j], "gamma_min": g, "err": e}
                for j, g, e in zip(f.index, f.gamma_min, f.err, strict=True)
            ]
            for f in words.frontiers
        },
        "reaching": {t: {"err<1": words.reaching(t, 1.0), "err<1,gamma<=1": words.reaching(t, 1.0, 1.0)}
                     for t in words.outcomes},
        "seconds": {"prepare": info["prepare_seconds"], **sim.seconds},
        "peak_memory_mb": round(peak_rss_bytes() / 1024**2, 1), "version": __version__, "torch": torch.__version__,
    }  # fmt: skip
    if args.json:
        return json.dumps(out, sort_keys=True, default=str) + "\n"
    return _text(out, args.top)


def _number(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


_LABELS = {"words": "best word", "cls": "continuous at [CLS]", "position": "continuous here", "word_radius": "at r"}


def _text(out: dict[str, Any], top: int) -> str:
    fit = out["fit"]
    again = "" if out["dtype"] == "float64" else f", {out['rechecked']} evaluated again in float64"
    lines = [
        f"{out['map']}, d = {out['d']}, n = {out['n']}, N = {out['N']}, review {out['review_id']} (y = {out['y']:+g}), "
        f"position {out['position']} ({out['original']}); {out['words']} of {out['vocab']} words scored "
        f"({out['dtype']}{again})",
        f"  {out['context']}",
        f"  t0 = {out['t0']:.4g}; first stage: cond(K) = {fit['cond']:.3g}, residual {fit['residual']:.2g}",
    ]
    for training in ("fine_tune", "retrain"):
        lines += [
            "",
            f"  {training}",
            "  loss             setting              word            Err       gamma_min a         |move|",
        ]
        for row in (r for r in out["rows"] if r["training"] == training):
            loss = row["loss"] + (f" {row['penalty']:g}" if row["loss"] == "penalised" else "")
            label = _LABELS[row["setting"]] + (f" = {row['ball']:.3g}" if row["setting"] == "word_radius" else "")
            lines.append(
                f"  {loss:16s} {label:20s} {row['word'] or '-':15s} {_number(row['err']):9s} "
                f"{_number(row['gamma_min']):9s} {_number(row['alignment']):9s} {_number(row['radius'])}"
            )
            if row["setting"] == "words":
                lines.append(f"  {'':16s} {'next words':20s} {', '.join(json.loads(row['top_words'])[1:top])}")
        points = out["frontiers"][training]
        shown = ", ".join(f"{p['word']} ({p['gamma_min']:.3g}, {p['err']:.3g})" for p in points[:8])
        lines.append(f"  frontier (gamma_min, Err), {len(points)} words: {shown}{', ...' if len(points) > 8 else ''}")
        reach = out["reaching"][training]
        lines.append(
            f"  words with Err < 1: {reach['err<1']}; with Err < 1 and gamma_min <= 1: {reach['err<1,gamma<=1']}"
        )
    seconds = ", ".join(f"{k} {v:.2f}" for k, v in out["seconds"].items())
    lines += ["", f"  seconds: {seconds}; peak memory {out['peak_memory_mb']:.0f} MB"]
    return "\n".join(lines) + "\n"
