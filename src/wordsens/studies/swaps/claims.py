"""The swaps study's rows of the claims table (:func:`swap_claims`; docs/claims.md): ``swaps_ratio`` and
``swaps_mean_ratio`` reported per map, d and n over reviews (the independent units), and
``continuous_covers_words``, which fails on a row whose best word beats the continuous search at its radius
beyond ``NUMERICAL_TOL`` (a search miss).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...claims.intervals import MIN_REVIEWS, linear
from ...claims.rows import Rows, check_columns
from ...claims.stats import DERIVED, NUMERICAL_TOL, REPORT, UNIVERSAL, Claim

# the setting every claim of the study comes from
_SETTING = "the swaps study: an encoder's vocabulary put in place of IMDb reviews' words at layer 0"

# the study's claims (``StudySpec.definitions``)
DEFINITIONS = (
    Claim(
        "swaps_ratio",
        "the best real word against the continuous search at the radius it moves (the paper makes no claim)",
        "mean over reviews of S_words / continuous WS at r = ||x_i(w*) - x_i||, each review's positions averaged",
        setting=_SETTING,
        kind=REPORT,
    ),
    Claim(
        "swaps_mean_ratio",
        "the average substitution against the worst one (the paper makes no claim)",
        "mean over reviews of (mean S over the vocabulary) / S_words, each review's positions averaged",
        setting=_SETTING,
        kind=REPORT,
    ),
    Claim(
        "continuous_covers_words",
        "the continuous search at a radius reaches at least what the best real word moving that far reaches",
        "rows whose S_words exceeds the continuous WS at the same radius (a search miss)",
        "<=",
        0.0,
        DERIVED,
        "the swaps study: the continuous supremum at radius r bounds every move of norm r",
        kind=UNIVERSAL,
    ),
)

# the columns swap_claims reads; a table without one of them is an error (wordsens.claims.table)
SWAPS_REQUIRED = (
    "model",
    "map",
    "d",
    "n",
    "review",
    "position",
    "original",
    "best_word",
    "s_words",
    "continuous",
    "mean",
    "exhaustive",
)


def misses(frame: pd.DataFrame, tol: float = NUMERICAL_TOL) -> pd.DataFrame:
    """The rows whose best word beats the continuous search at its radius by more than ``tol`` (relative)."""
    best, cont = frame["s_words"].astype(float), frame["continuous"].astype(float)
    return frame[best > cont * (1 + tol)]


def swap_claims(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    """The swaps study's rows of its table (absent: the study did not run): per map, d and n the two
    reported ratios, and per map the universal check ``continuous_covers_words``."""
    claims = ("swaps_ratio", "swaps_mean_ratio", "continuous_covers_words")
    frame = tables.get("swaps")
    if frame is not None:
        check_columns("swaps", frame, SWAPS_REQUIRED)
    if frame is None or frame.empty:
        for claim in claims:
            rows.not_run(claim, "no swaps table (swaps.parquet): the swaps study did not run")
        return
    models = sorted(frame["model"].astype(str).unique())
    for model in models:
        at_model = frame[frame["model"].astype(str) == model]
        data = f"imdb:{model}"
        for name in sorted(at_model["map"].unique()):
            part = at_model[at_model["map"] == name]
            kind = "exhaustive" if bool(part["exhaustive"].astype(bool).all()) else "screened"
            for (d, n), point in part.groupby(["d", "n"], sort=True):
                scope = f"d={int(d)}, n={int(n)}"
                best, cont, mean = (point[c].astype(float) for c in ("s_words", "continuous", "mean"))
                note = f"{len(point)} (review, position) rows, {kind}"
                usable = np.isfinite(best) & np.isfinite(cont) & (cont > 0) & (best > 0)
                for claim, ratio, what, why in (
                    ("swaps_ratio", (best / cont)[usable], "ratio", "no row with a positive continuous WS"),
                    (
                        "swaps_mean_ratio",
                        (mean / best)[np.isfinite(mean) & (best > 0)],
                        "mean / best",
                        "no row with a best word",
                    ),
                ):
                    if ratio.empty:
                        rows.not_run(claim, why, map_=name, data=data, scope=scope)
                        continue
                    # each review's rows averaged first: the reviews are the independent units
                    groups = [ratio.groupby(point.loc[ratio.index, "review"]).mean().to_numpy(float)]
                    interval = linear(groups, [1.0], minimum=MIN_REVIEWS, unit="reviews")
                    head = f"{what} from {ratio.min():.4g} to {ratio.max():.4g}"
                    rows.estimate(claim, interval, map_=name, data=data, scope=scope, note=f"{head}; {note}")
            missed = misses(part)
            named = [
                f"d={int(r.d)} n={int(r.n)} review {int(r.review)} position {int(r.position)}: "
                f"{r.original} -> {r.best_word} S_words {float(r.s_words):.6g} > continuous {float(r.continuous):.6g}"
                for r in missed.itertuples()
            ]
            rows.universal(
                "continuous_covers_words",
                named,
                len(part),
                map_=name,
                data=data,
                scope="all d, n",
                note=f"tolerance {NUMERICAL_TOL:g} relative; {kind}",
            )
