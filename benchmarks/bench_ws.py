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

``--baseline COMMIT`` also runs ``default`` with the code of another commit (a temporary ``git
worktree``), on the same instances, and prints the time ratio baseline / this checkout and the
estimates' largest relative difference. ``--threads N`` sets torch's threads per worker (a
workflow job runs on ``ws.threads``, 1 by default).

    python benchmarks/bench_ws.py                 # the word-sensitivity benchmark table
    python benchmarks/bench_ws.py --quick         # small sizes, about a minute
    python benchmarks/bench_ws.py --jobs rf-768-150 raf-768-50
    python benchmarks/bench_ws.py --gpu           # DRF at the paper's size on one GPU (device "cuda")
    python benchmarks/bench_ws.py --jobs rf-768-150 rf-384-120 --seeds 3 --threads 1 --baseline 25bd887
    python benchmarks/bench_ws.py --gpu --quick --device cpu   # the same script at toy sizes on a CPU

The GPU table (``--gpu``) compares, on the same instance, ``default`` (weights drawn by the GPU's
own generator, tail layers streamed beyond the job's memory setting) with ``cpu-draws`` (the
weights drawn on the CPU and copied over: the behaviour before streaming), prints the peak device
memory, and projects the whole Figure 2 right grid (n in {50, 60, 70, 80}, L in {2, 4, 8}, 10
trials) from the measured trials.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

from _harness import add_worker_flags, baseline_src, run_worker, selected

# job name -> (map, n, d, L, seeds, methods, targets text)
JOBS = {
    "raf-768-250": (
        "raf",
        250,
        768,
        2,
        3,
        ("reference", "default"),
        ">= 100x faster, estimate >= reference on every seed",
    ),
    "raf-768-50": ("raf", 50, 768, 2, 5, ("reference", "default"), ">= 20x faster, estimate >= reference"),
    "relu_raf-768-50": ("relu_raf", 50, 768, 2, 5, ("reference", "default"), ">= 20x faster, estimate >= reference"),
    "rf-192-90": ("rf", 90, 192, 2, 2, ("reference", "default", "default-same-w"), "<= 3 s, <= 300 MB peak, same law"),
    "rf-768-150": ("rf", 150, 768, 2, 2, ("default",), "<= 15 s, <= 1 GB peak (reference: 106 GB matrix)"),
    "rf-384-120": ("rf", 120, 384, 2, 2, ("default",), "Figure 2 left's middle d"),
    "drf-192-50-L2": (
        "drf",
        50,
        192,
        2,
        2,
        ("reference", "default", "default-same-w"),
        ">= 5x faster, <= 1 GB peak, estimate >= reference",
    ),
    # the attention variants beyond the paper (default and reference share X and the weights of the seed)
    "sigmoid_raf-768-50": (
        "sigmoid_raf",
        50,
        768,
        2,
        3,
        ("reference", "default"),
        ">= 10x faster, estimate >= reference",
    ),
    "linear_raf-768-50": (
        "linear_raf",
        50,
        768,
        2,
        3,
        ("reference", "default"),
        ">= 10x faster, estimate >= reference",
    ),
    "mh_raf-768-50": ("mh_raf", 50, 768, 2, 3, ("reference", "default"), ">= 10x faster, estimate >= reference"),
    "block-768-50": ("block", 50, 768, 2, 3, ("reference", "default"), ">= 10x faster, estimate >= reference"),
    "mh_raf-768-1024": ("mh_raf", 1024, 768, 2, 1, ("default",), "<= 60 s"),
    "block-768-256": ("block", 256, 768, 2, 1, ("default",), "<= 120 s"),
}
QUICK = {
    "raf-256-50": ("raf", 50, 256, 2, 3, ("reference", "default"), "quick"),
    "relu_raf-256-50": ("relu_raf", 50, 256, 2, 3, ("reference", "default"), "quick"),
    "rf-64-40": ("rf", 40, 64, 2, 2, ("reference", "default", "default-same-w"), "quick"),
    "drf-32-20-L2": ("drf", 20, 32, 2, 2, ("reference", "default", "default-same-w"), "quick"),
    "sigmoid_raf-64-20": ("sigmoid_raf", 20, 64, 2, 2, ("reference", "default"), "quick"),
    "linear_raf-64-20": ("linear_raf", 20, 64, 2, 2, ("reference", "default"), "quick"),
    "mh_raf-64-20-h4": ("mh_raf", 20, 64, 2, 2, ("reference", "default", "default-same-w"), "quick"),
    "block-64-10-h4": ("block", 10, 64, 2, 2, ("reference", "default"), "quick"),
}
# map options of a job (the map's defaults otherwise): job name -> options
OPTIONS = {"mh_raf-64-20-h4": {"heads": 4}, "block-64-10-h4": {"heads": 4}}
# the GPU table: job name -> (map, n, d, L, seeds, methods, targets text, memory setting in GB)
GPU_JOBS = {
    "drf-768-50-L2": ("drf", 50, 768, 2, 1, ("default", "cpu-draws"), "<= 3 s", None),
    "drf-768-80-L4": ("drf", 80, 768, 4, 1, ("default", "cpu-draws"), "<= 20 s", None),
    "drf-768-80-L8-40GB": ("drf", 80, 768, 8, 1, ("default",), "<= 60 s with the memory setting at 40 GB", 40.0),
    "drf-768-80-L8-16GB": ("drf", 80, 768, 8, 1, ("default",), "runs; estimate within search noise of 40 GB", 16.0),
}
GPU_QUICK = {
    "drf-16-12-L2": ("drf", 12, 16, 2, 1, ("default", "cpu-draws"), "quick", None),
    "drf-16-12-L4-streamed": ("drf", 12, 16, 4, 1, ("default",), "quick: two of three tail layers streamed", 0.01205),
}
FIG2_RIGHT = [(n, L) for n in (50, 60, 70, 80) for L in (2, 4, 8)]  # 10 trials each in the paper
TIE = 1e-9


