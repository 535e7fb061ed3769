"""Figures 2 and 3 (panels 1-2) from the word-sensitivity tables: the mean word sensitivity of each map
against n with a one-standard-deviation band, plain or times sqrt(n) (``ws_figure``).
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

from ...plots.common import (
    colours_of,
    finish,
    hue_of,
    map_label,
    map_law,
    mark_not_run,
    not_run_note,
    point_keys,
    start,
)


def _panel(ax: plt.Axes, frame: pd.DataFrame, map_name: str, *, scaled: bool, settings: dict[str, Any]) -> None:
    frame = frame.copy()
    factor = np.sqrt(frame["n"].astype(float)) if scaled else 1.0
    frame["value"] = frame["lower"] * factor
    hue = hue_of(map_name, frame)
    frame[hue] = frame[hue].astype(int)
    levels = sorted(frame[hue].unique())
    colors = colours_of(levels, settings)
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
    if "upper" in frame and frame["upper"].notna().any():  # a certified upper bound (RF's)
        upper = frame.assign(up=frame["upper"] * factor).groupby([hue, "n"], as_index=False)["up"].mean()
        for level in levels:
            part = upper[upper[hue] == level]
            ax.plot(part["n"], part["up"], ls="--", color=colors[level], lw=1)
        handles.append(plt.Line2D([], [], color="gray", ls="--", label="certified upper bound"))
    known = map_law(map_name)
    if known is not None:
        law, label = known
        grid = np.linspace(frame["n"].min(), frame["n"].max(), 200)
        ax.plot(grid, law(grid) * (np.sqrt(grid) if scaled else 1.0), color="black", ls=":", lw=1.5)
        handles.append(
            plt.Line2D([], [], color="black", ls=":", label=label + (r"$\;\times\sqrt{n}$" if scaled else ""))
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
) -> plt.Figure:
    """One panel per map of ``maps`` with results or left-out points: mean WS vs n with a 1-sd
    band (``lineplot(errorbar="sd")``); points left out are named under their panel, below its axis
    labels. Returns the (saved, closed) figure."""
    settings = settings or {}
    missing = {m: [p for p in left_out if p["map"] == m] for m in maps}
    present = [m for m in maps if (m in tables and not tables[m].empty) or missing[m]]
    if not present:
        raise ValueError(f"no results for any of {list(maps)}")
    fig, axes = start(settings, 1, len(present), figsize=(4.6 * len(present), 3.6), squeeze=False)
    for ax, map_name in zip(axes[0], present, strict=True):
        frame = tables.get(map_name)
        if frame is not None and not frame.empty:
            _panel(ax, frame, map_name, scaled=scaled, settings=settings)
        ds = {int(p["d"]) for p in missing[map_name]} | (set(frame["d"].astype(int)) if frame is not None else set())
        swept = len(point_keys(map_name)) > 2  # coloured by a swept option, not d: d goes in the title
        title = map_label(map_name) + (f" (d = {ds.pop()})" if swept and len(ds) == 1 else "")
        ax.set_title(title)
        ax.set_xlabel("context length n")
        ax.set_ylabel(r"word sensitivity $\times\sqrt{n}$" if scaled else "word sensitivity (lower bound)")
        ax.set_ylim(bottom=0)
        if missing[map_name]:
            mark_not_run(ax, not_run_note(missing[map_name], point_keys(map_name)))
    return finish(fig, paths, settings)


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``): Figure 2 or 3's panels, plain and times sqrt(n)."""
    for name, scaled in (("plain", False), ("scaled", True)):
        ws_figure(tables, params["maps"], outputs[name], scaled=scaled, left_out=params["left_out"], settings=settings)
