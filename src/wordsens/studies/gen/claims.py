"""The generalisation claims (:func:`gen_claims`, on the ``gen_fig4_<data>`` and ``gen_fig5_<data>`` tables,
after :func:`check_identity`); defined in :mod:`wordsens.claims.stats`, documented in ``docs/claims.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...claims.intervals import clopper_pearson, median_interval
from ...claims.rows import Rows, check_columns
from ...claims.stats import (
    IDENTITY_TOL,
    NUMERICAL_TOL,
    ZERO_LOSS_TOL,
    err_lower_bound,
    raf_alignment_threshold,
)
from ...claims.units import GEN_GRID, plain, slices
from ...theory import rf_law


def _figure(key: str) -> str:
    """The figure (``fig4``, ``fig5``) of a generalisation table's stem (``gen_fig4_imdb``)."""
    m = re.fullmatch(r"gen_(fig[45])_.+", key)
    if m is None:
        raise ValueError(f"{key!r} is not a generalisation table (gen_fig4_<data> or gen_fig5_<data>)")
    return m.group(1)


def check_identity(gen: pd.DataFrame) -> None:
    """Raise ``ValueError`` where a row with a finite alignment breaks ``D1 - D0 = a (y - t0)`` by more than
    ``IDENTITY_TOL (1 + |D1| + |D0| + |a (y - t0)|)``: both second stages add a multiple of one vector to
    ``theta*``, so such a row is a bug in the table (measured residual 2.2e-16), not a claim that fails."""
    if "alignment" not in gen or gen.empty:
        return
    a = gen["alignment"].to_numpy(dtype=float)
    y, t0 = gen["y"].to_numpy(dtype=float), gen["t0"].to_numpy(dtype=float)
    d0, d1 = gen["D0"].to_numpy(dtype=float), gen["D1"].to_numpy(dtype=float)
    step = a * (y - t0)
    residual = np.abs(d1 - d0 - step)
    bad = np.isfinite(a) & ~(residual <= IDENTITY_TOL * (1 + np.abs(d1) + np.abs(d0) + np.abs(step)))
    if bad.any():
        worst = int(np.argmax(np.where(bad, residual, -1.0)))
        row = gen.iloc[worst]
        where = ", ".join(f"{c}={plain(row[c])}" for c in [*GEN_GRID, "simulation", "training", "loss"] if c in gen)
        raise ValueError(
            f"internal inconsistency: {int(bad.sum())} of {len(gen)} generalisation rows break "
            f"D1 - D0 = a (y - t0) (largest residual {residual[worst]:.3g} at {where}); the identity holds "
            "by construction, so these rows were not computed by wordsens.generalisation or were altered "
            "(a bug, not a claim that fails)"
        )


def _where(row: pd.Series) -> str:
    """``simulation 3 (n=40, N=700, retrain, surrogate)``: a row of a generalisation table, named."""
    parts = [f"{c}={plain(row[c])}" for c in ("n", "N") if c in row.index]
    parts += [str(row[c]) for c in ("training", "loss") if c in row.index]
    return f"simulation {plain(row['simulation'])} ({', '.join(parts)})"


def _older(table: str, column: str) -> str:
    return f"{table} has no {column!r} column (written by an older wordsens: re-run the gen jobs)"


def _named(
    part: pd.DataFrame, below: np.ndarray, bounds: np.ndarray, text: Callable[[pd.Series, float], str]
) -> list[str]:
    """The rows of ``part`` where ``below``, each named (``_where``) with ``text`` of it and its bound."""
    return [f"{_where(row)}: {text(row, b)}" for (_, row), b in zip(part[below].iterrows(), bounds[below], strict=True)]


