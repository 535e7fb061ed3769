"""The claims' power at the paper's sizes: simulated tables with a known effect and the noise of real
runs, passed through ``wordsens.claims.compute_claims`` (the wiring of a run), verdicts counted.

Each scenario changes one map's truth: the measured per-point means of a real run
(``benchmarks/claims_noise.py``, tests/data/claims_noise.csv) scaled by a factor (``rf_law``,
``raf_floor``, ``raf_level``), tilted by a slope (``rf_slope``), replaced by a power of the RF law's
shape (``decay``: the map's WS at its first n times ``(law(n) / law(n0))^rho``, ``rho`` the share of
RF's decay: 0 flat, 1 like RF) or by a multiple of RAF's (``relu_ratio``: ReLU-RAF at ``q`` times RAF at
every n); ``measured`` keeps the real means. Trials are drawn around that truth by resampling each
point's real log residuals (``benchmarks/claims_simulate.py``), ``--tables`` tables per scenario, effect,
trial count and data source, and every claims row's verdict is counted. Writes one CSV row per (code,
data, trials, scenario, effect, claim, scope) with the counts; ``--report`` prints the rates of
several such CSVs side by side (the code before and after a change: run this script once with each
``PYTHONPATH``; the simulated tables are this folder's, whatever the code)::

    PYTHONPATH=src python benchmarks/claims_power.py --label after --out after.csv
    git archive 805d7a6 src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src python benchmarks/claims_power.py --label before --out before.csv
    python benchmarks/claims_power.py --report before.csv after.csv
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import claims_simulate as sim
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
NOISE = ROOT / "tests" / "data" / "claims_noise.csv"


SCENARIOS: dict[str, tuple[str, list]] = {  # scenario -> (the map it changes, its effects)
    "rf_factor": ("rf", [0.97, 0.98, 0.985, 0.99, 1.01, 1.015, 1.02, 1.03]),
    "rf_slope": ("rf", [-0.2, -0.16, -0.12, 0.12, 0.16, 0.2]),
    "drf_decay": ("drf", [0.0, 0.2, 0.3, 0.5, 0.8, 1.0]),
    "relu_decay": ("relu_raf", [0.0, 0.1, 0.15, 0.2, 0.3, 0.4]),
    "raf_decay": ("raf", [0.25, 0.5, 0.75, 1.0]),
    "raf_factor": ("raf", [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]),
    "relu_ratio": ("relu_raf", [0.7, 0.8, 0.9, 1.1, 1.2, 1.3]),
    "measured": ("", [1.0]),
}


def truth(scenario: str, effect: float, means: dict) -> dict[str, dict]:
    """The true means of every map of a scenario (map -> key -> mean)."""
    out = {m: dict(v) for m, v in means.items()}
    target = SCENARIOS[scenario][0]
    if scenario in ("rf_factor", "raf_factor"):
        out[target] = sim.scaled(means[target], effect)
    elif scenario == "rf_slope":
        out[target] = sim.tilted(means[target], effect, 90)
    elif scenario.endswith("_decay"):
        out[target] = sim.decaying(means[target], effect)
    elif scenario == "relu_ratio":
        out[target] = {k: effect * means["raf"][k] for k in means[target] if k in means["raf"]}
    return out


def _tables(truths: dict, noise: dict, trials: int, rng: np.random.Generator, data: str) -> dict[str, pd.DataFrame]:
    return {
        f"ws_{m}": sim.simulated_table(m, t, noise[m], trials, rng, data=data) for m, t in truths.items() if t and m
    }


def run(args: argparse.Namespace) -> pd.DataFrame:
    from wordsens.studies.claims import compute_claims

    real = pd.read_csv(args.noise)
    records = []
    for data in args.data:
        part = real[real["data"] == data]
        maps = sorted(set(part["map"]))
        noise = {m: sim.point_noise(part[(part["map"] == m) & (part["d"] >= args.min_d[m])]) for m in maps}
        means = {m: sim.point_means(part[(part["map"] == m) & (part["d"] >= args.min_d[m])]) for m in maps}
        for scenario in args.scenarios:
            target, effects = SCENARIOS[scenario]
            if target and target not in maps:
                continue
            # the maps a scenario's claims read: the changed one (RAF beside ReLU-RAF)
            used = {target} | ({"raf"} if target == "relu_raf" else set()) if target else set(maps)
            for effect in effects:
                truths = {m: t for m, t in truth(scenario, effect, means).items() if m in used}
                for trials in args.trials:
                    started = time.perf_counter()
                    counts: Counter = Counter()
                    rng = np.random.default_rng(
                        [args.seed, trials, zlib.crc32(scenario.encode()), round(effect * 1000) + 10**6]
                    )
                    for _ in range(args.tables):
                        out = compute_claims(_tables(truths, noise, trials, rng, data))
                        out = out[out["verdict"].isin(["holds", "fails", "inconclusive"])]
                        counts.update(zip(out["claim"], out["scope"], out["verdict"], strict=True))
                    keys = {(c, s) for c, s, _ in counts}
                    for claim, scope in sorted(keys):
                        records.append(
                            {
                                "code": args.label,
                                "data": data,
                                "trials": trials,
                                "scenario": scenario,
                                "effect": effect,
                                "claim": claim,
                                "scope": scope,
                                **{v: counts[(claim, scope, v)] for v in ("holds", "fails", "inconclusive")},
                                "tables": args.tables,
                            }
                        )
                    seconds = time.perf_counter() - started
                    print(f"{data} {scenario} {effect} trials={trials}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return pd.DataFrame(records)


def report(paths: list[str]) -> None:
    """The rates of failing and holding per (claim, scenario, effect, data, scope) and trials, one
    column per file (its code label)."""
    frame = pd.concat([pd.read_csv(p) for p in paths], ignore_index=True)
    frame["rate"] = frame.apply(lambda r: f"{r['fails'] / r['tables']:.0%} f, {r['holds'] / r['tables']:.0%} h", axis=1)
    wide = frame.pivot_table(
        index=["claim", "scenario", "data", "scope", "effect"],
        columns=["trials", "code"],
        values="rate",
        aggfunc="first",
    )
    with pd.option_context("display.max_rows", None, "display.width", 250, "display.max_columns", None):
        print(wide.to_string())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", default=str(NOISE), help="real runs' trials (benchmarks/claims_noise.py)")
    parser.add_argument("--data", nargs="+", help="data sources of the noise table (default: all)")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--trials", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="after", help="the code's name in the CSV")
    parser.add_argument("--out", help="CSV of the counts")
    parser.add_argument("--report", nargs="+", help="print the rates of these CSVs instead of running")
    args = parser.parse_args(argv)
    if args.report:
        report(args.report)
        return 0
    if not args.out:
        parser.error("--out is required unless --report")
    args.data = args.data or sorted(set(pd.read_csv(args.noise)["data"]))
    # the paper's sizes: d >= 192 (DRF: the d of the measured run, below the paper's 768)
    args.min_d = {"rf": 192, "raf": 192, "relu_raf": 192, "drf": 0}
    run(args).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
