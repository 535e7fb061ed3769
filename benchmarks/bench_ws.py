"""Word-sensitivity benchmark: our default search against the authors' algorithm, side by side.

Every (job, seed) runs each method in its own subprocess, so the peak memory printed is that
method's alone. All methods see the same sample X (synthetic, seeded) and, where the weights are
shared, the same weights:

* ``reference``: the authors' algorithm (float64, dense weights drawn from the seed);
* ``default``: our search with its own sampling (RF/DRF: exact in law, the perturbed block is the
  very block of the reference's matrix; attention: the same W) -- the time and memory target;
* ``default-same-w``: our search on the reference's dense weights (RF/DRF only; for attention
  maps ``default`` already shares W) -- the estimate comparison on identical instances.

Ratios printed: time (reference / default), peak memory, and estimate (ours / reference, the
minimum over seeds; 1 - 1e-9 or more counts as a tie at float64 rounding).

    python benchmarks/bench_ws.py                 # the table of the numerical-core issue
    python benchmarks/bench_ws.py --quick         # small sizes, about a minute
    python benchmarks/bench_ws.py --jobs rf-768-150 raf-768-50
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _harness import add_worker_flags, run_worker, selected

# job name -> (map, n, d, L, seeds, methods, targets text)
JOBS = {
    "raf-768-250": ("raf", 250, 768, 2, 3, ("reference", "default"), ">= 100x faster, estimate >= reference on every seed"),
    "raf-768-50": ("raf", 50, 768, 2, 5, ("reference", "default"), ">= 20x faster, estimate >= reference"),
    "relu_raf-768-50": ("relu_raf", 50, 768, 2, 5, ("reference", "default"), ">= 20x faster, estimate >= reference"),
    "rf-192-90": ("rf", 90, 192, 2, 2, ("reference", "default", "default-same-w"), "<= 3 s, <= 300 MB peak, same law"),
    "rf-768-150": ("rf", 150, 768, 2, 2, ("default",), "<= 15 s, <= 1 GB peak (reference: 106 GB matrix)"),
    "drf-192-50-L2": ("drf", 50, 192, 2, 2, ("reference", "default", "default-same-w"),
                      ">= 5x faster, <= 1 GB peak, estimate >= reference"),
}
QUICK = {
    "raf-256-50": ("raf", 50, 256, 2, 3, ("reference", "default"), "quick"),
    "relu_raf-256-50": ("relu_raf", 50, 256, 2, 3, ("reference", "default"), "quick"),
    "rf-64-40": ("rf", 40, 64, 2, 2, ("reference", "default", "default-same-w"), "quick"),
    "drf-32-20-L2": ("drf", 20, 32, 2, 2, ("reference", "default", "default-same-w"), "quick"),
}
TIE = 1e-9


def worker(args: argparse.Namespace) -> None:
    """Run one method on one instance and print one JSON line (runs in its own process)."""
    import torch

    from wordsens import maps, ws
    from wordsens.preprocess import synthetic_sample
    from wordsens.resources import peak_rss_bytes
    from wordsens.seeds import derive_seed

    X = synthetic_sample(args.n, args.d, derive_seed(args.seed, "bench-sample"))
    weights = None
    if args.method == "default-same-w":
        weights = maps.sample_weights(args.map, args.seed, args.n, args.d, L=args.L)
    method = "reference" if args.method == "reference" else "default"
    started = time.perf_counter()
    res = ws.estimate(args.map, X, seed=args.seed, weights=weights, method=method, L=args.L, device="cpu")
    wall = time.perf_counter() - started
    peak = peak_rss_bytes() / 1024**2
    print(json.dumps({"lower": res.lower, "upper": res.upper, "seconds": res.seconds, "wall": wall,
                      "steps": res.steps, "peak_mb": peak, "sampler": res.sampler, "threads": torch.get_num_threads()}))


def run_one(job: tuple, seed: int, method: str) -> dict:
    map_name, n, d, L = job[:4]
    return run_worker(os.path.abspath(__file__), ["--map", map_name, "--n", str(n), "--d", str(d), "--L", str(L),
                                                  "--seed", str(seed), "--method", method])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    parser.add_argument("--jobs", nargs="*", help="job names to run (default: all of the chosen set)")
    parser.add_argument("--seeds", type=int, default=None, help="override the number of seeds per job")
    add_worker_flags(parser, ("--map", "--method"), ("--n", "--d", "--L", "--seed"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    table, names = selected(parser, args, JOBS, QUICK)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  python {sys.version.split()[0]}  cores {os.cpu_count()}", flush=True)
    for name in names:
        job = table[name]
        seeds = args.seeds or job[4]
        print(f"\n## {name}: {job[0]} n={job[1]} d={job[2]}" + (f" L={job[3]}" if job[0] == "drf" else "")
              + f"  target: {job[6]}", flush=True)
        print(f"{'seed':>4} {'method':>15} {'lower':>12} {'upper':>9} {'steps':>6} {'search s':>9} {'peak MB':>8}")
        rows: dict[str, list[dict]] = {m: [] for m in job[5]}
        for seed in range(seeds):
            for method in job[5]:
                r = run_one(job, seed, method)
                rows[method].append(r)
                if "error" in r:
                    print(f"{seed:>4} {method:>15}  error: {r['error']}", flush=True)
                    continue
                upper = f"{r['upper']:.4f}" if r["upper"] is not None else "-"
                print(f"{seed:>4} {method:>15} {r['lower']:>12.6f} {upper:>9} {r['steps']:>6} {r['seconds']:>9.3f} "
                      f"{r['peak_mb']:>8.0f}", flush=True)
        ok = lambda m: [r for r in rows.get(m, []) if "error" not in r]  # noqa: E731
        default, ref, same = ok("default"), ok("reference"), ok("default-same-w")
        if default:
            mean_t = sum(r["seconds"] for r in default) / len(default)
            peak = max(r["peak_mb"] for r in default)
            print(f"default: mean search {mean_t:.3f} s, max peak {peak:.0f} MB")
        if default and ref:
            ref_t = sum(r["seconds"] for r in ref) / len(ref)
            ref_peak = max(r["peak_mb"] for r in ref)
            print(f"ratios: time reference/default = {ref_t / mean_t:.1f}x, "
                  f"peak memory reference/default = {ref_peak / peak:.1f}x")
            compare = same if same else default
            label = "default-same-w" if same else "default"
            ratios = [c["lower"] / r["lower"] for c, r in zip(compare, ref)]
            verdict = "ok" if min(ratios) >= 1 - TIE else "BELOW reference"
            print(f"estimate {label}/reference: min {min(ratios):.6f}, mean {sum(ratios) / len(ratios):.4f} "
                  f"over {len(ratios)} seeds ({verdict})")
            if same:
                law = [a["lower"] / b["lower"] for a, b in zip(default, same)]
                print("estimate default (exact in law)/default-same-w: " + ", ".join(f"{x:.4f}" for x in law))


if __name__ == "__main__":
    main()
