"""The report-only rows of the ``trained`` study (:func:`trained_claims`, claim ``trained_ratio``): per
(model, convention, keys, layer, kind of moved row, trained map, counterpart), the geometric mean over reviews
of WS(trained) / WS(random) with its interval (:func:`trained_ratios`, which the figure reads too); without a
verdict, the paper making no claim about trained encoders (docs/claims.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...claims.intervals import Interval, geometric
from ...claims.rows import Rows, check_columns
from ...claims.stats import REPORT, TRAINED_DATA, Claim
from ...maps import CONVENTIONS, registry
from .pairs import trained_maps

# the study's claim (``StudySpec.definitions``)
DEFINITIONS = (
    Claim(
        "trained_ratio",
        "word sensitivity of a pre-trained encoder's {map} against a random counterpart ({random}) on the same "
        "samples, in one convention (the paper makes no claim)",
        "geometric mean over reviews of WS(trained) / WS(random), each review's WS the mean over its moved rows "
        "(the random map's over its draws too)",
        setting="the trained study: a pre-trained encoder's layers on IMDb reviews (the paper has no trained encoder)",
        kind=REPORT,
        defaults=(("map", "trained map"), ("random", "random counterpart")),
    ),
)

CLAIM = "trained_ratio"
# the columns trained_ratios reads; a table without one of them is an error (wordsens.claims.table)
TRAINED_REQUIRED = ("model", "review", "layer", "n", "convention", "map", "head", "draw", "token", "ws")
# the kinds of moved row, in the order of the rows
_ORDER = ("word", "[CLS]", "[SEP]")
# the keys the attention read (the column ``keys``): every row, or the word rows alone ([CLS] and [SEP] dropped)
KEYS = ("all", "words")


def _per_review(rows: pd.DataFrame, column: str = "ws") -> pd.Series:
    """``column`` per review: the mean over its rows (its moved rows, and a random map's draws: they share
    the review's sample, so the review is the independent unit)."""
    return rows.groupby("review", sort=True)[column].mean()


def _pair(at: pd.DataFrame, trained: str, random: str) -> dict[str, Any]:
    """One (trained map, counterpart) on the rows ``at`` of one (model, convention, n, layer, token):
    the interval of the geometric mean over reviews of WS(trained) / WS(random) and what the note says; ``why``
    (without ``interval``) where one side is absent or no review has a usable pair."""
    t_rows, r_rows = at[at["map"] == trained], at[at["map"] == random]
    if t_rows.empty or r_rows.empty:
        absent, present = (trained, random) if t_rows.empty else (random, trained)
        return {"why": f"no {absent} rows (whole map, head 0) beside the {present} rows on these samples"}
    t_ws, r_ws = _per_review(t_rows), _per_review(r_rows)
    common = t_ws.index.intersection(r_ws.index)
    notes = []
    only = len(t_ws) + len(r_ws) - 2 * len(common)
    if only:
        notes.append(f"{only} review(s) with one map only left out")
    if common.empty:
        return {"why": f"no review has both {trained} and {random} rows"}
    t, r = t_ws.loc[common].to_numpy(float), r_ws.loc[common].to_numpy(float)
    usable = np.isfinite(t) & np.isfinite(r) & (r > 0)
    if not usable.all():
        notes.append(f"{int((~usable).sum())} review(s) with WS({random}) <= 0 or not finite left out")
    if not usable.any():
        return {"why": "; ".join([f"no review with a finite, positive WS({random})", *notes])}
    ratios = t[usable] / r[usable]
    out: dict[str, Any] = {
        "interval": geometric(ratios) if (ratios > 0).all() else None,
        "ws_trained": float(t[usable].mean()),
        "ws_random": float(r[usable].mean()),
        "ratio_min": float(ratios.min()),
        "ratio_max": float(ratios.max()),
        "draws": int(r_rows.groupby("review")["draw"].nunique().min()),
        "rows_per_review": int(t_rows.groupby("review").size().min()),
        "notes": notes,
    }
    if out["interval"] is None:
        return {"why": "; ".join([f"a review with WS({trained}) <= 0: no geometric mean of the ratios", *notes])}
    for side, rows in (("trained", t_rows), ("random", r_rows)):
        for column in ("entropy", "special_mass", "bias_share"):
            out[f"{column}_{side}"] = float(_per_review(rows, column).mean()) if column in rows else np.nan
    for column in ("row_norm", "model_row_norm"):  # the searched rows' norm and the model's own
        out[column] = float(t_rows[column].mean()) if column in t_rows else np.nan
    return out


def _slices(frame: pd.DataFrame) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    """The whole-map rows (``head`` 0) of each (model, convention, keys, layer, token) at the largest n of
    the (model, convention), with those keys as a dict; a table without ``keys`` has every key ("all")."""
    whole = frame[frame["head"] == 0]
    whole = whole.assign(keys=whole["keys"].fillna("all")) if "keys" in whole else whole.assign(keys="all")
    for model in sorted(whole["model"].astype(str).unique()):
        at_model = whole[whole["model"].astype(str) == model]
        for convention in [c for c in CONVENTIONS if c in set(at_model["convention"])]:
            part = at_model[at_model["convention"] == convention]
            n = int(part["n"].max())
            at_n = part[part["n"] == n]
            tokens = sorted(set(at_n["token"]), key=lambda t: (_ORDER.index(t) if t in _ORDER else len(_ORDER), t))
            for keys in [k for k in KEYS if k in set(at_n["keys"])]:
                for layer in sorted({int(x) for x in at_n["layer"]}):
                    for token in tokens:
                        at = at_n[(at_n["layer"] == layer) & (at_n["token"] == token) & (at_n["keys"] == keys)]
                        what = {"model": model, "convention": convention, "n": n, "keys": keys, "layer": layer}
                        yield {**what, "token": token}, at


def trained_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """The trained / random ratios of a trained study's table, whole maps (``head`` 0) at the largest n of each
    (model, convention): one row per slice of ``_slices``, trained map and counterpart in that convention
    (``MapSpec.counterparts``), with ``value``, ``low``, ``high`` (the geometric mean over reviews and its
    t-interval on the log scale: NaN bounds and ``short`` below ``MIN_REVIEWS``), ``units`` (reviews), what
    ``_pair`` measures beside it of both maps, ``note``; ``why`` (and NaN values) where they cannot be compared."""
    records: list[dict[str, Any]] = []
    for what, at in _slices(frame):
        for trained in trained_maps():
            for counterpart in registry.get(trained).counterparts:
                pair = at[at["map"].isin([trained, counterpart.map])]
                if counterpart.convention != what["convention"] or pair.empty:
                    continue
                found = _pair(pair, trained, counterpart.map)
                interval: Interval | None = found.pop("interval", None)
                records.append(
                    {
                        **what,
                        "map": trained,
                        "random": counterpart.map,
                        "matches": counterpart.matches,
                        "value": interval.value if interval else np.nan,
                        "low": interval.low if interval else np.nan,
                        "high": interval.high if interval else np.nan,
                        "units": interval.units if interval else 0,
                        "short": interval.short if interval else "",
                        "note": "; ".join(found.pop("notes", [])),
                        "why": found.pop("why", ""),
                        **found,
                    }
                )
    return pd.DataFrame.from_records(records)


def _note(row: pd.Series) -> str:
    """What a claims row says beside its number: the convention and counterpart defined, the regime
    (entropies, the attention on ``[CLS]``/``[SEP]``), how the convention scales the trained map (its
    rows' norm against the model's, the biases' share of the output), both mean WS, the range of the
    per-review ratios, the draws and moved rows."""
    parts = [
        f"{row['convention']} convention: {CONVENTIONS[row['convention']]}; {row['random']}: {row['matches']}",
        "keys: the word rows alone ([CLS] and [SEP] dropped)" if row["keys"] == "words" else "",
        f"mean attention entropy (nats) trained {row['entropy_trained']:.3g}, random {row['entropy_random']:.3g} "
        f"(uniform: ln n = {np.log(row['n'] - (2 if row['keys'] == 'words' else 0)):.3g})",
        f"attention of word rows on [CLS]/[SEP] trained {row['special_mass_trained']:.2g}, random "
        f"{row['special_mass_random']:.2g}"
        if np.isfinite(row["special_mass_trained"])
        else "",
        _scale(row),
        f"mean WS {row['map']} {row['ws_trained']:.4g}, {row['random']} {row['ws_random']:.4g}; geometric mean over "
        f"reviews, per-review ratio {row['ratio_min']:.4g} to {row['ratio_max']:.4g}",
        f"{row['token']} rows: {row['rows_per_review']} per review, {row['draws']} draw(s) of {row['random']}",
        row["note"],
    ]
    return "; ".join(x for x in parts if x)


def _scale(row: pd.Series) -> str:
    """How the convention scales the trained map: rows rescaled from the model's norm (the bilinear
    term of its logits grows with the square of the factor), and the share of the output norm that the
    attention's biases add (the random counterpart's beside it)."""
    out = []
    factor = row["row_norm"] / row["model_row_norm"]
    if np.isfinite(factor) and abs(factor - 1) > 1e-6:
        out.append(
            f"rows rescaled from the model's mean norm {row['model_row_norm']:.3g} to {row['row_norm']:.3g} "
            f"(x{factor:.3g}: the trained logits' bilinear term x{factor**2:.3g}, the biases unscaled)"
        )
    if np.isfinite(row["bias_share_trained"]):
        out.append(
            f"bias rows / ||phi(X)||: trained {row['bias_share_trained']:.2g}, random {row['bias_share_random']:.2g}"
        )
    return "; ".join(out)


def trained_claims(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    """The ``trained_ratio`` rows of the trained study's table (absent: the study did not run): one per
    row of :func:`trained_ratios`, scope ``layer=3, n=128, convention=paper`` (``, at [CLS]`` for the
    special rows, ``, word keys`` for the samples of word rows alone), prefixed by ``model=...`` where
    the table holds several models. Conventions, counterparts, keys and kinds of moved rows are never
    pooled."""
    frame = tables.get("trained")
    if frame is not None:
        check_columns("trained", frame, TRAINED_REQUIRED)
    if frame is None or frame.empty:
        rows.not_run(CLAIM, "no trained-encoder table (trained.parquet): the trained study did not run")
        return
    if frame[frame["head"] == 0].empty:
        rows.not_run(CLAIM, "the trained table has no rows of whole maps (head 0), only single heads")
        return
    ratios = trained_ratios(frame)
    if ratios.empty:
        rows.not_run(CLAIM, f"the trained table has no whole-map rows of {trained_maps()} or their counterparts")
        return
    several = ratios["model"].nunique() > 1
    for _, row in ratios.iterrows():
        scope = f"layer={row['layer']}, n={row['n']}, convention={row['convention']}"
        scope = (f"model={row['model']}, " if several else "") + scope
        scope += "" if row["token"] == "word" else f", at {row['token']}"
        scope += ", word keys" if row["keys"] == "words" else ""
        fields = {"map": str(row["map"]), "random": str(row["random"])}
        if row["why"]:
            rows.not_run(CLAIM, str(row["why"]), map_=str(row["map"]), data=TRAINED_DATA, scope=scope, fields=fields)
            continue
        interval = Interval(float(row["value"]), float(row["low"]), float(row["high"]), int(row["units"]), row["short"])
        rows.estimate(
            CLAIM, interval, map_=str(row["map"]), data=TRAINED_DATA, scope=scope, fields=fields, note=_note(row)
        )
