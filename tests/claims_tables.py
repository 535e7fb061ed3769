"""Hand-made tables for the claims tests (``wordsens.claims`` and the studies' claims), built so that each
claim's verdict is known.

Tables are deterministic (fixed seeds); a ``noise`` of 0 gives identical trials, hence a degenerate interval
and a verdict decided by the point, and the noisy tables are sized so that their intervals are wide (few
trials, large spread) or narrow (many trials, small spread) by a wide margin, as each test says."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from wordsens.studies.claims import compute_claims

DATA = "synthetic"


def law(n):
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)


def ws_table(map_name, points, *, trials=5, noise=0.0, seed=0):
    """One row per trial; ``points`` maps (d, n) or (d, n, L) to the mean WS. Multiplicative noise
    with a zero mean per point (trials paired as +e, -e), so the per-point mean is exact."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, mean in points.items():
        d, n = key[0], key[1]
        L = key[2] if len(key) > 2 else None
        eps = rng.uniform(-noise, noise, size=trials // 2)
        factors = np.concatenate([1 + eps, 1 - eps, [1.0] * (trials % 2)])
        for t, f in enumerate(factors):
            rows.append(
                {"map": map_name, "data": DATA, "d": d, "n": n, "L": L, "trial": t, "lower": mean * f, "upper": None}
            )
    frame = pd.DataFrame(rows)
    frame["L"] = frame["L"].astype("Int64")
    return frame


def rows_of(frame, claim, **match):
    part = frame[frame["claim"] == claim]
    for col, value in match.items():
        part = part[part[col] == value]
    return part


def one(frame, claim, **match):
    part = rows_of(frame, claim, **match)
    assert len(part) == 1, part
    return part.iloc[0]


def verdict(tables, claim, **match):
    return one(compute_claims(tables), claim, **match)["verdict"]


# the paper's RF grid (n = 90 to 150) and the demo's n
RF_N = [90, 100, 110, 120, 130, 140, 150]
DEMO_N = [8, 16, 24]


# ----------------------------------------------------------------------------- generalisation rows


def gen_rows(
    figure,
    map_name,
    *,
    n=40,
    N=100,
    d=768,
    sims=10,
    searches=(("fine_tune", "surrogate", 0.0),),
    alignment=None,
    gamma=None,
    seed=0,
    interpolates=True,
    data=DATA,
    d0=None,
):
    """Rows built from the formulas: D1 = D0 + a (y - t0), Err = (D1 + y)^2.

    ``alignment(sim, search_index)`` and ``gamma(sim, search_index, penalty)`` give a and the
    scale of t0, D0 (drawn in [-gamma, gamma], one of them at +-gamma so gamma_min = gamma);
    ``d0(sim, search_index, penalty)``, where given, sets D0 itself (t0 then at +-gamma)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sims):
        for j, (training, loss, penalty) in enumerate(searches):
            a = alignment(s, j) if alignment else rng.uniform(0.9, 1.1)
            g = gamma(s, j, penalty) if gamma else rng.uniform(0, 2)
            y = float(rng.choice([-1.0, 1.0]))
            t0 = g * float(rng.choice([-1.0, 1.0]))
            D0 = d0(s, j, penalty) if d0 else rng.uniform(-g, g)
            D1 = D0 + a * (y - t0)
            rows.append(
                {
                    "figure": figure,
                    "map": map_name,
                    "data": data,
                    "d": d,
                    "n": n,
                    "N": N,
                    "simulation": s,
                    "training": training,
                    "loss": loss,
                    "penalty": penalty,
                    "y": y,
                    "t0": t0,
                    "t1": y,
                    "D0": D0,
                    "D1": D1,
                    "err": (D1 + y) ** 2,
                    "gamma_min": max(abs(t0), abs(D0)),
                    "alignment": a,
                    "d0_shift": abs(D0 - t0),
                    "interpolates": interpolates(s) if callable(interpolates) else interpolates,
                }
            )
    return pd.DataFrame(rows)


SEARCHES = (("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0))


# ----------------------------------------------------------------------------- trained encoder (report only)

TRAINED_COLUMNS = ["model", "review", "layer", "n", "d", "convention", "map", "kind", "head", "draw", "position"]
TRAINED_COLUMNS += ["token", "ws", "phi_norm", "row_norm", "radius", "entropy", "steps", "seconds", "seed"]
TRAINED_COLUMNS += ["keys", "special_mass", "bias_share", "model_row_norm"]
COUNTERPARTS = {
    ("trained_attention", "paper"): ["mh_raf"],
    ("trained_attention", "model"): ["matched_attention"],
    ("trained_layer", "paper"): ["block", "ln_block"],
    ("trained_layer", "model"): ["matched_layer"],
}


def trained_table(
    ratios,
    *,
    layers=(1, 2),
    n=128,
    d=384,
    conventions=("paper",),
    random_ws=0.5,
    draws=2,
    model="minilm",
    token="word",
    keys="all",
):
    """Rows of the trained study: per layer, convention and review, each trained map of ``ratios`` (map ->
    one ratio per review) at ``ratio * random_ws`` beside each of its counterparts in that convention,
    whose ``draws`` draws are at ``random_ws * (1 -+ 0.1)`` (mean ``random_ws``; None: no random rows, the
    trained maps at ``ratio``), whole maps (head 0), one moved row of kind ``token``, attention keys
    ``keys``; entropy 1.5 (trained) and 4.0 (random); attention on [CLS]/[SEP] 0.7 (trained) and 0.03
    (random), NaN with ``keys`` "words"; bias share 0.4 (trained) and 0 (random); the model's rows of
    norm 12."""
    rows = []
    for layer in layers:
        for convention in conventions:
            row_norm = math.sqrt(d) if convention == "paper" else 12.0  # the model's own rows: model_row_norm
            for trained, per_review in ratios.items():
                for review, ratio in enumerate(per_review):
                    runs = [(trained, "trained", 0, ratio * (1.0 if random_ws is None else random_ws), 1.5)]
                    if random_ws is not None:
                        spread = np.linspace(-0.1, 0.1, draws) if draws > 1 else [0.0]
                        for name in COUNTERPARTS[(trained, convention)]:
                            runs += [(name, "random", k, random_ws * (1 + e), 4.0) for k, e in enumerate(spread)]
                    for name, kind, draw, ws, entropy in runs:
                        mass = math.nan if keys == "words" else 0.7 if kind == "trained" else 0.03
                        extra = {"keys": keys, "special_mass": mass, "bias_share": 0.4 if kind == "trained" else 0.0}
                        rows.append(
                            {
                                **{"model": model, "review": review, "layer": layer, "n": n, "d": d},
                                **{"convention": convention, "map": name, "kind": kind, "head": 0, "draw": draw},
                                **{"position": 5, "token": token, "ws": ws, "phi_norm": 1.0, "row_norm": row_norm},
                                **{"radius": math.sqrt(d), "entropy": entropy, "steps": 10, "seconds": 0.1, "seed": 7},
                                **extra,
                                "model_row_norm": 12.0,
                            }
                        )
    return pd.DataFrame(rows, columns=TRAINED_COLUMNS)
