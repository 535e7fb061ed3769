"""The paper's figures from the aggregated result tables: word sensitivity against n (Figures 2 and
3, ``ws_figure``) and generalisation after changing one word (Figures 4 and 5, ``gen_figure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..theory import rf_law
from .common import map_label, mark_not_run, not_run_note, save

__all__ = ["GEN_Y", "LOSS_MARKERS", "TRAINING_TITLES", "gen_figure", "ws_figure"]


def _panel(ax: plt.Axes, frame: pd.DataFrame, map_name: str, *, scaled: bool, palette: str) -> None:
    frame = frame.copy()
    factor = np.sqrt(frame["n"].astype(float)) if scaled else 1.0
    frame["value"] = frame["lower"] * factor
    hue = "L" if map_name == "drf" else "d"
    frame[hue] = frame[hue].astype(int)
    levels = sorted(frame[hue].unique())
    colors = dict(zip(levels, sns.color_palette(palette, len(levels)), strict=True))
    sns.lineplot(
        data=frame,
        x="n",
        y="value",
        hue=hue,
        hue_order=levels,
        palette=colors,
        errorbar="sd",
        marker="o",
        ax=ax,
        legend=False,
    )
    handles = [plt.Line2D([], [], color=colors[v], marker="o", label=f"{hue} = {v}") for v in levels]
    if map_name == "rf" and frame["upper"].notna().any():
        upper = frame.assign(up=frame["upper"] * factor).groupby([hue, "n"], as_index=False)["up"].mean()
        for level in levels:
            part = upper[upper[hue] == level]
            ax.plot(part["n"], part["up"], ls="--", color=colors[level], lw=1)
        handles.append(plt.Line2D([], [], color="gray", ls="--", label="certified upper bound"))
    if map_name == "rf":
        grid = np.linspace(frame["n"].min(), frame["n"].max(), 200)
        law = rf_law(grid) * (np.sqrt(grid) if scaled else 1.0)
        ax.plot(grid, law, color="black", ls=":", lw=1.5)
        handles.append(
            plt.Line2D(
                [],
                [],
                color="black",
                ls=":",
                label=r"$(1+\sqrt{2/n})/\sqrt{n}$" + (r"$\;\times\sqrt{n}$" if scaled else ""),
            )
        )
    ax.legend(handles=handles, fontsize="small", frameon=False)


def ws_figure(
    tables: dict[str, pd.DataFrame],
    maps: Sequence[str],
    paths: Sequence[str | Path],
    *,
    scaled: bool = False,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> None:
    """One panel per map of ``maps`` with results or left-out points: mean WS vs n with a 1-sd
    band (``lineplot(errorbar="sd")``); points left out are named in their panel."""
    settings = settings or {}
    missing = {m: [p for p in left_out if p["map"] == m] for m in maps}
    present = [m for m in maps if (m in tables and not tables[m].empty) or missing[m]]
    if not present:
        raise ValueError(f"no results for any of {list(maps)}")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    fig, axes = plt.subplots(1, len(present), figsize=(4.6 * len(present), 3.6), squeeze=False)
    for ax, map_name in zip(axes[0], present, strict=True):
        frame = tables.get(map_name)
        if frame is not None and not frame.empty:
            _panel(ax, frame, map_name, scaled=scaled, palette=settings.get("palette", "colorblind"))
        ds = {int(p["d"]) for p in missing[map_name]} | (set(frame["d"].astype(int)) if frame is not None else set())
        title = map_label(map_name) + (f" (d = {ds.pop()})" if map_name == "drf" and len(ds) == 1 else "")
        ax.set_title(title)
        ax.set_xlabel("context length n")
        ax.set_ylabel(r"word sensitivity $\times\sqrt{n}$" if scaled else "word sensitivity (lower bound)")
        ax.set_ylim(bottom=0)
        if missing[map_name]:
            keys = ["d", "n", "L"] if map_name == "drf" else ["d", "n"]
            mark_not_run(ax, not_run_note(missing[map_name], keys))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))


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
) -> plt.Figure:
    """Figures 4 and 5 as one ``seaborn.relplot``: ``y`` against gamma_min, rows = training,
    columns = (map, n); colour = ``hue`` (N or penalty); marker = loss (circle surrogate, cross
    direct). ``y``: ``"err"`` (the test error: the paper's figures) or ``"alignment"`` (the
    alignment ratio a of each row, with the reference line a = 1: the companion figures).

    Rows whose first stage does not interpolate its training set (``interpolates == False``) are
    drawn hollow and counted in the title; points left out are named under the panels. Returns the
    (saved, closed) figure.
    """
    settings = settings or {}
    if table.empty:
        raise ValueError("no generalisation results to plot")
    if y not in GEN_Y:
        raise ValueError(f"y must be one of {sorted(GEN_Y)}, got {y!r}")
    if y not in table:
        raise ValueError(f"the table has no column {y!r}: re-run the generalisation jobs (wordsens.NUMERICS_VERSIONS)")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    cols = [_gen_panel(m, int(n)) for m, n in columns if ((table["map"] == m) & (table["n"] == int(n))).any()]
    trainings = [TRAINING_TITLES[t] for t in TRAINING_TITLES if t in set(table["training"])]
    losses = [loss for loss in LOSS_MARKERS if loss in set(table["loss"])]
    levels = sorted(table[hue].unique())
    palette = dict(zip(levels, sns.color_palette(settings.get("palette", "colorblind"), len(levels)), strict=True))
    frame = table.assign(
        panel=[_gen_panel(m, int(n)) for m, n in zip(table["map"], table["n"], strict=True)],
        training=table["training"].map(TRAINING_TITLES),
    )
    grid = sns.relplot(
        data=frame,
        x="gamma_min",
        y=y,
        row="training",
        col="panel",
        hue=hue,
        style="loss",
        kind="scatter",
        row_order=trainings,
        col_order=cols,
        hue_order=levels,
        palette=palette,
        style_order=losses,
        markers={loss: LOSS_MARKERS[loss] for loss in losses},
        s=28,
        alpha=0.85,
        linewidth=0.8,
        height=3.0,
        aspect=3.4 / 3.0,
        facet_kws={"sharex": False, "sharey": "row"},
        legend="full" if len(losses) > 1 else "brief",
    )
    grid.set_titles("{col_name}, {row_name}")
    label, reference = GEN_Y[y]
    grid.set_axis_labels(r"$\gamma_{\min}$", label)
    hollow = frame[_not_interpolating(frame)]
    for (training, panel), ax in grid.axes_dict.items():
        ax.set_xlim(left=0)
        if reference is None:
            ax.set_ylim(bottom=-0.05)
        else:
            ax.axhline(reference, color="dimgray", ls="--", lw=1, zorder=0)
        part = hollow[(hollow["training"] == training) & (hollow["panel"] == panel)]
        for (level, loss), points in part.groupby([hue, "loss"]):
            ax.scatter(
                points["gamma_min"],
                points[y],
                marker=LOSS_MARKERS[str(loss)],
                s=28,
                facecolors="white",
                edgecolors=[palette[level]],
                linewidths=1.0,
                zorder=3,
                label="_not_interpolating",
            )
    if reference is not None:
        grid.figure.text(
            0.01,
            1.0,
            "dashed: a = 1 (one word cannot separate the two sentences)",
            fontsize="small",
            color="dimgray",
            va="bottom",
            ha="left",
        )
    if len(hollow):
        grid.figure.suptitle(
            f"hollow: {len(hollow)} of {len(frame)} rows whose first stage does not interpolate its training set",
            fontsize="small",
            y=1.04,
        )
    if left_out:
        note = not_run_note(left_out, ["data", "map", "n", "N", "d"], most=8).replace("\n", "; ")
        grid.figure.text(0.01, -0.02, note, fontsize="small", color="dimgray", va="top", ha="left", wrap=True)
    save(grid.figure, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return grid.figure
