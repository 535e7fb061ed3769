"""``wordsens gen``: one generalisation simulation: learn a new sample, then flip its label by changing one word

Train the min-norm interpolator on N samples, learn a new sample (X, y) by fine-tuning or re-training, then
search the change Delta of one token (||Delta|| <= sqrt(d)) that makes the modified sentence, labelled -y, fit
badly or well; print one JSON line: t0, t1, D0, D1, Err (the test error (D1 + y)^2), gamma_min, steps, seconds,
peak memory and every setting."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from ...arguments import add_command, add_data_args, add_map_args, add_method_arg, add_option_arg, picked, positive_int


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``gen`` subcommand and its options; ``maps``: the registered maps ``--map`` offers."""
    gen = add_command(sub, "gen", __doc__)
    add_map_args(
        gen,
        maps,
        map_help="the feature map: any registered map (RF, RAF and ReLU-RAF have fast paths; the others evaluate "
        "their full map, which suits small n and d)",
    )
    gen.add_argument("--N", required=True, type=positive_int, dest="N_train", help="training set size")
    add_option_arg(gen)
    gen.add_argument(
        "--training", required=True, choices=["fine_tune", "retrain"], help="how the new sample is learned"
    )
    gen.add_argument(
        "--loss",
        required=True,
        choices=["surrogate", "direct", "penalised"],
        help="what the Delta search minimises: the surrogate, Err itself, or Err + penalty * D0^2 (smooth maps "
        "such as RAF: by Levenberg-Marquardt steps, docs/methods.md)",
    )
    gen.add_argument("--penalty", type=float, default=0.0, help="weight of D0^2 in the penalised loss (default 0)")
    gen.add_argument("--seed", type=int, default=0, help="seeds the data, the weights and the search (default 0)")
    gen.add_argument("--position", type=int, default=0, help="0-based index of the changed token (default 0)")
    add_method_arg(gen, "'default' (Gram matrix, span sampling) or 'reference' (the authors' dense algorithm)")
    gen.add_argument(
        "--sampler",
        choices=["auto", "span", "dense"],
        default="auto",
        help="RF weights: 'span' (exact in law, default) or 'dense' (the whole k x D matrix)",
    )
    gen.add_argument("--device", default="cpu", help="'cpu', 'cuda' or 'auto' (default cpu)")
    add_data_args(gen)


def run(args: argparse.Namespace) -> str:
    """The simulation of ``args`` as one JSON line: the result, every setting, the seconds of the
    preparation and in all, the process's peak memory and the package's version. torch is imported here."""
    from ... import __version__
    from ... import generalisation as G
    from ...compute.devices import peak_rss_bytes

    source: object = "synthetic"
    if args.data != "synthetic":
        from ...data.store import load_embeddings

        source = load_embeddings(args.data)
    Xt, yt, X, y, info = G.draw_task(source, args.N_train, args.n, args.d, args.seed, min_tokens=args.min_tokens)
    if args.loss != "penalised" and args.penalty:
        raise ValueError("--penalty only applies to --loss penalised")
    task = (Xt, yt, X, y)
    shared = {**picked(args, "seed", "position"), "options": dict(args.options)}
    if args.method == "reference":
        res = G.gen_search(args.map, *task, training=args.training, loss=args.loss, penalty=args.penalty, **shared)
        prepare_s = 0.0
    else:
        setup = G.prepare(args.map, *task, sampler=args.sampler, device=args.device, **shared)
        res = G.search(setup, args.training, args.loss, penalty=args.penalty, seed=args.seed)
        prepare_s = setup.seconds
    out = res.as_dict()
    out.update(
        picked(args, "n", "d", "seed", "position", "data"),
        N=args.N_train,
        review_id=info["review_id"],
        prepare_seconds=prepare_s,
        total_seconds=prepare_s + res.seconds,
        peak_memory_mb=round(peak_rss_bytes() / 1024**2, 1),
        version=__version__,
    )
    return json.dumps(out, sort_keys=True) + "\n"
