"""The command-line targets of the variants and long-context studies, timed as a user runs them.

Each command runs ``wordsens ws ...`` in its own subprocess (so the peak memory is its own, read
from ``getrusage(RUSAGE_CHILDREN)`` of a fresh interpreter) and prints its wall time, peak
resident memory, the estimate, and the target:

    python benchmarks/bench_cli.py                  # every target below
    python benchmarks/bench_cli.py --only rf-768-150 raf-768-4096
    python benchmarks/bench_cli.py --list

Wall time includes Python start-up, imports, the sample and weight draws and the search: what
``time wordsens ws ...`` would print. Run it on a quiet machine; ``os.getloadavg`` is printed
before each command so a loaded run can be recognised.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# name -> (CLI arguments after ``ws``, seconds target, GB target or None)
TARGETS: dict[str, tuple[list[str], float, float | None]] = {
    "raf-768-4096": (["--map", "raf", "--d", "768", "--n", "4096"], 60.0, 2.0),
    "mh_raf-768-1024": (["--map", "mh_raf", "--d", "768", "--n", "1024"], 60.0, None),
    "block-768-256": (["--map", "block", "--d", "768", "--n", "256"], 120.0, None),
    "rf-768-1024": (["--map", "rf", "--d", "768", "--n", "1024"], 120.0, 4.0),
    "rf-768-150": (["--map", "rf", "--d", "768", "--n", "150"], 15.0, None),
}


def run(args: list[str]) -> tuple[float, float, dict | None, str]:
    """Wall seconds, peak RSS in GB, the printed JSON (None on failure) and stderr's tail."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "wordsens.cli", "ws", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    # called from a fresh interpreter (``--_one``) with this one child: the children's maximum is its own
    peak_gb = _children_peak_kb() / 1024**2
    try:
        result = json.loads(out.strip().splitlines()[-1]) if proc.returncode == 0 else None
    except (json.JSONDecodeError, IndexError):
        result = None
    return seconds, peak_gb, result, err[-400:]


def _children_peak_kb() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(TARGETS), help="run these targets only")
    parser.add_argument("--list", action="store_true", help="print the targets and exit")
    args = parser.parse_args()
    names = args.only or list(TARGETS)
    if args.list:
        for name in names:
            cmd, secs, gb = TARGETS[name]
            print(f"{name:>16}: wordsens ws {' '.join(cmd)}  (<= {secs:g} s" + (f", <= {gb:g} GB)" if gb else ")"))
        return
    print(f"{'target':>16} {'load':>5} {'seconds':>8} {'peak GB':>8} {'lower':>9} {'steps':>6}  verdict")
    for name in names:
        cmd, secs, gb = TARGETS[name]
        load = os.getloadavg()[0]
        # a fresh interpreter per command: RUSAGE_CHILDREN is the maximum over all children so far
        probe = subprocess.run([sys.executable, __file__, "--_one", name], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"{name:>16} {load:>5.1f}  failed: {probe.stderr[-400:]}")
            continue
        seconds, peak_gb, lower, steps = json.loads(probe.stdout)
        ok = seconds <= secs and (gb is None or peak_gb <= gb) and lower is not None
        shown = "-" if lower is None else f"{lower:.4f}"
        print(
            f"{name:>16} {load:>5.1f} {seconds:>8.1f} {peak_gb:>8.2f} {shown:>9} "
            f"{steps:>6}  {'ok' if ok else 'MISSED'} (target <= {secs:g} s" + (f", <= {gb:g} GB)" if gb else ")"),
            flush=True,
        )


def _one(name: str) -> None:
    seconds, peak_gb, result, err = run(TARGETS[name][0])
    if result is None:
        sys.exit(f"wordsens ws failed: {err}")
    print(json.dumps([seconds, peak_gb, result.get("lower"), result.get("steps")]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--_one":
        _one(sys.argv[2])
    else:
        main()
