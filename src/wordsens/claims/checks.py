"""The computations of the claims: one function per family, each adding its rows to a :class:`Rows`.

Word sensitivity (:func:`ws_claims`, on the ``ws_<map>`` tables) and generalisation
(:func:`gen_claims`, on the ``gen_fig4_<data>`` and ``gen_fig5_<data>`` tables). The claims, their
statistics and how to read them are described in :mod:`wordsens.claims.table`; the definitions and the
bootstrap are in :mod:`wordsens.claims.stats`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from ..theory import rf_law
from .stats import (
    BOUND_SLACK,
    FIG4_RAF_D,
    GEN_GRID,
    KNOWN_MAPS,
    RAF_FLOOR_D,
    Rows,
    err_lower_bound,
    fraction_stat,
    grid_means,
    grid_points,
    plain,
    scope_label,
    sim_units,
    slope_stat,
    table_kind,
)

__all__ = ["gen_claims", "ws_claims"]


# ----------------------------------------------------------------------------- word-sensitivity claims


def _ws_slope(rows: Rows, claim: str, frame: pd.DataFrame, map_: str, data: str) -> None:
    """Slope per d (per (d, L) where L varies) and, with several strata, one common slope."""
    positive = frame[frame["lower"] > 0]
    dropped = len(frame) - len(positive)
    extra = f"{dropped} rows with WS <= 0 left out of the logarithm" if dropped else ""
    stratum_cols = ["d", "L"] if "L" in positive and positive["L"].notna().any() else ["d"]
    pieces = [
        (tuple(plain(k) for k in (key if isinstance(key, tuple) else (key,))), part)
        for key, part in positive.groupby(stratum_cols, sort=True, dropna=False)
    ]

    def one(parts: list[tuple[tuple, pd.DataFrame]], scope: str) -> None:
        groups, xs, ss = [], [], []
        for i, (_, part) in enumerate(parts):
            for (n,), vals in grid_points(part, ["n"], "lower"):
                groups.append(np.log(vals))
                xs.append(math.log(n))
                ss.append(i)
        ns = {x for x in xs}
        if len(ns) < 2:
            rows.not_run(
                claim,
                f"one n value only (n = {sorted(round(math.exp(x)) for x in ns)})",
                map_=map_,
                data=data,
                scope=scope,
            )
            return
        rows.measured(
            claim, groups, slope_stat(np.array(xs), np.array(ss)), map_=map_, data=data, scope=scope, note=extra
        )

    for key, part in pieces:
        one([(key, part)], scope_label(stratum_cols, key))
    if len(pieces) > 1:
        one(pieces, "all " + ", ".join(stratum_cols))


def _ws_rf(rows: Rows, frame: pd.DataFrame, data: str) -> None:
    _ws_slope(rows, "rf_slope", frame, "rf", data)
    by_d = [(d, frame[frame["d"] == d]) for d in sorted(frame["d"].unique())]
    parts = [(f"d={int(d)}", p) for d, p in by_d] + ([("all d", frame)] if len(by_d) > 1 else [])
    for scope, part in parts:
        pts = grid_points(part, ["d", "n"], "lower")
        law = np.array([rf_law(np.array([n]))[0] for (_, n), _ in pts])

        def stat(groups: list[np.ndarray], law: np.ndarray = law) -> np.ndarray:
            return np.abs(grid_means(groups) / law - 1).max(axis=1)

        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        worst = int(np.argmax(np.abs(means / law - 1)))
        (wd, wn), _ = pts[worst]
        rows.measured(
            "rf_law",
            groups,
            stat,
            map_="rf",
            data=data,
            scope=scope,
            note=f"worst point d={wd}, n={wn}: mean WS / law = {means[worst] / law[worst]:.3f}",
        )


def _decreasing(rows: Rows, claim: str, frame: pd.DataFrame, map_: str, data: str, strata: list[str]) -> None:
    for key, part in frame.groupby(strata, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        scope = scope_label(strata, [plain(k) for k in key])
        pts = grid_points(part, ["n"], "lower")
        if len(pts) < 2:
            rows.not_run(claim, f"one n value only (n = {pts[0][0][0]})", map_=map_, data=data, scope=scope)
            continue

        def stat(groups: list[np.ndarray]) -> np.ndarray:
            m = grid_means(groups)
            return (m[:, 1:] / m[:, :-1]).max(axis=1)

        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        steps = means[1:] / means[:-1]
        i = int(np.argmax(steps))
        rows.measured(
            claim,
            groups,
            stat,
            map_=map_,
            data=data,
            scope=scope,
            note=f"largest step n={pts[i][0][0]} -> {pts[i + 1][0][0]}: ratio {steps[i]:.3f}",
        )


def _ws_raf(rows: Rows, frame: pd.DataFrame, data: str) -> None:
    big = frame[frame["d"] >= RAF_FLOOR_D]
    if big.empty:
        rows.not_run(
            "raf_floor",
            f"no RAF rows with d >= {RAF_FLOOR_D} (this run: d = {sorted(int(d) for d in frame['d'].unique())})",
            map_="raf",
            data=data,
        )
    else:
        pts = grid_points(big, ["d", "n"], "lower")
        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        i = int(np.argmin(means))
        rows.measured(
            "raf_floor",
            groups,
            lambda g: grid_means(g).min(axis=1),
            map_="raf",
            data=data,
            scope=f"d>={RAF_FLOOR_D}",
            note=f"lowest point d={pts[i][0][0]}, n={pts[i][0][1]}: mean WS {means[i]:.3f}",
        )
    for d in sorted(frame["d"].unique()):
        pts = grid_points(frame[frame["d"] == d], ["n"], "lower")
        scope = f"d={int(d)}"
        if len(pts) < 2:
            rows.not_run("raf_ratio", f"one n value only (n = {pts[0][0][0]})", map_="raf", data=data, scope=scope)
            continue
        ends = [pts[0][1], pts[-1][1]]
        rows.measured(
            "raf_ratio",
            ends,
            lambda g: g[1].mean(axis=1) / g[0].mean(axis=1),
            map_="raf",
            data=data,
            scope=scope,
            note=f"n={pts[-1][0][0]} over n={pts[0][0][0]}",
        )


def _ws_relu_vs_raf(rows: Rows, relu: pd.DataFrame, raf: pd.DataFrame, data: str) -> None:
    a = dict(grid_points(relu, ["d", "n"], "lower"))
    b = dict(grid_points(raf, ["d", "n"], "lower"))
    common = sorted(set(a) & set(b))
    if not common:
        rows.not_run(
            "relu_raf_below_raf", "no (d, n) grid point ran for both RAF and ReLU-RAF", map_="relu_raf", data=data
        )
        return
    k = len(common)

    def stat(groups: list[np.ndarray]) -> np.ndarray:
        m = grid_means(groups)
        return (m[:, :k] / m[:, k:]).max(axis=1)

    groups = [a[p] for p in common] + [b[p] for p in common]
    ratios = np.array([a[p].mean() / b[p].mean() for p in common])
    i = int(np.argmax(ratios))
    rows.measured(
        "relu_raf_below_raf",
        groups,
        stat,
        map_="relu_raf",
        data=data,
        scope=f"{k} common (d, n)",
        note=f"closest point d={common[i][0]}, n={common[i][1]}: ratio {ratios[i]:.3f}",
    )


def ws_claims(rows: Rows, ws: dict[str, pd.DataFrame]) -> None:
    def datas(frame: pd.DataFrame) -> list[str]:
        return sorted(str(x) for x in frame["data"].unique())

    if "rf" not in ws:
        for c in ("rf_slope", "rf_law"):
            rows.not_run(c, "no RF word-sensitivity table (ws_rf.parquet)", map_="rf")
    else:
        for data in datas(ws["rf"]):
            _ws_rf(rows, ws["rf"][ws["rf"]["data"] == data], data)
    if "drf" not in ws:
        rows.not_run("drf_decreasing", "no DRF word-sensitivity table (ws_drf.parquet)", map_="drf")
    else:
        for data in datas(ws["drf"]):
            part = ws["drf"][ws["drf"]["data"] == data]
            if "L" not in part or part["L"].isna().all():
                raise ValueError("table 'ws_drf' has no depth column L: re-run snakemake to rebuild it")
            _decreasing(rows, "drf_decreasing", part, "drf", data, ["d", "L"])
    if "raf" not in ws:
        for c in ("raf_floor", "raf_ratio"):
            rows.not_run(c, "no RAF word-sensitivity table (ws_raf.parquet)", map_="raf")
    else:
        for data in datas(ws["raf"]):
            _ws_raf(rows, ws["raf"][ws["raf"]["data"] == data], data)
    if "relu_raf" not in ws:
        for c in ("relu_raf_below_raf", "relu_raf_decreasing"):
            rows.not_run(c, "no ReLU-RAF word-sensitivity table (ws_relu_raf.parquet)", map_="relu_raf")
    else:
        for data in datas(ws["relu_raf"]):
            relu = ws["relu_raf"][ws["relu_raf"]["data"] == data]
            raf = ws["raf"][ws["raf"]["data"] == data] if "raf" in ws else None
            if raf is None or raf.empty:
                rows.not_run("relu_raf_below_raf", f"no RAF rows for data {data}", map_="relu_raf", data=data)
            else:
                _ws_relu_vs_raf(rows, relu, raf, data)
            _decreasing(rows, "relu_raf_decreasing", relu, "relu_raf", data, ["d"])
    for map_ in sorted(set(ws) - set(KNOWN_MAPS)):
        for data in datas(ws[map_]):
            _ws_slope(rows, "map_slope", ws[map_][ws[map_]["data"] == data], map_, data)


# ----------------------------------------------------------------------------- generalisation claims


def _alignment_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Rows with a finite alignment, and a note on the ones left out."""
    a = frame["alignment"].astype(float)
    keep = frame[np.isfinite(a)]
    dropped = len(frame) - len(keep)
    return keep, (f"{dropped} rows with a non-finite alignment left out" if dropped else "")


