"""The report-only rows of the ``trained`` study (:func:`trained_claims`, claim ``trained_ratio``): a
pre-trained encoder's maps against their random models on the same samples.

The study's table (``RESULTS/tables/trained.parquet``, rows of
``wordsens.experiments.trained.trained_rows``) holds, per (model, review, layer, n, normalise), the
word sensitivity of each trained map and of its random counterpart (:data:`TRAINED_PAIRS`) on one
and the same sample X. The paper makes no claim about trained encoders, so every row is reported
without a verdict ("no claim"); what it measures and why is in ``docs/claims.md``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .intervals import MIN_REVIEWS, linear
from .rows import Rows
from .stats import TRAINED_DATA, TRAINED_PAIRS

__all__ = ["TRAINED_REQUIRED", "trained_claims"]

CLAIM = "trained_ratio"
# the columns trained_claims reads; a table without one of them is an error (wordsens.claims.table)
TRAINED_REQUIRED = ("model", "review", "layer", "n", "normalise", "map", "head", "ws")


def _per_review(rows: pd.DataFrame) -> tuple[pd.Series, int]:
    """WS per review (the rows of one review -- its random draws, or duplicates -- averaged: they share
    the review's sample, so the review is the independent unit) and the number of rows averaged in."""
    ws = rows.groupby("review", sort=True)["ws"].mean()
    return ws, len(rows) - len(ws)


def _ratio_row(rows: Rows, at_layer: pd.DataFrame, trained: str, random: str, scope: str) -> None:
    """One ``trained_ratio`` row: the mean over reviews of WS(trained) / WS(random); not run where one
    side is absent or no review has a usable pair. Nothing where neither map ran."""
    t_rows = at_layer[at_layer["map"] == trained]
    r_rows = at_layer[at_layer["map"] == random]
    if t_rows.empty and r_rows.empty:
        return
    fields = {"map": trained, "random": random}

    def not_run(why: str) -> None:
        rows.not_run(CLAIM, why, map_=trained, data=TRAINED_DATA, scope=scope, fields=fields)

    if t_rows.empty or r_rows.empty:
        absent, present = (trained, random) if t_rows.empty else (random, trained)
        not_run(f"no {absent} rows (whole map, head 0) beside the {present} rows on these samples")
        return
    t_ws, t_dup = _per_review(t_rows)
    r_ws, r_dup = _per_review(r_rows)
    common = t_ws.index.intersection(r_ws.index)
    notes = []
    only = len(t_ws) + len(r_ws) - 2 * len(common)
    if only:
        notes.append(f"{only} review(s) with one map only left out")
    if t_dup or r_dup:
        notes.append(f"{t_dup + r_dup} further row(s) (draws) averaged per review")
    if common.empty:
        not_run(f"no review has both {trained} and {random} rows")
        return
    t_common, r_common = t_ws.loc[common].to_numpy(float), r_ws.loc[common].to_numpy(float)
    usable = np.isfinite(t_common) & np.isfinite(r_common) & (r_common > 0)
    if not usable.all():
        notes.append(f"{int((~usable).sum())} review(s) with WS({random}) <= 0 or not finite left out")
    if not usable.any():
        not_run("; ".join([f"no review with a finite, positive WS({random})", *notes]))
        return
    ratios = t_common[usable] / r_common[usable]
    head = (
        f"mean WS {trained} {t_common[usable].mean():.4g}, {random} {r_common[usable].mean():.4g}; "
        f"ratio from {ratios.min():.4g} to {ratios.max():.4g}"
    )
    if "row_norm" in at_layer.columns and "d" in at_layer.columns:
        norm, d = at_layer["row_norm"].astype(float).mean(), at_layer["d"].astype(float).max()
        if np.isfinite(norm) and np.isfinite(d):
            head += f"; rows of mean norm {norm:.4g}, radius sqrt(d) = {math.sqrt(d):.4g}"
    rows.estimate(
        CLAIM,
        linear([ratios], [1.0], minimum=MIN_REVIEWS, unit="reviews"),
        map_=trained,
        data=TRAINED_DATA,
        scope=scope,
        fields=fields,
        note="; ".join([head, *notes]),
    )


def trained_claims(rows: Rows, frame: pd.DataFrame | None) -> None:
    """The ``trained_ratio`` rows of the trained study's table (None: the study did not run).

    Whole maps only (``head`` 0), at the largest n of each (model, normalisation): one row per
    (trained map, layer), scope ``layer=3, n=128`` for row-normalised samples and ``layer=3, n=128,
    model scale`` for the model's own scale, prefixed by ``model=...`` where the table holds several
    models. The two scales are never pooled.
    """
    if frame is None or frame.empty:
        rows.not_run(CLAIM, "no trained-encoder table (trained.parquet): the trained study did not run")
        return
    whole = frame[frame["head"] == 0]
    if whole.empty:
        rows.not_run(CLAIM, "the trained table has no rows of whole maps (head 0), only single heads")
        return
    before = len(rows.rows)
    models = sorted(whole["model"].astype(str).unique())
    for model in models:
        at_model = whole[whole["model"].astype(str) == model]
        prefix = f"model={model}, " if len(models) > 1 else ""
        for normalise in (True, False):
            part = at_model[at_model["normalise"].astype(bool) == normalise]
            if part.empty:
                continue
            n = int(part["n"].max())
            at_n = part[part["n"] == n]
            suffix = "" if normalise else ", model scale"
            for layer in sorted({int(x) for x in at_n["layer"]}):
                at_layer = at_n[at_n["layer"] == layer]
                for trained, random in TRAINED_PAIRS.items():
                    _ratio_row(rows, at_layer, trained, random, f"{prefix}layer={layer}, n={n}{suffix}")
    if len(rows.rows) == before:
        maps = sorted({*TRAINED_PAIRS, *TRAINED_PAIRS.values()})
        rows.not_run(CLAIM, f"the trained table has no whole-map rows of {maps} at its largest n")
