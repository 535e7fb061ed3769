"""Figures 4 and 5 from the generalisation tables: the test error (or the alignment ratio) against
gamma_min after changing one word (``gen_figure``), for the gen study and for gen_words (real words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.transforms import offset_copy

from .common import colours_of, map_label, not_run_note, note_under, save
from .scatter import on_scale, side_by_side

TRAINING_TITLES = {"fine_tune": "fine-tuned", "retrain": "re-trained"}
LOSS_MARKERS = {"surrogate": "o", "direct": "X", "penalised": "o"}


def _gen_panel(map_name: str, n: int) -> str:
    return f"{map_label(map_name).split(' (')[0]}, n = {n}"


GEN_Y = {
    "err": ("test error Err", None),
    "alignment": (r"alignment ratio $a$", 1.0),  # the reference line: a = 1, no separation
}


def _not_interpolating(table: pd.DataFrame) -> pd.Series:
    """Rows whose first-stage model does not interpolate its training set (``interpolates`` False;
    tables written before that column existed count as interpolating)."""
    if "interpolates" not in table:
        return pd.Series(False, index=table.index)
    return ~table["interpolates"].fillna(True).astype(bool)


def gen_figure(
    table: pd.DataFrame,
    columns: Sequence[Sequence[Any]],
    paths: Sequence[str | Path],
    *,
    hue: str,
    y: str = "err",
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
    labels: Mapping[Any, str] | None = None,
) -> plt.Figure:
    """One grid of scatter panels: ``y`` (``"err"``; ``"alignment"``: the companion figures, with the line
    a = 1) against gamma_min, rows = training, columns = (map, n) of ``columns``; colour = ``hue`` (N, penalty;
    ``labels``: the legend's text of each level, in order); marker = loss. A few runaway rows are drawn at the
    edge as triangles (``on_scale``), coinciding points of different colours side by side (``side_by_side``),
    both counted under their panel; rows whose first stage does not interpolate hollow."""
    settings = settings or {}
    _check_gen_table(table, y)
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    cols = [_gen_panel(m, int(n)) for m, n in columns if ((table["map"] == m) & (table["n"] == int(n))).any()]
    trainings = [TRAINING_TITLES[t] for t in TRAINING_TITLES if t in set(table["training"])]
    losses = [loss for loss in LOSS_MARKERS if loss in set(table["loss"])]
    present = set(table[hue].unique())
    levels = [level for level in labels if level in present] if labels else sorted(present)
    names = {level: labels[level] if labels else f"{hue} = {level:g}" for level in levels}
    palette = colours_of(levels, settings)
    frame = table.assign(
        panel=[_gen_panel(m, int(n)) for m, n in zip(table["map"], table["n"], strict=True)],
        training=table["training"].map(TRAINING_TITLES),
        hollow=_not_interpolating(table),
    )
    frame = frame[frame["panel"].isin(cols)]
    grid = sns.FacetGrid(
        frame,
        row="training",
        col="panel",
        row_order=trainings,
        col_order=cols,
        sharex=False,
        sharey="row",
        height=3.0,
        aspect=3.4 / 3.0,
    )
    grid.set_titles("{col_name}, {row_name}")
    label, reference = GEN_Y[y]
    grid.set_axis_labels(r"$\gamma_{\min}$", label)
    off_scale = _gen_panels(grid, frame, trainings, cols, y=y, hue=hue, palette=palette)
    handles = {names[level]: _handle("o", palette[level]) for level in levels}
    handles |= {f"{loss} loss": _handle(LOSS_MARKERS[loss], "dimgray") for loss in losses}
    if off_scale:
        handles["off scale (at the edge)"] = _handle("^", "dimgray")
    grid.add_legend(legend_data=handles, label_order=list(handles), title="")
    _gen_captions(grid.figure, frame, reference)
    grid.tight_layout()
    if left_out:
        note = not_run_note(left_out, ["data", "map", "n", "N", "d"], most=8).replace("\n", "; ")
        grid.figure.text(0.01, -0.02, note, fontsize="small", color="dimgray", va="top", ha="left", wrap=True)
    save(grid.figure, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return grid.figure


def _check_gen_table(table: pd.DataFrame, y: str) -> None:
    """Refuse an empty table, an unknown ``y`` and a table without the column ``y`` (written before it)."""
    if table.empty:
        raise ValueError("no generalisation results to plot")
    if y not in GEN_Y:
        raise ValueError(f"y must be one of {sorted(GEN_Y)}, got {y!r}")
    if y not in table:
        raise ValueError(
            f"the table has no column {y!r}: re-run the generalisation jobs (a bump of its study's numerics version)"
        )


def _gen_panels(
    grid: sns.FacetGrid,
    frame: pd.DataFrame,
    trainings: list[str],
    cols: list[str],
    *,
    y: str,
    hue: str,
    palette: dict[Any, Any],
) -> int:
    """Draw every panel, each row's y axis fitted to its rows, each panel's x axis to its own
    (``_axis_range``), with the reference line of ``y`` and the panel's notes. Returns how many rows were
    drawn off scale."""
    reference = GEN_Y[y][1]
    anchor = 0.0 if reference is None else None  # the error starts at 0; the ratio a has no floor
    off_scale = 0
    for training in trainings:
        rows = frame[frame["training"] == training]
        y_range = _axis_range(rows[y], anchor, reference)
        for panel in cols:
            ax = grid.axes_dict[(training, panel)]
            if reference is not None:
                ax.axhline(reference, color="dimgray", ls="--", lw=1, zorder=0)
            part = rows[rows["panel"] == panel]
            x_range = _axis_range(part["gamma_min"], 0.0, None)
            notes, off = _gen_scatter(grid.figure, ax, part, y, hue, palette, y_range, x_range)
            note_under(ax, "\n".join(notes))
            off_scale += off
    return off_scale


def _gen_captions(fig: plt.Figure, frame: pd.DataFrame, reference: float | None) -> None:
    """What the reference line means (where ``y`` has one) and how many rows are drawn hollow (their
    first stage does not interpolate its training set)."""
    if reference is not None:
        line = "dashed: a = 1 (one word cannot separate the two sentences)"
        fig.text(0.01, 1.0, line, fontsize="small", color="dimgray", va="bottom", ha="left")
    hollow = int(frame["hollow"].sum())
    if hollow:
        fig.suptitle(
            f"hollow: {hollow} of {len(frame)} rows whose first stage does not interpolate its training set",
            fontsize="small",
            y=1.04,
        )


# How far apart coinciding points of different colours are drawn (points: a marker of s = 28 is
# about 5.3 points wide)
SIDE_BY_SIDE_POINTS = 6.0
_OFF_MARKERS = {"above": "^", "below": "v", "right": ">"}


class _Range(NamedTuple):
    """An axis: its limits and the values drawn on scale (``low``, ``high``: None, every value)."""

    limits: tuple[float, float]
    low: float | None
    high: float | None


def _axis_range(values: pd.Series, anchor: float | None, reference: float | None) -> _Range:
    """The limits of an axis that draws ``values`` (and the ``reference`` line), starting at ``anchor``
    where given, with the few runaway values off scale (``on_scale``) in a margin beyond its edge."""
    v = values.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    low, high = on_scale(v, anchor=anchor)
    kept = v[(v >= (-np.inf if low is None else low)) & (v <= (np.inf if high is None else high))]
    ends = [*kept.tolist(), *([] if reference is None else [reference]), *([] if anchor is None else [anchor])]
    lo, hi = (min(ends), max(ends)) if ends else (0.0, 1.0)
    span = (hi - lo) or max(abs(hi), 1.0)
    # 6% margins, 12% on a side with off-scale values (their triangles sit in it)
    bottom = lo - (0.12 if low is not None else 0.06) * span
    top = hi + (0.12 if high is not None else 0.06) * span
    return _Range((bottom, top), low, high)


def _gen_scatter(
    fig: plt.Figure,
    ax: plt.Axes,
    part: pd.DataFrame,
    y: str,
    hue: str,
    palette: dict[Any, Any],
    y_range: _Range,
    x_range: _Range,
) -> tuple[list[str], int]:
    """One panel's rows in the colour of their ``hue`` level. Returns the panel's notes and how many rows it
    drew off scale."""
    ax.set_xlim(*x_range.limits)
    ax.set_ylim(*y_range.limits)
    if part.empty:
        return [], 0
    part = part.sort_values(hue, kind="stable")  # side by side in the legend's order, left to right
    xs, ys = part["gamma_min"].to_numpy(dtype=float), part[y].to_numpy(dtype=float)
    above = (ys > y_range.high) if y_range.high is not None else np.zeros(len(ys), bool)
    below = (ys < y_range.low) if y_range.low is not None else np.zeros(len(ys), bool)
    right = (xs > x_range.high) if x_range.high is not None else np.zeros(len(xs), bool)
    (x0, x1), (y0, y1) = x_range.limits, y_range.limits
    edge_x = x_range.high + 0.06 * (x1 - x0) if x_range.high is not None else x1
    shown_x = np.where(right, edge_x, xs)
    shown_y = np.where(above, y1 - 0.06 * (y1 - y0), np.where(below, y0 + 0.06 * (y1 - y0), ys))
    kind = np.where(above, "above", np.where(below, "below", np.where(right, "right", "")))
    spans = {"x_span": x1 - x0, "y_span": y1 - y0, "within": 0.015}
    on = kind == ""
    shift = np.zeros(len(part))
    shift[on], together, moved = side_by_side(shown_x[on], shown_y[on], list(part[hue][on]), **spans)
    # off-scale rows at one place of the edge (a corner): each its own marker, whatever its colour
    shift[~on] = side_by_side(shown_x[~on], shown_y[~on], list(range(int((~on).sum()))), **spans)[0]
    drawn = part.assign(_x=shown_x, _y=shown_y, _kind=kind, _shift=shift)
    for (level, loss, hollow, off, dx), points in drawn.groupby([hue, "loss", "hollow", "_kind", "_shift"]):
        colour = palette[level]
        ax.scatter(
            points["_x"],
            points["_y"],
            marker=_OFF_MARKERS.get(str(off), LOSS_MARKERS[str(loss)]),
            s=28 if not off else 36,
            facecolors="white" if hollow else [colour],
            edgecolors=[colour] if hollow else "white",
            linewidths=1.0 if hollow else 0.8,
            alpha=None if hollow else 0.85,
            zorder=3,
            # a shift in points, whatever the axis' scale: offset from the data position when drawn
            transform=offset_copy(ax.transData, fig=fig, x=float(dx) * SIDE_BY_SIDE_POINTS, units="points"),
            label="_not_interpolating" if hollow else ("_off_scale" if off else "_nolegend_"),
        )
    notes = []
    off = above | below | right
    if off.any():
        what = []
        if (above | below).any():
            outside = ys[above | below]
            what.append(f"{_y_name(y)} from {outside.min():.3g} to {outside.max():.3g}")
        if right.any():
            what.append(rf"$\gamma_{{\min}}$ up to {xs[right].max():.3g}")
        notes += [f"off scale: {int(off.sum())} of {len(part)} rows, triangles at the edge", f"({'; '.join(what)})"]
    if moved:
        which = ", ".join(level if isinstance(level, str) else f"{level:g}" for level in together)
        within = rf"$\gamma_{{\min}}$ and {_y_name(y)} within a marker"
        notes += [f"side by side: {moved} points where {hue} = {which}", f"fall on one another ({within})"]
    return notes, int(off.sum())


def _y_name(y: str) -> str:
    """The short name of a generalisation figure's y (``GEN_Y``): ``Err`` or ``$a$``."""
    return GEN_Y[y][0].split()[-1]


def _handle(marker: str, colour: Any) -> plt.Line2D:
    return plt.Line2D([], [], ls="", marker=marker, color=colour, markeredgecolor="white", ms=6)