def _gen_alignment(rows: Rows, fig4: pd.DataFrame | None, data: str) -> None:
    if fig4 is None:
        for c, m in (("fig4_rf_alignment", "rf"), ("fig4_raf_alignment", "raf")):
            rows.not_run(c, f"no Figure 4 table for data {data}", map_=m, data=data)
        return
    if "alignment" not in fig4:
        for c, m in (("fig4_rf_alignment", "rf"), ("fig4_raf_alignment", "raf")):
            rows.not_run(
                c,
                "the Figure 4 table has no 'alignment' column (written by an older wordsens: re-run the gen jobs)",
                map_=m,
                data=data,
            )
        return
    rf, note = _alignment_rows(fig4[fig4["map"] == "rf"])
    if rf.empty:
        rows.not_run("fig4_rf_alignment", "no RF rows in Figure 4", map_="rf", data=data)
    else:
        a = rf["alignment"].astype(float)
        groups = sim_units(rf, {"hit": a >= 0.95, "all": pd.Series(1.0, index=rf.index)})
        extra = f"a in [{a.min():.3f}, {a.max():.3f}] over {len(rf)} rows"
        rows.measured(
            "fig4_rf_alignment",
            groups,
            fraction_stat,
            map_="rf",
            data=data,
            scope="all n, N, training, loss",
            note="; ".join(x for x in (extra, note) if x),
        )
    raf = fig4[(fig4["map"] == "raf") & (fig4["loss"] == "surrogate") & (fig4["d"] == FIG4_RAF_D)]
    if raf.empty:
        have = sorted(int(d) for d in fig4.loc[fig4["map"] == "raf", "d"].unique())
        rows.not_run(
            "fig4_raf_alignment",
            f"no RAF surrogate-loss rows at d = {FIG4_RAF_D} in Figure 4"
            + (f" (RAF ran at d = {have})" if have else " (no RAF rows)"),
            map_="raf",
            data=data,
        )
        return
    for n in sorted(raf["n"].unique()):
        part, note = _alignment_rows(raf[raf["n"] == n])
        scope = f"d={FIG4_RAF_D}, n={int(n)}"
        if part.empty:
            rows.not_run("fig4_raf_alignment", note, map_="raf", data=data, scope=scope)
            continue
        a = part["alignment"].astype(float)
        groups = sim_units(part, {"hit": a <= 0.5, "all": pd.Series(1.0, index=part.index)})
        extra = f"median a = {a.median():.3f} over {len(part)} rows"
        rows.measured(
            "fig4_raf_alignment",
            groups,
            fraction_stat,
            map_="raf",
            data=data,
            scope=scope,
            note="; ".join(x for x in (extra, note) if x),
        )


