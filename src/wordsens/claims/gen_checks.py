"""The computations of the generalisation claims (:func:`gen_claims`, on the ``gen_fig4_<data>`` and
``gen_fig5_<data>`` tables), after :func:`check_identity`, which raises on rows that break
``D1 - D0 = a (y - t0)``. The claims, their statistics and thresholds are defined in
:mod:`wordsens.claims.stats` and documented in ``docs/claims.md``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..theory import rf_law
from .bootstrap import GEN_GRID, count_stat, fraction_stat, plain, sim_units, slices
from .stats import IDENTITY_TOL, Rows, err_lower_bound, raf_alignment_threshold, table_kind

__all__ = ["GEN_CLAIMS", "check_identity", "gen_claims"]


def check_identity(gen: pd.DataFrame) -> None:
    """Raise ``ValueError`` where a generalisation row breaks ``D1 - D0 = a (y - t0)``.

    Both second stages add a multiple of one vector to ``theta*``, so the identity holds for any
    row computed as ``wordsens.generalisation`` computes it (measured residual 2.2e-16): a row
    beyond ``IDENTITY_TOL (1 + |D1| + |D0| + |a (y - t0)|)`` is a bug in the table, not a claim
    that fails. Rows without a finite alignment, and tables without the column, are not checked.
    """
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


def _ones(part: pd.DataFrame) -> pd.Series:
    return pd.Series(1.0, index=part.index)


def _gen_rf(rows: Rows, fig4: pd.DataFrame | None, data: str) -> None:
    claims = ("fig4_rf_alignment", "fig4_rf_err")
    rf = fig4[fig4["map"] == "rf"] if fig4 is not None else None
    if rf is None or rf.empty:
        why = f"no Figure 4 table for data {data}" if fig4 is None else "no RF rows in Figure 4"
        for c in claims:
            rows.not_run(c, why, map_="rf", data=data)
        return
    for _, scope, part in slices(rf, ["d"]):
        S = rf_law(part["n"].to_numpy(dtype=float))
        if "alignment" not in part:
            rows.not_run(
                "fig4_rf_alignment",
                "the Figure 4 table has no 'alignment' column (written by an older wordsens: re-run the gen jobs)",
                map_="rf",
                data=data,
                scope=scope,
            )
        else:
            a = part["alignment"].to_numpy(dtype=float)
            finite = np.isfinite(a)
            below = finite & (a < 1 - S)
            groups = sim_units(part, {"hit": pd.Series(below, index=part.index)})
            ns = ", ".join(f"n={int(n)}: 1 - S = {1 - float(rf_law(float(n))):.3f}" for n in sorted(part["n"].unique()))
            note = (
                f"{int(below.sum())} of {int(finite.sum())} rows; a in [{np.nanmin(a):.3f}, {np.nanmax(a):.3f}]; {ns}"
            )
            if (~finite).any():
                note += f"; {int((~finite).sum())} rows with a non-finite alignment left out"
            rows.measured("fig4_rf_alignment", groups, count_stat, map_="rf", data=data, scope=scope, note=note)
        gamma = part["gamma_min"].to_numpy(dtype=float)
        err = part["err"].to_numpy(dtype=float)
        applies = gamma < 1
        if not applies.any():
            rows.not_run(
                "fig4_rf_err", f"no RF row with gamma_min < 1 ({len(part)} rows)", map_="rf", data=data, scope=scope
            )
            continue
        bound = err_lower_bound(1 - S, gamma)
        below = applies & (err < bound)
        curve = (2 - 2 * gamma) ** 2
        groups = sim_units(part, {"hit": pd.Series(below, index=part.index)})
        rows.measured(
            "fig4_rf_err",
            groups,
            count_stat,
            map_="rf",
            data=data,
            scope=scope,
            note=f"{int(below.sum())} of {int(applies.sum())} rows with gamma_min < 1 ({len(part)} rows); "
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
        rows.not_run(
            "fig4_raf_alignment",
            "the Figure 4 table has no 'alignment' column (written by an older wordsens: re-run the gen jobs)",
            map_="raf",
            data=data,
        )
        return
    for (d, _), scope, part in slices(raf, ["d", "n"]):
        a_max = raf_alignment_threshold(float(d))
        fields = {"a_max": f"{a_max:.3g}", "d": str(d)}
        a = part["alignment"].to_numpy(dtype=float)
        finite = np.isfinite(a)
        if not finite.any():
            rows.not_run(
                "fig4_raf_alignment",
                "no row with a finite alignment",
                map_="raf",
                data=data,
                scope=scope,
                fields=fields,
            )
            continue
        hits = pd.Series(finite & (a <= a_max), index=part.index)
        groups = sim_units(part, {"hit": hits, "all": pd.Series(finite.astype(float), index=part.index)})
        note = f"median a = {np.median(a[finite]):.3f} over {int(finite.sum())} rows"
        if (~finite).any():
            note += f"; {int((~finite).sum())} rows with a non-finite alignment left out"
        rows.measured(
            "fig4_raf_alignment", groups, fraction_stat, map_="raf", data=data, scope=scope, note=note, fields=fields
        )


def _gen_penalty(rows: Rows, fig5: pd.DataFrame | None, data: str) -> None:
    if fig5 is None:
        rows.not_run("fig5_penalty", f"no Figure 5 table for data {data}", data=data)
        return
    pen = fig5[fig5["loss"] == "penalised"]
    if pen.empty:
        rows.not_run("fig5_penalty", "no penalised-loss rows in Figure 5", data=data)
        return
    for (map_, n, N, d, training), _, part in slices(pen, ["map", "n", "N", "d", "training"]):
        scope = f"n={n}, N={N}, d={d}, {training}"
        penalties = sorted(float(p) for p in part["penalty"].unique())
        if len(penalties) < 2:
            rows.not_run("fig5_penalty", f"one penalty only ({penalties[0]:g})", map_=str(map_), data=data, scope=scope)
            continue
        table = part.pivot_table(index="simulation", columns="penalty", values="gamma_min", aggfunc="first")
        table = table.reindex(columns=penalties)
        change = (table[penalties[-1]] - table[penalties[0]]).dropna().to_numpy(dtype=float)
        if not len(change):
            rows.not_run("fig5_penalty", "no simulation ran at both penalties", map_=str(map_), data=data, scope=scope)
            continue
        medians = table.median(axis=0).to_numpy()
        note = "median gamma_min " + ", ".join(
            f"{m:.3g} (penalty {p:g})" for p, m in zip(penalties, medians, strict=True)
        )
        rows.measured(
            "fig5_penalty",
            [change],
            lambda g: np.median(g[0], axis=1),
            map_=str(map_),
            data=data,
            scope=scope,
            note=note,
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


GEN_CLAIMS = (
    ("fig4_rf_alignment", "rf"),
    ("fig4_rf_err", "rf"),
    ("fig4_raf_alignment", "raf"),
    ("fig5_penalty", ""),
    ("not_interpolating", ""),
)


def gen_claims(rows: Rows, gen: dict[str, pd.DataFrame]) -> None:
    if not gen:
        for c, m in GEN_CLAIMS:
            rows.not_run(c, "no generalisation tables (gen_fig4_<data>.parquet, gen_fig5_<data>.parquet)", map_=m)
        return
    frames = [frame.assign(figure=table_kind(key)[1]) for key, frame in gen.items()]  # type: ignore[index]
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
