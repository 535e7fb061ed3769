"""The word-sensitivity claims (:func:`ws_claims`, on the ``ws_<map>`` tables); defined in
:mod:`wordsens.claims.stats`, documented in ``docs/claims.md``, every interval from the trials of the grid
points (:mod:`wordsens.claims.intervals`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...claims.intervals import MIN_UNITS, linear, log_ratio, worst_point
from ...claims.levels import raf_reference, rf_level_band
from ...claims.rows import Rows, check_columns
from ...claims.slope import law_slope, slope_coefficients
from ...claims.stats import KNOWN_MAPS, raf_floor_threshold
from ...claims.units import grid_points, slices
from ...maps import registry
from ...theory import rf_law, rf_law_finite


def _ns(pts: list[tuple[tuple, np.ndarray]]) -> str:
    return ", ".join(str(key[-1]) for key, _ in pts)


def _notes(*parts: str) -> str:
    return "; ".join(x for x in parts if x)


def _enough(pts: list[tuple[tuple, np.ndarray]]) -> tuple[list[tuple[tuple, np.ndarray]], str]:
    """The grid points with at least MIN_UNITS trials (every point where none has), and a note naming
    those left out."""
    kept = [(k, v) for k, v in pts if len(v) >= MIN_UNITS] or pts
    left = len(pts) - len(kept)
    return kept, (f"{left} grid point(s) with fewer than {MIN_UNITS} trials left out" if left else "")


def _slope_groups(
    parts: list[pd.DataFrame], transform: str
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[int], str]:
    """Per grid point of every part (a stratum each): y = log WS (``"log"``) or log(WS / law(n))
    (``"law"``), with x = log n and the stratum index; the n of every trial; and a note naming the points
    left out for having fewer than MIN_UNITS trials (``_enough``)."""
    groups, xs, ss, trial_ns, left = [], [], [], [], 0
    for i, part in enumerate(parts):
        pts = grid_points(part, ["n"], "lower")
        kept, _ = _enough(pts)
        left += len(pts) - len(kept)
        for (n,), vals in kept:
            y = np.log(vals) - (np.log(rf_law(float(n))) if transform == "law" else 0.0)
            groups.append(y)
            xs.append(math.log(n))
            ss.append(i)
            trial_ns += [int(n)] * len(vals)
    note = f"{left} grid point(s) with fewer than {MIN_UNITS} trials left out" if left else ""
    return groups, np.array(xs), np.array(ss), trial_ns, note


def _positive(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    positive = frame[frame["lower"] > 0]
    dropped = len(frame) - len(positive)
    return positive, (f"{dropped} rows with WS <= 0 left out of the logarithm" if dropped else "")


def _slope_row(
    rows: Rows,
    claim: str,
    parts: list[pd.DataFrame],
    at: dict[str, Any],
    *,
    transform: str,
    note: str,
    per_law: bool = False,
) -> None:
    """One slope row at ``at`` (map, data, scope): the least-squares slope over every trial, an intercept per
    part (``per_law``: divided by the RF law's slope over the same n); not run with one n."""
    groups, xs, ss, trial_ns, extra = _slope_groups(parts, transform)
    if not any(len(set(xs[ss == s].tolist())) > 1 for s in set(ss.tolist())):
        ns = sorted({round(math.exp(x)) for x in xs})
        rows.not_run(claim, f"one n value only (n = {ns})", **at)
        return
    law = law_slope(trial_ns, np.repeat(ss, [len(g) for g in groups]))
    coefs = slope_coefficients(xs, ss, [len(g) for g in groups])
    interval = linear(groups, coefs / law if per_law else coefs)
    fitted = float(sum(c * g.mean() for c, g in zip(coefs, groups, strict=True))) + (law if transform == "law" else 0.0)
    slopes = f"fitted slope of log WS {fitted:.3f}, the RF law's over the same n {law:.3f}"
    rows.estimate(claim, interval, note=_notes(slopes, note, extra), **at)


def _ws_slope(rows: Rows, claim: str, frame: pd.DataFrame, map_: str, data: str, *, transform: str = "log") -> None:
    """Slope per d (per d and swept option where the map sweeps one: DRF's depth) and, with several
    strata, one common slope."""
    positive, note = _positive(frame)
    sweep = registry.get(map_).sweep if map_ in registry.names() else ()  # a table of an unloaded plugin: none
    swept = [key for key in sweep if key in positive and positive[key].notna().any()]
    cols = ["d", *swept]
    pieces = list(slices(positive, cols))
    for _, scope, part in pieces:
        _slope_row(rows, claim, [part], dict(map_=map_, data=data, scope=scope), transform=transform, note=note)
    if len(pieces) > 1:
        at: dict[str, Any] = dict(map_=map_, data=data, scope="all " + ", ".join(cols))
        _slope_row(rows, claim, [p for _, _, p in pieces], at, transform=transform, note=note)


def _ws_rf(rows: Rows, frame: pd.DataFrame, data: str) -> None:
    _ws_slope(rows, "rf_slope", frame, "rf", data, transform="law")
    by_d = [(scope, part) for _, scope, part in slices(frame, ["d"])]
    for scope, part in by_d + ([("all d", frame)] if len(by_d) > 1 else []):
        pts, left = _enough(grid_points(part, ["d", "n"], "lower"))
        ds = np.array([float(d) for (d, _), _ in pts])
        ns = np.array([float(n) for (_, n), _ in pts])
        level = rf_law_finite(ns, ds)
        groups = [v for _, v in pts]
        ratios = np.array([v.mean() for v in groups]) / level
        to_law = np.array([v.mean() for v in groups]) / rf_law(ns)
        worst = int(np.argmax(np.abs(ratios - 1)))
        (wd, wn), _ = pts[worst]
        rows.estimate(
            "rf_law",
            linear(groups, 1 / (len(groups) * level)),
            map_="rf",
            data=data,
            scope=scope,
            threshold=rf_level_band(ns, ds),
            note=_notes(
                f"mean WS / rf_law_finite from {ratios.min():.3f} to {ratios.max():.3f}; farthest d={wd}, "
                f"n={wn}: {ratios[worst]:.3f}; mean WS / law (no finite-size correction) {to_law.mean():.3f}",
                left,
            ),
        )


def _ws_raf(rows: Rows, frame: pd.DataFrame, data: str) -> None:
    for (d,), scope, part in slices(frame, ["d"]):
        at: dict[str, Any] = dict(map_="raf", data=data, scope=scope)
        floor = raf_floor_threshold(float(d))
        fields = {"floor": f"{floor:.3g}", "d": str(d)}
        all_pts = grid_points(part, ["n"], "lower")
        pts, left = _enough(all_pts)
        interval, i = worst_point([v for _, v in pts], lowest=True)
        lowest = f"lowest point n={pts[i][0][0]}: mean WS {interval.value:.3f} (n = {_ns(all_pts)})"
        rows.estimate("raf_floor", interval, threshold=floor, fields=fields, note=_notes(lowest, left), **at)
        _raf_level(rows, pts, float(d), at, left)
        positive, note = _positive(part)
        if len(all_pts) < 2:
            rows.not_run("raf_no_decay", f"one n value only (n = {_ns(all_pts)})", **at)
            continue
        _slope_row(rows, "raf_no_decay", [positive], at, transform="log", note=note, per_law=True)


def _raf_level(rows: Rows, pts: list[tuple[tuple, np.ndarray]], d: float, at: dict[str, Any], left: str) -> None:
    """``raf_level`` at one d: the mean over the grid points of mean WS / ``raf_reference(n, d)``; not run
    where a point has no reference."""
    refs = np.array([raf_reference(float(n), d) for (n,), _ in pts])
    if not np.isfinite(refs).all():
        outside = ", ".join(str(n) for ((n,), _), r in zip(pts, refs, strict=True) if not np.isfinite(r))
        why = f"no reference level at d = {d:g}, n = {outside} (measured at d = 192-768, n = 10-250)"
        rows.not_run("raf_level", why, **at)
        return
    groups = [v for _, v in pts]
    ratios = np.array([v.mean() for v in groups]) / refs
    low = int(np.argmin(ratios))
    note = f"mean WS / reference from {ratios.min():.3f} (n={pts[low][0][0]}) to {ratios.max():.3f}"
    interval = linear(groups, 1 / (len(groups) * refs))
    rows.estimate("raf_level", interval, note=_notes(note, left), **at)


def _ws_relu_vs_raf(rows: Rows, relu: pd.DataFrame, raf: pd.DataFrame, data: str) -> None:
    for (d,), scope, part in slices(relu, ["d"]):
        at: dict[str, Any] = dict(map_="relu_raf", data=data, scope=scope)
        # the statistic is on the log scale: trials at WS <= 0 are left out (and said so), as for the slopes
        (part, dropped_relu), (at_d, dropped_raf) = _positive(part), _positive(raf[raf["d"] == d])
        a = dict(grid_points(part, ["n"], "lower"))
        b = dict(grid_points(at_d, ["n"], "lower"))
        common = sorted(set(a) & set(b))
        if not common:
            rows.not_run("relu_raf_below_raf", f"no n at d = {d} ran for both RAF and ReLU-RAF", **at)
            continue
        enough = [p for p in common if min(len(a[p]), len(b[p])) >= MIN_UNITS] or common
        left = len(common) - len(enough)
        relu, raf_ = [a[p] for p in enough], [b[p] for p in enough]
        worst, i = worst_point(relu, lowest=False, divide_by=raf_)
        closest = f"closest point n={enough[i][0]}: ratio {worst.value:.3f}"
        if np.isfinite(worst.low):
            closest += f" [{worst.low:.3f}, {worst.high:.3f}] (simultaneous over the {len(enough)} n)"
        note = f"geometric mean over {len(common)} common n; {closest}"
        if left:
            note += f"; {left} common n with fewer than {MIN_UNITS} trials of a map left out"
        note += "".join(f"; {x} ({m})" for x, m in ((dropped_relu, "ReLU-RAF"), (dropped_raf, "RAF")) if x)
        interval = log_ratio(relu, raf_)
        rows.estimate("relu_raf_below_raf", interval, note=note, **at)


# the columns every row of a word-sensitivity table has (the claims read them)
REQUIRED = ("map", "data", "d", "n", "trial", "lower")


def ws_claims(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    """The paper's word-sensitivity claims on the ``ws_<map>`` tables (a study that lends its rows,
    ``StudySpec.lends_ws_rows``, adds one per map that has none: ``wordsens.claims.claims_inputs``)."""
    for key, frame in tables.items():
        check_columns(key, frame, REQUIRED)
    ws = {key.removeprefix("ws_"): frame for key, frame in tables.items() if not frame.empty}

    def by_data(map_: str, label: str, *claims: str) -> list[tuple[str, pd.DataFrame]]:
        """The map's rows per data source; without a table, its ``claims`` not run."""
        if map_ not in ws:
            for c in claims:
                rows.not_run(c, f"no {label} word-sensitivity table (ws_{map_}.parquet)", map_=map_)
            return []
        return [
            (data, ws[map_][ws[map_]["data"] == data]) for data in sorted(str(x) for x in ws[map_]["data"].unique())
        ]

    for data, part in by_data("rf", "RF", "rf_slope", "rf_law"):
        _ws_rf(rows, part, data)
    for data, part in by_data("drf", "DRF", "drf_decays"):
        depth = list(registry.get("drf").sweep)  # the paper's statement is per depth: DRF's swept option
        if any(key not in part or part[key].isna().all() for key in depth):
            raise ValueError(f"table 'ws_drf' has no column {depth}: re-run snakemake to rebuild it")
        _decays(rows, "drf_decays", part, "drf", data, ["d", *depth])
    for data, part in by_data("raf", "RAF", "raf_floor", "raf_level", "raf_no_decay"):
        _ws_raf(rows, part, data)
    for data, relu in by_data("relu_raf", "ReLU-RAF", "relu_raf_below_raf", "relu_raf_decays"):
        raf = ws["raf"][ws["raf"]["data"] == data] if "raf" in ws else None
        if raf is None or raf.empty:
            rows.not_run("relu_raf_below_raf", f"no RAF rows for data {data}", map_="relu_raf", data=data)
        else:
            _ws_relu_vs_raf(rows, relu, raf, data)
        _decays(rows, "relu_raf_decays", relu, "relu_raf", data, ["d"])
    for map_ in sorted(set(ws) - set(KNOWN_MAPS)):
        for data, part in by_data(map_, map_):
            _ws_slope(rows, "map_slope", part, map_, data)


def _decays(rows: Rows, claim: str, frame: pd.DataFrame, map_: str, data: str, cols: list[str]) -> None:
    """A decay claim: a slope row per slice by ``cols``, divided by the RF law's slope over the same n."""
    positive, note = _positive(frame)
    for _, scope, piece in slices(positive, cols):
        _slope_row(
            rows, claim, [piece], dict(map_=map_, data=data, scope=scope), transform="log", note=note, per_law=True
        )