def _gen_bound(rows: Rows, gen: pd.DataFrame, data: str) -> None:
    maps = sorted(gen["map"].unique(), key=lambda m: (KNOWN_MAPS.index(m) if m in KNOWN_MAPS else 99, m))
    if "alignment" not in gen:
        rows.not_run(
            "err_bound",
            "the generalisation tables have no 'alignment' column (written by an older wordsens: re-run the gen jobs)",
            map_="rf",
            data=data,
        )
        return
    for map_ in maps:
        part = gen[gen["map"] == map_]
        a = part["alignment"].to_numpy(dtype=float)
        t0, d0 = part["t0"].to_numpy(dtype=float), part["D0"].to_numpy(dtype=float)
        gamma = np.maximum(np.abs(t0), np.abs(d0))
        bound = err_lower_bound(a, gamma)
        applies = np.isfinite(bound)
        figures = "+".join(sorted(part["figure"].unique()))
        if not applies.any():
            rows.not_run(
                "err_bound",
                f"no {map_} row with a >= 0 and gamma_min < 1 ({len(part)} rows)",
                map_=map_,
                data=data,
                scope=figures,
            )
            continue
        err = part["err"].to_numpy(dtype=float)
        above = np.where(applies, err >= bound - BOUND_SLACK * (1 + np.nan_to_num(bound)), False)
        groups = sim_units(
            part, {"hit": pd.Series(above, index=part.index), "all": pd.Series(applies, index=part.index)}
        )
        groups = [g[g[:, 1] > 0] for g in groups]
        groups = [g for g in groups if len(g)]
        y, d1 = part["y"].to_numpy(dtype=float), part["D1"].to_numpy(dtype=float)
        residual = np.abs(d1 - d0 - a * (y - t0))[applies]
        curve = (2 - 2 * gamma[applies]) ** 2
        below_curve = int((err[applies] < curve - BOUND_SLACK * (1 + curve)).sum())
        slack = (err - bound)[applies]
        note = (
            f"{int(applies.sum())} of {len(part)} rows satisfy the premise; min Err - bound = {slack.min():.3g}; "
            f"max |D1 - D0 - a (y - t0)| = {residual.max():.2g}; {below_curve} below the a = 1 curve "
            "(2 - 2 gamma)^2"
        )
        rows.measured("err_bound", groups, fraction_stat, map_=map_, data=data, scope=figures, note=note)