def _gen_rf(rows: Rows, fig4: pd.DataFrame | None, data: str) -> None:
    claims = ("fig4_rf_alignment", "fig4_rf_err")
    rf = fig4[fig4["map"] == "rf"] if fig4 is not None else None
    if rf is None or rf.empty:
        why = f"no Figure 4 table for data {data}" if fig4 is None else "no RF rows in Figure 4"
        for c in claims:
            rows.not_run(c, why, map_="rf", data=data)
        return
    for _, scope, part in slices(rf, ["d"]):
        at: dict[str, Any] = {"map_": "rf", "data": data, "scope": scope}
        S = rf_law(part["n"].to_numpy(dtype=float))
        if "alignment" not in part:
            rows.not_run("fig4_rf_alignment", _older("the Figure 4 table", "alignment"), **at)
        else:
            a = part["alignment"].to_numpy(dtype=float)
            finite = np.isfinite(a)
            bound = 1 - S
            below = finite & (a < bound - NUMERICAL_TOL * np.maximum(1.0, np.abs(bound)))
            ns = ", ".join(f"n={int(n)}: 1 - S = {1 - float(rf_law(float(n))):.3f}" for n in sorted(part["n"].unique()))
            note = f"a in [{np.nanmin(a):.3f}, {np.nanmax(a):.3f}]; {ns}" if finite.any() else ns
            if (~finite).any():
                note += f"; {int((~finite).sum())} rows with a non-finite alignment left out"
            named = _named(part, below, bound, lambda row, b: f"a = {row['alignment']:.4f} < {b:.4f}")
            rows.universal("fig4_rf_alignment", named, int(finite.sum()), note=note, **at)
        gamma = part["gamma_min"].to_numpy(dtype=float)
        err = part["err"].to_numpy(dtype=float)
        applies = gamma < 1
        if not applies.any():
            rows.not_run("fig4_rf_err", f"no RF row with gamma_min < 1 ({len(part)} rows)", **at)
            continue
        bound = err_lower_bound(1 - S, gamma)
        below = applies & (err < bound * (1 - NUMERICAL_TOL) - NUMERICAL_TOL)
        curve = (2 - 2 * gamma) ** 2
        named = _named(
            part, below, bound, lambda row, b: f"Err = {row['err']:.4g} < {b:.4g} at gamma_min = {row['gamma_min']:.3g}"
        )
        rows.universal(
            "fig4_rf_err",
            named,
            int(applies.sum()),
            **at,
            note=f"rows with gamma_min < 1 checked ({len(part)} rows in all); "
            f"{int((applies & (err < curve)).sum())} below (2 - 2 gamma_min)^2 itself; "
            f"smallest Err / bound {np.nanmin(err[applies] / bound[applies]):.3g}",
        )


def _gen_raf(rows: Rows, fig4: pd.DataFrame | None, data: str) -> None:
    raf = None if fig4 is None else fig4[(fig4["map"] == "raf") & (fig4["loss"] == "surrogate")]
    if raf is None or raf.empty:
        why = f"no Figure 4 table for data {data}" if fig4 is None else "no RAF surrogate-loss rows in Figure 4"
        rows.not_run("fig4_raf_alignment", why, map_="raf", data=data)
        return
    if "alignment" not in raf:
        rows.not_run("fig4_raf_alignment", _older("the Figure 4 table", "alignment"), map_="raf", data=data)
        return
    # one surrogate-loss row per simulation and training: the simulations of a (d, n, training) scope
    # are independent (each N its own), the two trainings of one simulation are not
    for (d, n, training), _, part in slices(raf, ["d", "n", "training"]):
        a_max = raf_alignment_threshold(float(d))
        fields = {"a_max": f"{a_max:.3g}", "d": str(d)}
        at: dict[str, Any] = {"map_": "raf", "data": data, "scope": f"d={d}, n={n}, {training}", "fields": fields}
        a = part["alignment"].to_numpy(dtype=float)
        finite = np.isfinite(a)
        if not finite.any():
            rows.not_run("fig4_raf_alignment", "no row with a finite alignment", **at)
            continue
        hits = int((finite & (a <= a_max)).sum())
        note = f"{hits} of {int(finite.sum())} simulations; median a = {np.median(a[finite]):.3f}"
        if (~finite).any():
            note += f"; {int((~finite).sum())} rows with a non-finite alignment left out"
        rows.estimate("fig4_raf_alignment", clopper_pearson(hits, int(finite.sum())), note=note, **at)


def _per_penalty(penalties: list[float], values: Any) -> str:
    return ", ".join(f"{m:.3g} (penalty {p:g})" for p, m in zip(penalties, values, strict=True))


