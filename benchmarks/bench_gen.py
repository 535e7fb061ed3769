"""Generalisation benchmark: our simulation against the authors' algorithm, side by side.

Each (job, seed, method) runs in its own subprocess, so the peak memory printed is that method's
alone. Both methods see the same training set, new sample and weights: synthetic (Gaussian rows,
linear teacher), or drawn from an embedding store with ``--data STORE`` (the folder a run's ``embed``
rule writes, ``resources/embeddings/<model>/layer0``, as the IMDb jobs of Figures 4-5 draw them).

* ``default``: ``prepare`` (features, Gram matrix, interpolator; RF weights on the span of the
  samples) plus the Delta searches of ``--searches`` (default: fine-tuned, direct loss);
* ``reference``: the authors' dense algorithm (``wordsens.generalisation.gen_search``: dense float64
  weights, pinv and the p x p projector, plain gradient descent), one search per listed search.

    python benchmarks/bench_gen.py                 # the generalisation benchmark table
    python benchmarks/bench_gen.py --quick
    python benchmarks/bench_gen.py --jobs raf-120-1300-768 --searches all
    python benchmarks/bench_gen.py --jobs fig4-raf-120 --searches all --baseline fc9004d
    python benchmarks/bench_gen.py --jobs raf-120-1300-768 --data resources/embeddings/bert-base-uncased-<hash>/layer0

``--baseline COMMIT`` also runs ``default`` with the code of another commit (a temporary ``git
worktree`` of it, removed afterwards), beside this checkout's, each in its own subprocess, and
prints the time ratio: the way to compare two versions on a busy machine. ``--threads T`` sets
torch's threads in every worker (default: torch's own choice).

For RAF and ReLU-RAF jobs it also prints a ``floor``: the least time per simulation of any exact first
stage with float32 features, the features' flops (``X W``, the scores, ``A X``) and the ``N^2 p`` of the
Gram matrix's lower triangle at the faster of the two rates of torch's float32 products measured here
(``X W`` and a Gram panel, best of 3 each, same threads), searches and solve left out; and the largest
speed-up over the reference or the baseline that this floor leaves. No exact algorithm of this kind
can beat that ratio on this machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Callable

from _harness import add_worker_flags, baseline_src, run_worker, selected

# name -> (map, n, N, d, seeds, methods, target)
JOBS = {
    # a Figure 4 job (5 simulations) and a proportional smaller one (n, N, d halved)
    "fig4-raf-120": ("raf", 120, 1300, 768, 5, ("default",), "the Figure 4 job: >= 5x faster than fc9004d"),
    "fig4-raf-60": ("raf", 60, 600, 384, 5, ("default",), "proportional: >= 5x faster than fc9004d"),
    "raf-120-1300-768": ("raf", 120, 1300, 768, 1, ("default",), "<= 3 min, <= 4 GB (reference: 92,160^2 projector)"),
    "rf-40-1300-768": ("rf", 40, 1300, 768, 1, ("default",), "<= 2 min, <= 3 GB (reference: two 30,720^2 matrices)"),
    "relu_raf-120-1300-768": ("relu_raf", 120, 1300, 768, 1, ("default",), "a Figure 4 ReLU-RAF simulation"),
    "raf-40-100-768": ("raf", 40, 100, 768, 2, ("default",), "<= 10 s, <= 600 MB (reference: ~23 GB)"),
    "rf-40-100-192": ("rf", 40, 100, 192, 2, ("reference", "default"), ">= 10x faster, <= 300 MB"),
    "raf-40-100-192": ("raf", 40, 100, 192, 2, ("reference", "default"), ">= 5x faster, <= 300 MB"),
}
QUICK = {
    "rf-20-50-64": ("rf", 20, 50, 64, 2, ("reference", "default"), "quick"),
    "raf-20-50-64": ("raf", 20, 50, 64, 2, ("reference", "default"), "quick"),
}
SEARCHES = {
    "one": [("fine_tune", "direct", 0.0)],
    "all": [(t, loss, 0.0) for t in ("fine_tune", "retrain") for loss in ("surrogate", "direct")],
}


def worker(args: argparse.Namespace) -> None:
    import torch

    from wordsens import generalisation as G
    from wordsens.compute.devices import peak_rss_bytes

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.method == "rate":
        print(json.dumps(product_rates(args.N, args.n, args.d)))
        return
    if args.data == "synthetic":
        Xt, yt, X, y = G.synthetic_task(args.N, args.n, args.d, seed=args.seed)
    else:
        from wordsens.data.store import load_embeddings

        Xt, yt, X, y, _ = G.draw_task(load_embeddings(args.data), args.N, args.n, args.d, args.seed)
    searches = SEARCHES[args.searches]
    started = time.perf_counter()
    if args.method == "reference":
        results = [
            G.gen_search(args.map, Xt, yt, X, y, seed=args.seed, training=t, loss=loss, penalty=p)
            for t, loss, p in searches
        ]
    else:
        results = G.simulate(args.map, Xt, yt, X, y, seed=args.seed, searches=searches)
    total = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": total,
                "peak_mb": peak_rss_bytes() / 1024**2,
                "errs": [r.err for r in results],
                "gammas": [r.gamma_min for r in results],
                "steps": [r.steps for r in results],
                # the reference's explicit projector: not ground truth where its P phi is inaccurate
                "unreliable": [
                    e
                    for r in results
                    if r.pphi_ratio is not None and not (e := G.projection_error(r)) <= G.RELIABLE_ERROR
                ],
            }
        )
    )


def product_rates(N: int, n: int, d: int) -> dict:
    """This machine's float32 rate (flop/s, best of 3) of the two products that dominate an exact float32
    first stage of RAF or ReLU-RAF: ``X W`` of a batch of training samples and a panel of the Gram matrix."""
    import torch

    X, W, P = torch.randn(min(N, 256) * n, d), torch.randn(d, d), torch.randn(N, 4096)

    def best(product: Callable[[], object], flops: float) -> float:
        seconds = []
        for _ in range(3):
            started = time.perf_counter()
            product()
            seconds.append(time.perf_counter() - started)
        return flops / min(seconds)

    return {"xw": best(lambda: X @ W, 2.0 * X.shape[0] * d * d), "gram": best(lambda: P @ P.T, 2.0 * N * N * 4096)}


def floor_lines(args: argparse.Namespace, n: int, N: int, d: int, per_sim: dict) -> list[str]:
    """The least time per simulation of any exact first stage with float32 features (the features' flops
    and the ``N^2 p`` of the Gram matrix's lower triangle at the faster of this machine's measured product
    rates), and the largest speed-up over each of ``per_sim`` (method -> seconds per simulation) that it
    leaves."""
    from wordsens.compute.map_costs import attention_features_flops

    flags = ["--method", "rate", "--N", str(N), "--n", str(n), "--d", str(d), "--threads", str(args.threads)]
    rates = run_worker(os.path.abspath(__file__), flags)
    if "error" in rates:
        return [f"floor: not measured ({rates['error']})"]
    features, gram = attention_features_flops(N, n, d), float(N) * N * n * d
    rate = max(rates["xw"], rates["gram"])  # the faster of the two for both: a lower bound
    floor = (features + gram) / rate
    lines = [
        f"floor: an exact first stage with float32 features needs >= {floor:.3g} s per simulation here "
        f"(features {features:.3g} + Gram matrix {gram:.3g} flops at {rate / 1e9:.0f} GFlop/s, the faster of "
        f"torch's float32 X W ({rates['xw'] / 1e9:.0f}) and Gram panel ({rates['gram'] / 1e9:.0f}) here, "
        f"threads {args.threads or 'default'})"
    ]
    lines += [
        f"floor: at most {t / floor:.2f}x faster than {name} ({t:.2f} s per simulation)" for name, t in per_sim.items()
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--jobs", nargs="*")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument(
        "--searches",
        choices=sorted(SEARCHES),
        default="one",
        help="'one' (fine-tuned, direct) or 'all' (both trainings x surrogate/direct: a Figure 4 point)",
    )
    parser.add_argument("--baseline", metavar="COMMIT", help="also run 'default' with the code of COMMIT")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per worker (0: torch's default)")
    parser.add_argument(
        "--data",
        default="synthetic",
        metavar="STORE",
        help="'synthetic' (default) or an embedding store folder (resources/embeddings/<model>/layer0 of a run)",
    )
    add_worker_flags(parser, ("--map", "--method"), ("--n", "--N", "--d", "--seed"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    table, names = selected(parser, args, JOBS, QUICK)
    if args.data != "synthetic":
        from wordsens.data.store import load_embeddings
        from wordsens.io import CorruptCache

        args.data = os.path.abspath(args.data)
        try:  # the store's own checks, once here rather than in every worker
            load_embeddings(args.data, verify=False)
        except (FileNotFoundError, CorruptCache) as err:
            parser.error(f"--data: {err} (or give 'synthetic')")
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(baseline_src(args.baseline)) if args.baseline else None
        run_jobs(args, table, names, base)


def run_jobs(args: argparse.Namespace, table: dict, names: list, base: object) -> None:
    load = os.getloadavg()[0]
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}  cores {os.cpu_count()}  load {load:.2f}  threads "
        f"{args.threads or 'default'}  searches: {args.searches}  baseline: {args.baseline or '-'}  data: {args.data}",
        flush=True,
    )
    for name in names:
        map_name, n, N, d, seeds, methods, target = table[name]
        print(f"\n## {name}: {map_name} n={n} N={N} d={d}  target: {target}")
        print(f"{'seed':>4} {'method':>10} {'seconds':>9} {'peak MB':>8}  Err per search")
        if base is not None:
            methods = (*methods, "baseline")
        rows: dict[str, list[dict]] = {m: [] for m in methods}
        for seed in range(args.seeds or seeds):
            for method in methods:
                r = run_worker(
                    os.path.abspath(__file__),
                    [
                        "--map",
                        map_name,
                        "--n",
                        str(n),
                        "--N",
                        str(N),
                        "--d",
                        str(d),
                        "--seed",
                        str(seed),
                        "--method",
                        "default" if method == "baseline" else method,
                        "--searches",
                        args.searches,
                        "--threads",
                        str(args.threads),
                        "--data",
                        args.data,
                    ],
                    src=base if method == "baseline" else None,  # type: ignore[arg-type]
                )
                if "error" in r:
                    print(f"{seed:>4} {method:>10}  error: {r['error']}", flush=True)
                    continue
                rows[method].append(r)
                errs = ", ".join(f"{e:.3f}" for e in r["errs"])
                bad = r.get("unreliable", [])
                flag = f"  (not ground truth: P phi error ~{max(bad):.1e})" if bad else ""
                print(f"{seed:>4} {method:>10} {r['seconds']:>9.2f} {r['peak_mb']:>8.0f}  {errs}{flag}", flush=True)
        ours, ref = rows.get("default", []), rows.get("reference", [])
        if ours:
            t = sum(r["seconds"] for r in ours) / len(ours)
            print(f"default: mean {t:.2f} s, max peak {max(r['peak_mb'] for r in ours):.0f} MB")
            if ref:
                rt = sum(r["seconds"] for r in ref) / len(ref)
                print(
                    f"ratios: time reference/default = {rt / t:.1f}x, peak memory reference/default = "
                    f"{max(r['peak_mb'] for r in ref) / max(r['peak_mb'] for r in ours):.1f}x"
                )
            slower = {
                m: sum(r["seconds"] for r in rows[m]) / len(rows[m]) for m in ("reference", "baseline") if rows.get(m)
            }
            if map_name in ("raf", "relu_raf"):
                labels = {"reference": "the reference", "baseline": f"baseline {args.baseline}"}
                for line in floor_lines(args, n, N, d, {labels[m]: t for m, t in slower.items()}):
                    print(line, flush=True)
            if rows.get("baseline"):
                old = rows["baseline"]
                bt, ot = sum(r["seconds"] for r in old), sum(r["seconds"] for r in ours)
                print(
                    f"baseline {args.baseline}: total {bt:.1f} s, this checkout: total {ot:.1f} s over {len(ours)} "
                    f"simulations; time baseline/this = {bt / len(old) / t:.2f}x; peak memory "
                    f"{max(r['peak_mb'] for r in old):.0f} MB / {max(r['peak_mb'] for r in ours):.0f} MB",
                    flush=True,
                )


if __name__ == "__main__":
    main()