def worker(args: argparse.Namespace) -> None:
    """Run one method on one instance and print one JSON line (runs in its own process)."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from wordsens import maps, search
    from wordsens.compute.devices import peak_rss_bytes
    from wordsens.data.samples import synthetic_sample
    from wordsens.maps import registry
    from wordsens.seeds import derive_seed

    X = synthetic_sample(args.n, args.d, derive_seed(args.seed, "bench-sample"))
    options = json.loads(args.options) if args.options else {}
    if args.L is not None and "L" in registry.get(args.map).options:  # --L: DRF's depth
        options = {"L": args.L, **options}
    weights = None
    if args.method == "default-same-w":
        weights = maps.sample_weights(args.map, args.seed, args.n, args.d, **options)
    method = "reference" if args.method == "reference" else "default"
    memory = float(args.memory_gb) if args.memory_gb else None
    started = time.perf_counter()
    res = search.estimate(
        args.map,
        X,
        seed=args.seed,
        weights=weights,
        method=method,
        device=args.device,
        max_memory_gb=memory,
        options=options,
        draw_on="cpu" if args.method == "cpu-draws" else "device",
    )
    wall = time.perf_counter() - started
    peak = peak_rss_bytes() / 1024**2
    cuda_peak = torch.cuda.max_memory_allocated() / 1024**2 if args.device.startswith("cuda") else None
    print(
        json.dumps(
            {
                "lower": res.lower,
                "upper": res.upper,
                "seconds": res.seconds,
                "wall": wall,
                "steps": res.steps,
                "peak_mb": peak,
                "cuda_peak_mb": cuda_peak,
                "sampler": res.sampler,
                "threads": torch.get_num_threads(),
                "streamed": res.streamed_layers,
                "drawn_on": res.weights_drawn_on,
            }
        )
    )


def run_one(job: tuple, seed: int, method: str, device: str, options: dict | None, threads: int, base: object) -> dict:
    map_name, n, d, L = job[:4]
    memory = job[7] if len(job) > 7 and job[7] else None
    return run_worker(
        os.path.abspath(__file__),
        [
            "--map",
            map_name,
            "--n",
            str(n),
            "--d",
            str(d),
            "--L",
            str(L),
            "--seed",
            str(seed),
            "--method",
            "default" if method == "baseline" else method,
            "--device",
            device,
            "--threads",
            str(threads),
            *(["--memory-gb", str(memory)] if memory else []),
            *(["--options", json.dumps(options)] if options else []),
        ],
        src=base if method == "baseline" else None,  # type: ignore[arg-type]
    )


def project_fig2_right(measured: dict[str, list[dict]], table: dict) -> None:
    """Project the Figure 2 right grid (120 trials) from measured seconds per step: a trial's time
    grows like the number of tail layers times D^2 (layers drawn or read per step) times its steps."""
    per_unit = []
    for name, rows in measured.items():
        map_name, n, d, L = table[name][:4]
        ok = [r for r in rows if "error" not in r]
        if map_name == "drf" and ok:
            per_unit += [r["seconds"] / (r["steps"] * max(L - 1, 1) * (n * d) ** 2) for r in ok]
    if not per_unit:
        return
    unit = max(per_unit)  # the slowest measured rate, so the projection is not optimistic
    d = 768
    steps = max(r["steps"] for rows in measured.values() for r in rows if "error" not in r)
    total = sum(10 * unit * steps * max(L - 1, 1) * (n * d) ** 2 for n, L in FIG2_RIGHT)
    print(
        f"\nprojected Figure 2 right (d = {d}, {len(FIG2_RIGHT) * 10} trials, {steps} steps each, the slowest "
        f"measured rate {unit:.3g} s per step and D^2 tail entry): {total / 3600:.2f} device-hours"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (about a minute)")
    parser.add_argument("--jobs", nargs="*", help="job names to run (default: all of the chosen set)")
    parser.add_argument("--seeds", type=int, default=None, help="override the number of seeds per job")
    parser.add_argument("--gpu", action="store_true", help="the GPU table (DRF at the paper's size)")
    parser.add_argument("--device", default=None, help="where the estimates run (default: cuda with --gpu, else cpu)")
    parser.add_argument("--baseline", metavar="COMMIT", help="also run 'default' with the code of COMMIT")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per worker (0: torch's default)")
    add_worker_flags(parser, ("--map", "--method", "--memory-gb", "--options"), ("--n", "--d", "--L", "--seed"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    jobs, quick = (GPU_JOBS, GPU_QUICK) if args.gpu else (JOBS, QUICK)
    table, names = selected(parser, args, jobs, quick)
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(baseline_src(args.baseline)) if args.baseline else None
        run_jobs(args, table, names, base)


def run_jobs(args: argparse.Namespace, table: dict, names: list, base: object) -> None:
    device = args.device or ("cuda" if args.gpu else "cpu")
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}  python {sys.version.split()[0]}  cores {os.cpu_count()}  "
        f"load {os.getloadavg()[0]:.2f}  device {device}  threads {args.threads or 'default'}  "
        f"baseline {args.baseline or '-'}",
        flush=True,
    )
    measured: dict[str, list[dict]] = {}
    for name in names:
        job = table[name]
        seeds = args.seeds or job[4]
        print(
            f"\n## {name}: {job[0]} n={job[1]} d={job[2]}"
            + (f" L={job[3]}" if job[0] == "drf" else "")
            + (f" {OPTIONS[name]}" if name in OPTIONS else "")
            + f"  target: {job[6]}",
            flush=True,
        )
        print(
            f"{'seed':>4} {'method':>15} {'lower':>12} {'upper':>9} {'steps':>6} {'search s':>9} {'peak MB':>8}"
            f" {'GPU MB':>8} {'streamed':>8} {'drawn':>5}"
        )
        methods = (*job[5], "baseline") if base is not None else job[5]
        rows: dict[str, list[dict]] = {m: [] for m in methods}
        for seed in range(seeds):
            for method in methods:
                r = run_one(job, seed, method, device, OPTIONS.get(name), args.threads, base)
                rows[method].append(r)
                if "error" in r:
                    print(f"{seed:>4} {method:>15}  error: {r['error']}", flush=True)
                    continue
                upper = f"{r['upper']:.4f}" if r["upper"] is not None else "-"
                gpu = f"{r['cuda_peak_mb']:.0f}" if r.get("cuda_peak_mb") is not None else "-"
                print(
                    f"{seed:>4} {method:>15} {r['lower']:>12.6f} {upper:>9} {r['steps']:>6} {r['seconds']:>9.3f} "
                    f"{r['peak_mb']:>8.0f} {gpu:>8} {r.get('streamed')!s:>8} {r.get('drawn_on', '-'):>5}",
                    flush=True,
                )
        measured[name] = rows.get("default", [])
        ok = {m: [r for r in rs if "error" not in r] for m, rs in rows.items()}
        default, ref = ok.get("default", []), ok.get("reference", [])
        same, cpu_draws = ok.get("default-same-w", []), ok.get("cpu-draws", [])
        if default:
            mean_t = sum(r["seconds"] for r in default) / len(default)
            peak = max(r["peak_mb"] for r in default)
            print(f"default: mean search {mean_t:.3f} s, max peak {peak:.0f} MB")
        if default and ok.get("baseline"):
            old = ok["baseline"]
            old_t = sum(r["seconds"] for r in old) / len(old)
            moved = max(abs(a["lower"] / b["lower"] - 1) for a, b in zip(default, old, strict=False))
            print(
                f"baseline {args.baseline}: mean search {old_t:.3f} s; time baseline/this = {old_t / mean_t:.2f}x; "
                f"peak memory {max(r['peak_mb'] for r in old):.0f} MB / {peak:.0f} MB; estimates differ by at most "
                f"{moved:.1e} relative",
                flush=True,
            )
        if default and cpu_draws:
            old_t = sum(r["seconds"] for r in cpu_draws) / len(cpu_draws)
            print(
                f"ratio: time cpu-draws/default = {old_t / mean_t:.1f}x; estimates (other numbers, same law): "
                + ", ".join(f"{a['lower']:.4f}/{b['lower']:.4f}" for a, b in zip(default, cpu_draws, strict=False))
            )
        if default and ref:
            ref_t = sum(r["seconds"] for r in ref) / len(ref)
            ref_peak = max(r["peak_mb"] for r in ref)
            print(
                f"ratios: time reference/default = {ref_t / mean_t:.1f}x, "
                f"peak memory reference/default = {ref_peak / peak:.1f}x"
            )
            compare = same if same else default
            label = "default-same-w" if same else "default"
            ratios = [c["lower"] / r["lower"] for c, r in zip(compare, ref, strict=False)]
            verdict = "ok" if min(ratios) >= 1 - TIE else "BELOW reference"
            print(
                f"estimate {label}/reference: min {min(ratios):.6f}, mean {sum(ratios) / len(ratios):.4f} "
                f"over {len(ratios)} seeds ({verdict})"
            )
            if same:
                law = [a["lower"] / b["lower"] for a, b in zip(default, same, strict=False)]
                print("estimate default (exact in law)/default-same-w: " + ", ".join(f"{x:.4f}" for x in law))
    if args.gpu:
        project_fig2_right(measured, table)


if __name__ == "__main__":
    main()