def _gen_penalty(rows: Rows, fig5: pd.DataFrame | None, data: str) -> None:
    if fig5 is None:
        rows.not_run("fig5_penalty", f"no Figure 5 table for data {data}", data=data)
        return
    pen = fig5[fig5["loss"] == "penalised"]
    if pen.empty:
        rows.not_run("fig5_penalty", "no penalised-loss rows in Figure 5", data=data)
        return
    for (map_, n, N, d, training), _, part in slices(pen, ["map", "n", "N", "d", "training"]):
        at: dict[str, Any] = {"map_": str(map_), "data": data, "scope": f"n={n}, N={N}, d={d}, {training}"}
        penalties = sorted(float(p) for p in part["penalty"].unique())
        if len(penalties) < 2:
            rows.not_run("fig5_penalty", f"one penalty only ({penalties[0]:g})", **at)
            continue
        work = part.assign(abs_d0=part["D0"].abs(), loss_value=part["err"] + part["penalty"] * part["D0"] ** 2)
        d0 = work.pivot_table(index="simulation", columns="penalty", values="abs_d0", aggfunc="first")
        d0 = d0.reindex(columns=penalties).dropna()
        if d0.empty:
            rows.not_run("fig5_penalty", "no simulation ran at every penalty", **at)
            continue
        worst = work.pivot_table(index="simulation", columns="penalty", values="loss_value", aggfunc="first")
        zero = (worst.reindex(index=d0.index, columns=penalties) <= ZERO_LOSS_TOL).all(axis=1)
        zero_sims = [int(s) for s in d0.index[zero.to_numpy()]]
        named = f" (simulations {', '.join(map(str, zero_sims))})" if zero_sims else ""
        rows.count(
            "fig5_zero_loss", len(zero_sims), len(d0), note=f"{len(zero_sims)} of {len(d0)} simulations{named}", **at
        )
        trade = d0[~zero.to_numpy()]
        if trade.empty:
            why = f"every simulation ({len(d0)}) reaches zero loss at every penalty: nothing for the penalty to trade"
            rows.not_run("fig5_penalty", f"{why} (fig5_zero_loss)", **at)
            continue
        change = (trade[penalties[-1]] - trade[penalties[0]]).to_numpy(dtype=float)
        gamma = part.pivot_table(index="simulation", columns="penalty", values="gamma_min", aggfunc="first")
        note = f"median |D0| {_per_penalty(penalties, d0.median(axis=0).to_numpy())}"
        note += f"; median gamma_min {_per_penalty(penalties, gamma.reindex(columns=penalties).median())}"
        if zero_sims:
            note += f"; {len(zero_sims)} simulation(s) at zero loss left out"
        rows.estimate("fig5_penalty", median_interval(change), note=note, **at)


def _gen_interpolation(rows: Rows, key: str, frame: pd.DataFrame) -> None:
    figure = _figure(key)
    data = ", ".join(sorted(str(x) for x in frame["data"].unique()))
    if "interpolates" not in frame:
        rows.not_run("not_interpolating", _older(f"table {key!r}", "interpolates"), data=data, scope=figure)
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


GEN_CLAIMS = (
    ("fig4_rf_alignment", "rf"),
    ("fig4_rf_err", "rf"),
    ("fig4_raf_alignment", "raf"),
    ("fig5_penalty", ""),
    ("fig5_zero_loss", ""),
    ("not_interpolating", ""),
)


# the columns every row of a generalisation table has (the claims read them)
REQUIRED = (
    "figure",
    "map",
    "data",
    "d",
    "n",
    "N",
    "simulation",
    "training",
    "loss",
    "penalty",
    "y",
    "t0",
    "D0",
    "D1",
    "err",
    "gamma_min",
)


def gen_claims(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    """The generalisation claims on the ``gen_fig4_<data>`` and ``gen_fig5_<data>`` tables."""
    for key, frame in tables.items():
        check_columns(key, frame, REQUIRED)
    gen = {key: frame for key, frame in tables.items() if not frame.empty}
    if not gen:
        for c, m in GEN_CLAIMS:
            rows.not_run(c, "no generalisation tables (gen_fig4_<data>.parquet, gen_fig5_<data>.parquet)", map_=m)
        return
    frames = [frame.assign(figure=_figure(key)) for key, frame in gen.items()]
    allgen = pd.concat(frames, ignore_index=True)
    check_identity(allgen)
    for data in sorted(str(x) for x in allgen["data"].unique()):
        part = allgen[allgen["data"] == data]
        fig4 = part[part["figure"] == "fig4"]
        fig5 = part[part["figure"] == "fig5"]
        _gen_rf(rows, fig4 if not fig4.empty else None, data)
        _gen_raf(rows, fig4 if not fig4.empty else None, data)
        _gen_penalty(rows, fig5 if not fig5.empty else None, data)
    for key in sorted(gen):
        _gen_interpolation(rows, key, gen[key])