def _gen_penalty(rows: Rows, fig5: pd.DataFrame | None, data: str) -> None:
    if fig5 is None:
        rows.not_run("fig5_penalty", f"no Figure 5 table for data {data}", data=data)
        return
    pen = fig5[fig5["loss"] == "penalised"]
    if pen.empty:
        rows.not_run("fig5_penalty", "no penalised-loss rows in Figure 5", data=data)
        return
    cells = ["map", "n", "N", "d", "training"]
    for key, part in pen.groupby(cells, sort=True):
        map_, n, N, d, training = (plain(k) for k in key)
        scope = f"n={n}, N={N}, d={d}, {training}"
        penalties = sorted(float(p) for p in part["penalty"].unique())
        if len(penalties) < 2:
            rows.not_run("fig5_penalty", f"one penalty only ({penalties[0]:g})", map_=str(map_), data=data, scope=scope)
            continue
        table = part.pivot_table(index="simulation", columns="penalty", values="gamma_min", aggfunc="first")
        table = table.reindex(columns=penalties)

        def stat(groups: list[np.ndarray]) -> np.ndarray:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(groups[0], axis=1)  # (R, P)
            return np.diff(med, axis=1).max(axis=1)

        medians = table.median(axis=0).to_numpy()
        pairs = zip(penalties, medians, strict=True)
        note = "median gamma_min " + ", ".join(f"{m:.3g} (penalty {p:g})" for p, m in pairs)
        rows.measured(
            "fig5_penalty", [table.to_numpy(dtype=float)], stat, map_=str(map_), data=data, scope=scope, note=note
        )


def _gen_interpolation(rows: Rows, key: str, frame: pd.DataFrame) -> None:
    figure = table_kind(key)[1]  # type: ignore[index]
    data = ", ".join(sorted(str(x) for x in frame["data"].unique()))
    if "interpolates" not in frame:
        rows.not_run(
            "not_interpolating",
            f"table {key!r} has no 'interpolates' column (written by an older wordsens: re-run the gen jobs)",
            data=data,
            scope=figure,
        )
        return
    flag = frame["interpolates"].astype("boolean")
    bad = frame[(~flag).fillna(False).to_numpy(dtype=bool)]
    note = f"{len(bad)} of {len(frame)} rows"
    if len(bad):
        sims = bad.groupby(GEN_GRID)["simulation"].nunique()
        note += "; simulations: " + ", ".join(f"{m} n={n} N={N} d={d}: {s}" for (_, m, n, N, d), s in sims.items())
    unknown = int(flag.isna().sum())
    if unknown:
        note += f"; {unknown} rows without a flag"
    rows.count("not_interpolating", len(bad), len(frame), map_="", data=data, scope=figure, note=note)


def gen_claims(rows: Rows, gen: dict[str, pd.DataFrame]) -> None:
    if not gen:
        for c, m in (
            ("fig4_rf_alignment", "rf"),
            ("fig4_raf_alignment", "raf"),
            ("err_bound", "rf"),
            ("fig5_penalty", ""),
            ("not_interpolating", ""),
        ):
            rows.not_run(c, "no generalisation tables (gen_fig4_<data>.parquet, gen_fig5_<data>.parquet)", map_=m)
        return
    frames = []
    for key, frame in gen.items():
        frames.append(frame.assign(figure=table_kind(key)[1]))  # type: ignore[index]
    allgen = pd.concat(frames, ignore_index=True)
    for data in sorted(str(x) for x in allgen["data"].unique()):
        part = allgen[allgen["data"] == data]
        fig4 = part[part["figure"] == "fig4"]
        fig5 = part[part["figure"] == "fig5"]
        _gen_alignment(rows, fig4 if not fig4.empty else None, data)
        _gen_bound(rows, part, data)
        _gen_penalty(rows, fig5 if not fig5.empty else None, data)
    for key in sorted(gen):
        _gen_interpolation(rows, key, gen[key])
