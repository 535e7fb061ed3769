"""Command line: ``wordsens ws ...`` (one word-sensitivity estimate, one JSON line on stdout),
``wordsens maps`` (the registered feature maps, see ``wordsens.maps``), ``wordsens plan`` (the
planned grid of a workflow configuration, see ``wordsens.pipeline``) and ``wordsens claims RESULTS_DIR``
(the claims table of a run, see ``wordsens.claims``).

``--plugin`` (before or after the subcommand) imports modules that register more maps before the
parser is built, so that ``--map`` offers them.

Heavy modules (pandas, transformers) are imported only by the subcommands that need them, so a
synthetic RF estimate runs in a process of a few hundred MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "parse_option"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _position(text: str) -> int | str:
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


def _load_plugins(argv: Sequence[str]) -> None:
    """Export the ``--plugin`` values in WORDSENS_PLUGINS (beside any already there) and import them."""
    from .maps import registry

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--plugin", action="append", default=[])
    plugins = pre.parse_known_args(list(argv))[0].plugin
    if plugins:
        plugins = [os.path.abspath(p) if p.endswith(".py") else p for p in plugins]
        present = [p for p in os.environ.get(registry.PLUGINS_ENV, "").split(",") if p]
        os.environ[registry.PLUGINS_ENV] = ",".join(dict.fromkeys([*present, *plugins]))
    registry.load_plugins()


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default="synthetic",
        metavar="synthetic|PATH",
        help="'synthetic' (i.i.d. Gaussian rows rescaled to norm sqrt(d), the default) or an embedding "
        "store written by the workflow (a directory with hidden.npy, index.parquet, meta.json)",
    )
    p.add_argument(
        "--min-tokens", action="store_true", help="with --data PATH: draw only reviews with at least n real tokens"
    )


def _build_parser() -> argparse.ArgumentParser:
    from .maps import registry
    from .pipeline.schedule import plan_arguments

    parser = argparse.ArgumentParser(
        prog="wordsens",
        description="Word sensitivity of attention layers vs. random features (Bombari & Mondelli, ICML 2024).",
    )
    plugin_help = (
        "a module name or .py file that registers feature maps (wordsens.maps); repeatable, also "
        "after the subcommand; added to WORDSENS_PLUGINS"
    )
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE|FILE.py", help=plugin_help)
    sub = parser.add_subparsers(dest="command", required=True)

    ws = sub.add_parser(
        "ws",
        help="estimate the word sensitivity of one random feature map on one sample",
        description="Estimate the word sensitivity sup ||phi(X^i(Delta)) - phi(X)|| / ||phi(X)|| over "
        "||Delta|| <= sqrt(d) and print one JSON line: lower (the relative change reached), upper "
        "(an RF certificate, else null), steps, seconds, peak memory and every setting.",
    )
    ws.add_argument(
        "--map",
        required=True,
        choices=registry.names(),
        help="the feature map: any registered map (`wordsens maps` lists them with their formulas)",
    )
    ws.add_argument("--d", required=True, type=_positive_int, help="embedding dimension (coordinates kept per token)")
    ws.add_argument("--n", required=True, type=_positive_int, help="context length (tokens kept)")
    ws.add_argument("--L", type=_positive_int, default=None, help="alias of --option L=N: DRF's depth (default 2)")
    ws.add_argument(
        "--k", type=_positive_int, default=None, help="alias of --option k=N: RF's width (default n*d, as in the paper)"
    )
    ws.add_argument("--seed", type=int, default=0, help="seeds the sample, the weights and the search (default 0)")
    ws.add_argument(
        "--method",
        choices=["default", "reference"],
        default="default",
        help="'default': the fast search; 'reference': the authors' algorithm (slow, dense float64)",
    )
    ws.add_argument(
        "--position",
        type=_position,
        default=0,
        help="0-based index of the perturbed token, or 'all' for the sup over every position (default 0)",
    )
    ws.add_argument(
        "--sampler",
        choices=["auto", "exact", "dense", "blockwise"],
        default="auto",
        help="RF/DRF weights: 'exact' (exact in law, only the perturbed block), 'blockwise', 'dense'; "
        "'auto' picks exact for one position, blockwise for 'all'",
    )
    ws.add_argument("--device", default="auto", help="'auto' (CUDA when available), 'cpu' or 'cuda'")
    ws.add_argument(
        "--dtype",
        choices=["float32", "float64"],
        default=None,
        help="working dtype of the default search (default float32 for RF/DRF, float64 for attention)",
    )
    ws.add_argument("--restarts", type=_positive_int, default=None, help="starts searched as one batch")
    ws.add_argument("--max-steps", type=_positive_int, default=1000, help="cap on ascent steps (default 1000)")
    _add_option_arg(ws)
    ws.add_argument(
        "--max-memory-gb",
        type=float,
        default=None,
        help="peak array memory allowed, in GB (default: what the device has free); DRF streams the "
        "layers that do not fit",
    )
    ws.add_argument(
        "--draw-on",
        choices=["device", "cpu"],
        default="device",
        help="where RF/DRF weights bound for a GPU are drawn: 'device' (the GPU's generator, the "
        "default) or 'cpu' (the same numbers as a CPU run)",
    )
    ws.add_argument("--plugin", action="append", default=argparse.SUPPRESS, metavar="MODULE|FILE.py", help=plugin_help)
    _add_data_args(ws)

    maps = sub.add_parser(
        "maps",
        help="list the registered feature maps: formula, weight law, options",
        description="List every registered feature map (wordsens.maps: the paper's four, the attention "
        "variants, and the maps of --plugin modules): its name (for --map and the workflow's config), "
        "plot label, formula, weight law and options with their defaults.",
    )
    maps.add_argument(
        "--plugin", action="append", default=argparse.SUPPRESS, metavar="MODULE|FILE.py", help=plugin_help
    )

    gen = sub.add_parser(
        "gen",
        help="one generalisation simulation: learn a new sample, then flip its label by changing one word",
        description="Train the min-norm interpolator on N samples, learn a new sample (X, y) by fine-tuning or "
        "re-training, then search the change Delta of one token (||Delta|| <= sqrt(d)) that makes the "
        "modified sentence, labelled -y, fit badly or well; print one JSON line: t0, t1, D0, D1, Err "
        "(the test error (D1 + y)^2), gamma_min, steps, seconds, peak memory and every setting.",
    )
    gen.add_argument(
        "--map",
        required=True,
        choices=registry.names(),
        help="the feature map: any registered map (RF, RAF and ReLU-RAF have fast paths; the others evaluate "
        "their full map, which suits small n and d)",
    )
    _add_option_arg(gen)
    gen.add_argument("--n", required=True, type=_positive_int, help="context length (tokens kept)")
    gen.add_argument("--N", required=True, type=_positive_int, dest="N_train", help="training set size")
    gen.add_argument("--d", required=True, type=_positive_int, help="embedding dimension")
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
    gen.add_argument(
        "--method",
        choices=["default", "reference"],
        default="default",
        help="'default' (Gram matrix, span sampling) or 'reference' (the authors' dense algorithm)",
    )
    gen.add_argument(
        "--sampler",
        choices=["auto", "span", "dense"],
        default="auto",
        help="RF weights: 'span' (exact in law, default) or 'dense' (the whole k x D matrix)",
    )
    gen.add_argument("--device", default="cpu", help="'cpu', 'cuda' or 'auto' (default cpu)")
    _add_data_args(gen)

    plan = sub.add_parser(
        "plan",
        help="print the planned grid: jobs, hours, memory, devices, the jobs left out, when the run ends",
        description="Load config.yaml, --configfile files and --config values the way Snakemake does: "
        "validated against workflow/schemas/config.schema.yaml with its defaults filled, then checked "
        "across keys. Print, before anything runs, the jobs per map and figure with their estimated "
        "hours, peak memory and device, the jobs that cannot fit this machine (limits.memory_gb, "
        "limits.gpu_memory_gb, limits.max_job_hours), which the workflow leaves out (limits.unfit: skip) "
        "or refuses (fail), and the expected wall time of the run on --cores cores (docs/cli.md).",
    )
    plan_arguments(plan)

    claims = sub.add_parser(
        "claims",
        help="print the claims table of a run: the paper's statements checked on its own tables",
        description="Compute the claims table (wordsens.claims) from the tables of a workflow's results folder "
        "(RESULTS_DIR/tables: ws_<map>.parquet, gen_fig4_<data>.parquet, gen_fig5_<data>.parquet, and "
        "variants.parquet for the maps without a ws_<map> table) and "
        "print it: per claim and scope the statistic, its 95% interval from the independent units it rests on "
        "(trials, simulations, reviews), the expectation, the setting the claim comes from and the verdict "
        "(holds, fails, inconclusive, not run, no claim; docs/claims.md). The same table as the workflow's "
        "tables/claims.csv.",
    )
    claims.add_argument("results", metavar="RESULTS_DIR", help="the results folder of a run (config key 'results')")
    claims.add_argument(
        "--format",
        choices=["text", "markdown", "csv"],
        default="text",
        help="text (a terminal table, the default), markdown (a pipe table) or csv (every column)",
    )
    return parser


def _add_option_arg(parser: argparse.ArgumentParser) -> None:
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


def _run_claims(args: argparse.Namespace) -> str:
    from .claims import claims_from_results, claims_markdown, format_claims

    frame = claims_from_results(args.results)
    if args.format == "csv":
        return frame.to_csv(index=False, float_format="%.6g")
    return claims_markdown(frame) if args.format == "markdown" else format_claims(frame) + "\n"


def _run_ws(args: argparse.Namespace) -> dict:
    import torch

    from . import __version__
    from .compute.devices import peak_rss_bytes
    from .data.samples import draw_sample
    from .search import estimate
    from .seeds import derive_seed

    source: object = "synthetic"
    if args.data != "synthetic":
        from .io import load_embeddings

        source = load_embeddings(args.data)
    X, info = draw_sample(source, args.n, args.d, derive_seed(args.seed, "sample"), min_tokens=args.min_tokens)
    dtype = getattr(torch, args.dtype) if args.dtype else None
    result = estimate(
        args.map,
        X,
        seed=args.seed,
        position=args.position,
        method=args.method,
        L=args.L,
        k=args.k,
        dtype=dtype,
        device=args.device,
        sampler=args.sampler,
        restarts=args.restarts,
        max_steps=args.max_steps,
        options=dict(args.options),
        max_memory_gb=args.max_memory_gb,
        draw_on=args.draw_on,
    )
    out = result.as_dict()
    out.update(
        data=args.data,
        seed=args.seed,
        review_id=info["review_id"],
        label=info["label"],
        peak_memory_mb=round(peak_rss_bytes() / 1024**2, 1),
        version=__version__,
    )
    if torch.cuda.is_available() and result.device.startswith("cuda"):
        out["peak_cuda_memory_mb"] = round(torch.cuda.max_memory_allocated() / 1024**2, 1)
    return out


def _run_gen(args: argparse.Namespace) -> dict:
    from . import __version__
    from . import generalisation as G
    from .compute.devices import peak_rss_bytes

    source: object = "synthetic"
    if args.data != "synthetic":
        from .io import load_embeddings

        source = load_embeddings(args.data)
    Xt, yt, X, y, info = G.draw_task(source, args.N_train, args.n, args.d, args.seed, min_tokens=args.min_tokens)
    if args.loss != "penalised" and args.penalty:
        raise ValueError("--penalty only applies to --loss penalised")
    if args.method == "reference":
        res = G.gen_search(
            args.map,
            Xt,
            yt,
            X,
            y,
            seed=args.seed,
            training=args.training,
            loss=args.loss,
            penalty=args.penalty,
            position=args.position,
            options=dict(args.options),
        )
        prepare_s = 0.0
    else:
        setup = G.prepare(
            args.map,
            Xt,
            yt,
            X,
            y,
            seed=args.seed,
            position=args.position,
            sampler=args.sampler,
            device=args.device,
            options=dict(args.options),
        )
        res = G.search(setup, args.training, args.loss, penalty=args.penalty, seed=args.seed)
        prepare_s = setup.seconds
    out = res.as_dict()
    out.update(
        n=args.n,
        N=args.N_train,
        d=args.d,
        seed=args.seed,
        position=args.position,
        data=args.data,
        review_id=info["review_id"],
        prepare_seconds=prepare_s,
        total_seconds=prepare_s + res.seconds,
        peak_memory_mb=round(peak_rss_bytes() / 1024**2, 1),
        version=__version__,
    )
    return out


def _describe_maps() -> str:
    from .maps import registry

    blocks = []
    for name in registry.names():
        spec = registry.get(name)
        options = ", ".join(f"{key}={value!r}" for key, value in spec.options.items()) or "none"
        blocks.append(
            f"{name}: {spec.label}\n  formula:    {spec.formula}\n  weights:    {spec.weight_law}\n"
            f"  options:    {options}\n  fast path:  {'yes' if spec.fast else 'no (full-map search)'}"
        )
    return "\n".join(blocks) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        _load_plugins(argv)
    except ValueError as err:
        print(f"wordsens: error: {err}", file=sys.stderr)
        return 2
    parser = _build_parser()
    args = parser.parse_args(argv)
    from .compute.devices import InsufficientResources
    from .io import CorruptCache

    try:
        if args.command == "maps":
            sys.stdout.write(_describe_maps())
            return 0
        if args.command == "plan":
            from .pipeline import plan_text

            # Snakemake's own parser (imported only when used: importing snakemake.cli takes seconds)
            overrides = __import__("snakemake.cli").cli.parse_config(args.config) if args.config else {}
            print(plan_text([args.base, *args.configfile], overrides, args.cores, args.gpu, args.calibrate, args.probe))
            return 0
        if args.command == "claims":
            sys.stdout.write(_run_claims(args))
            return 0
        if args.command == "ws":
            out = _run_ws(args)
        elif args.command == "gen":
            out = _run_gen(args)
        else:  # pragma: no cover - argparse rejects unknown commands
            parser.error(f"unknown command {args.command}")
    except (ValueError, FileNotFoundError, CorruptCache, InsufficientResources) as err:
        print(f"wordsens {args.command}: error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
