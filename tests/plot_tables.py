"""Hand-made tables for the figure tests (``wordsens.plots`` and the studies' figures; the claims'
log-log slope): generalisation rows and word-sensitivity trials."""

from __future__ import annotations

import numpy as np
import pandas as pd


def _gen_table(interpolates: list[bool] | None = None) -> pd.DataFrame:
    """Figure 4 rows: RF n = 8 and RAF n = 8, two N, both trainings and losses, 3 simulations."""
    rng = np.random.default_rng(0)
    rows = []
    for map_name in ("rf", "raf"):
        for N in (6, 12):
            for sim in range(3):
                for training in ("fine_tune", "retrain"):
                    for loss in ("surrogate", "direct"):
                        a = 1.0 if map_name == "rf" else float(rng.uniform(-0.2, 0.6))
                        rows.append(
                            {
                                "figure": "fig4",
                                "map": map_name,
                                "n": 8,
                                "N": N,
                                "d": 16,
                                "simulation": sim,
                                "training": training,
                                "loss": loss,
                                "penalty": 0.0,
                                "gamma_min": float(rng.uniform(0, 1.5)),
                                "err": float(rng.uniform(0, 4)),
                                "alignment": a,
                            }
                        )
    table = pd.DataFrame(rows)
    if interpolates is not None:
        table["interpolates"] = interpolates * (len(table) // len(interpolates))
    return table


def _ws_rows(
    maps_ns: dict, *, trials: int = 4, data: str = "synthetic", d: int = 16, slope: float = -0.5, seed: int = 0
) -> pd.DataFrame:
    """Trials with log WS = log c + slope log n + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for map_name, ns in maps_ns.items():
        for n in ns:
            for trial in range(trials):
                rows.append(
                    {
                        "map": map_name,
                        "data": data,
                        "d": d,
                        "n": n,
                        "trial": trial,
                        "lower": 2.0 * n**slope * float(np.exp(rng.normal(0, 0.05))),
                    }
                )
    return pd.DataFrame(rows)
