"""The positions study's figure: the word sensitivity at every position of a review, with the RF law
(``positions_figure``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from ...plots.common import NOTE_STYLE, colours_of, finish, map_law, not_run_note, start

TOKEN_STYLES = {
    "[CLS]": ("*", "tab:red", 90),
    "word": ("o", None, 14),
    "[SEP]": ("D", "tab:purple", 40),
    "[PAD]": ("x", "gray", 14),
    "row": ("o", None, 14),
}


def positions_figure(
    table: pd.DataFrame,
    paths: Sequence[str | Path],
    *,
    labels: Mapping[str, str],
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """The WS at every position of each review (columns) for each map of ``labels`` (rows), a marker per
    ``token`` kind, [PAD] rows shaded, the map's law at the profile's n (the same at every position: every
    row has norm sqrt(d)); the maps ``left_out`` named under the panels."""
    settings = settings or {}
    maps_ = [m for m in labels if m in set(table["map"])]
    if not maps_:
        raise ValueError(f"no per-position results for any of {list(labels)}")
    trials = sorted(set(table["trial"]))
    size = (4.2 * len(trials), 2.8 * len(maps_))
    fig, axes = start(settings, len(maps_), len(trials), figsize=size, squeeze=False, sharex=True, sharey="row")
    colours = colours_of(maps_, settings)
    for r, map_name in enumerate(maps_):
        for c, trial in enumerate(trials):
            ax = axes[r][c]
            part = table[(table["map"] == map_name) & (table["trial"] == trial)].sort_values("position")
            if part.empty:
                ax.set_axis_off()
                continue
            top = float(table.loc[table["map"] == map_name, "lower"].max())
            _profile_panel(ax, part, map_name, labels[map_name], colour=colours[map_name], top=top)
            if r == len(maps_) - 1:
                ax.set_xlabel("position i ([CLS] = 0)")
            if c == 0:
                ax.set_ylabel(r"WS at position $i$")
    handles = [
        plt.Line2D([], [], ls="", marker=m, color=col or "black", label=k)
        for k, (m, col, _) in TOKEN_STYLES.items()
        if k in set(table["token"])
    ]
    handles += [
        plt.Line2D([], [], color="black", ls=":", label=known[1])
        for known in (map_law(name) for name in maps_)
        if known is not None
    ]
    fig.legend(
        handles=handles,
        loc="upper center",
        ncol=len(handles),
        frameon=False,
        fontsize="small",
        bbox_to_anchor=(0.5, 1.0),
    )
    if left_out:
        note = not_run_note(left_out, ["map", "d", "n"]).replace("\n", "; ")
        fig.text(0.01, 0.01, note, va="bottom", ha="left", **NOTE_STYLE)
    return finish(fig, paths, settings, rect=(0, 0.05 if left_out else 0.0, 1, 0.95))


def _profile_panel(ax: plt.Axes, part: pd.DataFrame, map_name: str, label: str, *, colour: Any, top: float) -> None:
    """One review's profile (``part``: its rows by position), the y axis up to ``top`` (the largest WS of the
    map's row of panels) or the law."""
    ax.plot(part["position"], part["lower"], color=colour, lw=1, zorder=1)
    for kind, (marker, style_colour, size) in TOKEN_STYLES.items():
        rows = part[part["token"] == kind]
        if len(rows):
            ax.scatter(
                rows["position"],
                rows["lower"],
                marker=marker,
                s=size,
                zorder=2,
                color=style_colour or colour,
                label=kind,
            )
    pads = part[part["token"] == "[PAD]"]
    if len(pads):
        ax.axvspan(pads["position"].min() - 0.5, pads["position"].max() + 0.5, color="gray", alpha=0.12, lw=0, zorder=0)
    first = part.iloc[0]
    ax.set_title(
        f"{label}, review {int(first['review_id'])} ({int(first['review_tokens'])} tokens)",
        fontsize="small",
    )
    known = map_law(map_name)
    if known is not None:
        n = int(first["n"]) if "n" in part else int(part["position"].max()) + 1
        law = float(known[0](float(n)))
        ax.axhline(law, color="black", ls=":", lw=1.2, zorder=1, label=f"{known[1]} at n = {n}")
        top = max(top, law)
    ax.set_ylim(0, 1.08 * top)  # the row's scale


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``)."""
    positions_figure(tables["table"], outputs["figures"], settings=settings, **params)
