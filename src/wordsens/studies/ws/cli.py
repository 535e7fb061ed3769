"""``wordsens ws``: estimate the word sensitivity of one random feature map on one sample

Estimate the word sensitivity sup ||phi(X^i(Delta)) - phi(X)|| / ||phi(X)|| over ||Delta|| <= sqrt(d) and print
one JSON line: lower (the relative change reached), upper (an RF certificate, else null), steps, seconds, peak
memory and every setting."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from ...arguments import (
    add_command,
    add_data_args,
    add_map_args,
    add_method_arg,
    add_option_arg,
    add_plugin_arg,
    picked,
    position,
    positive_int,
)

# the options ``estimate`` takes as they are
SETTINGS = ("seed", "position", "method", "device", "sampler", "restarts", "max_steps", "max_memory_gb", "draw_on")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    """The ``ws`` subcommand and its options; ``maps``: the registered maps ``--map`` offers."""
    ws = add_command(sub, "ws", __doc__)
    add_map_args(ws, maps)
    ws.add_argument("--L", type=positive_int, help="alias of --option L=N: DRF's depth (default 2)")
    ws.add_argument("--k", type=positive_int, help="alias of --option k=N: RF's width (default n*d, as in the paper)")
    ws.add_argument("--seed", type=int, default=0, help="seeds the sample, the weights and the search (default 0)")
    add_method_arg(ws, "'default': the fast search; 'reference': the authors' algorithm (slow, dense float64)")
    ws.add_argument(
        "--position",
        type=position,
        default=0,
        help="0-based index of the perturbed token, or 'all' for the sup over every position (default 0)",
    )
    # how the search runs
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
        choices=["float32", "float64", "bfloat16"],
        help="working dtype of the default search (default float32 for RF/DRF, float64 for attention); bfloat16: "
        "DRF's products in bfloat16 (for a GPU's tensor cores), its estimate re-evaluated on the float32 map",
    )
    ws.add_argument("--restarts", type=positive_int, help="starts searched as one batch")
    ws.add_argument("--max-steps", type=positive_int, default=1000, help="cap on ascent steps (default 1000)")
    add_option_arg(ws)
    ws.add_argument(
        "--max-memory-gb",
        type=float,
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
    add_plugin_arg(ws)
    add_data_args(ws)


def run(args: argparse.Namespace) -> str:
    """The estimate of ``args`` as one JSON line: the result, the sample's review and label, the
    process's peak memory (and the GPU's, on a GPU) and the package's version. torch is imported here."""
    import torch

    from ... import __version__
    from ...compute.devices import peak_rss_bytes
    from ...data.samples import draw_sample
    from ...search import estimate
    from ...seeds import derive_seed

    source: object = "synthetic"
    if args.data != "synthetic":
        from ...data.store import load_embeddings

        source = load_embeddings(args.data)
    X, info = draw_sample(source, args.n, args.d, derive_seed(args.seed, "sample"), min_tokens=args.min_tokens)
    dtype = getattr(torch, args.dtype) if args.dtype else None
    result = estimate(args.map, X, dtype=dtype, options=_options(args), **picked(args, *SETTINGS))
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
    return json.dumps(out, sort_keys=True) + "\n"


def _options(args: argparse.Namespace) -> dict:
    """The map's options: ``--option`` values, and ``--L`` / ``--k`` (the documented aliases of DRF's depth
    and RF's width) for a map that has that option (ignored by the others, as always)."""
    from ...maps import registry

    spec = registry.get(args.map)
    aliases = {key: value for key, value in (("L", args.L), ("k", args.k)) if value is not None and key in spec.options}
    return {**aliases, **dict(args.options)}
