"""The figures of the studies beyond the paper: every registered map against n (``variants_figure``),
long contexts with fitted log-log slopes beside the RF law's over the same n (``long_context_figure``;
the slope is the claims' one, ``wordsens.claims.slope.loglog_slope``) and the word sensitivity at
every position, with the RF law (``positions_figure``). The trained study's figure:
``wordsens.plots.trained``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..claims.slope import law_slope, loglog_slope
from ..maps import registry
from .common import map_law, mark_not_run, not_run_note, save

__all__ = [
    "DATA_STYLES",
    "TOKEN_STYLES",
    "long_context_figure",
    "positions_figure",
    "variants_figure",
]


def variants_figure(
    table: pd.DataFrame,
    paths: Sequence[str | Path],
    *,
    labels: Mapping[str, str],
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """Every map of ``labels`` (map -> plot label, in legend order) on one panel: mean WS against n
    (log x) with a 1-sd band; points left out are named under the panel."""
    settings = settings or {}
    maps_ = [m for m in labels if m in set(table["map"])]
    if not maps_:
        raise ValueError(f"no results for any of {list(labels)}")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = dict(zip(maps_, sns.color_palette(settings.get("palette", "colorblind"), len(maps_)), strict=True))
    frame = table[table["map"].isin(maps_)].assign(label=lambda f: f["map"].map(dict(labels)))
    sns.lineplot(
        data=frame,
        x="n",
        y="lower",
        hue="label",
        hue_order=[labels[m] for m in maps_],
        palette={labels[m]: colours[m] for m in maps_},
        errorbar="sd",
        marker="o",
        ax=ax,
    )
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ds = sorted(set(table["d"].astype(int)))
    ax.set_title(f"every registered map, d = {', '.join(map(str, ds))} ({', '.join(sorted(set(table['data'])))})")
    ax.set_xlabel("context length n")
    ax.set_ylabel("word sensitivity (lower bound)")
    ax.legend(title=None, fontsize="small", frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if left_out:
        mark_not_run(ax, not_run_note(left_out, ["map", "d", "n", *registry.swept_options()]).replace("\n", "; "))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


DATA_STYLES = {"synthetic": "-", "imdb": "--"}


def long_context_figure(
    tables: Mapping[str, pd.DataFrame],
    paths: Sequence[str | Path],
    *,
    labels: Mapping[str, str],
    imdb_limit: int | None = None,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """Log-log WS against n, one curve per map (colour) and data source (``tables``: data -> rows;
    solid synthetic, dashed IMDb): mean and 1-sd error bars over the trials; in the legend the
    least-squares slope of log WS on log n over every trial with its 95% t-interval, beside the RF
    law's slope over the same n (``law_slope``: -0.54 on n = 64..1024, not -1/2); the RF law
    (1 + sqrt(2/n)) / sqrt(n) where RF ran, and a line where the IMDb curves stop (``imdb_limit``:
    the length the long reviews were embedded at, ``long_context.max_length``, at most the
    encoder's position limit)."""
    settings = settings or {}
    present = {data: t for data, t in tables.items() if not t.empty}
    if not present:
        raise ValueError("no long-context results to plot")
    maps_ = [m for m in labels if any(m in set(t["map"]) for t in present.values())]
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    colours = dict(zip(maps_, sns.color_palette(settings.get("palette", "colorblind"), len(maps_)), strict=True))
    for map_name in maps_:
        for data, frame in present.items():
            part = frame[frame["map"] == map_name]
            if not part.empty:
                _slope_curve(
                    ax, part, f"{labels[map_name]}, {data}", colour=colours[map_name], ls=DATA_STYLES.get(data, ":")
                )
    _law_curves(ax, present)
    if imdb_limit is not None and "imdb" in present:
        ax.axvline(imdb_limit, color="dimgray", ls="-.", lw=1)
        ax.annotate(
            f"IMDb stops: reviews embedded\nat n = {imdb_limit} tokens",
            (imdb_limit, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(-4, -4),
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize="x-small",
            color="dimgray",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ds = sorted({int(d) for t in present.values() for d in t["d"]})
    ax.set_title(f"word sensitivity at long contexts, d = {', '.join(map(str, ds))}")
    ax.set_xlabel("context length n")
    ax.set_ylabel("word sensitivity (lower bound)")
    ax.legend(
        fontsize="x-small",
        frameon=False,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        title="fitted log-log slope [95% CI] (the RF law's slope over the same n)",
        title_fontsize="x-small",
    )
    if left_out:
        mark_not_run(ax, not_run_note(left_out, ["study", "map", "d", "n"]).replace("\n", "; "))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def _slope_curve(ax: plt.Axes, part: pd.DataFrame, name: str, *, colour: Any, ls: str) -> None:
    """One curve of the long-context figure: mean and 1-sd error bars of ``part``'s trials against n,
    labelled with the fitted log-log slope, its 95% t-interval and the RF law's slope over the same n."""
    stats = part.groupby("n")["lower"].agg(["mean", "std"]).reset_index()
    slope, lo, hi = loglog_slope(part["n"], part["lower"])
    interval = f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else ""
    law = law_slope(part["n"])
    ax.errorbar(
        stats["n"],
        stats["mean"],
        yerr=stats["std"].fillna(0),
        color=colour,
        ls=ls,
        marker="o",
        ms=4,
        capsize=2,
        label=f"{name}: slope {slope:.2f}{interval} (RF law {law:.2f})",
    )


def _law_curves(ax: plt.Axes, present: Mapping[str, pd.DataFrame]) -> None:
    """The law of every map with one (``map_law``: RF's) that ran, dotted, over the n it ran at."""
    for name in sorted({str(m) for t in present.values() for m in t["map"].unique()}):
        known = map_law(name)
        if known is None:
            continue
        law_of, label = known
        ns = pd.concat([t.loc[t["map"] == name, "n"] for t in present.values()])
        grid = np.geomspace(ns.min(), ns.max(), 100)
        ax.plot(grid, law_of(grid), color="black", ls=":", lw=1.5, label=label)


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
    """Per-position profiles: the WS of every position i of each review (columns) for each map of
    ``labels`` (rows), from rows with ``position``, ``lower`` (the estimate at that position) and
    ``token`` (``[CLS]``, ``word``, ``[SEP]``, ``[PAD]``); [PAD] rows shaded. RF panels draw the RF
    law at the profile's n (dotted: the law is the same at every position, all rows having norm
    sqrt(d)). Maps ``left_out`` (``limits.unfit: skip``) are named under the panels."""
    settings = settings or {}
    maps_ = [m for m in labels if m in set(table["map"])]
    if not maps_:
        raise ValueError(f"no per-position results for any of {list(labels)}")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    trials = sorted(set(table["trial"]))
    fig, axes = plt.subplots(
        len(maps_), len(trials), figsize=(4.2 * len(trials), 2.8 * len(maps_)), squeeze=False, sharex=True, sharey="row"
    )
    colours = dict(zip(maps_, sns.color_palette(settings.get("palette", "colorblind"), len(maps_)), strict=True))
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
        fig.text(
            0.01,
            0.01,
            not_run_note(left_out, ["map", "d", "n"]).replace("\n", "; "),
            fontsize="x-small",
            va="bottom",
            ha="left",
            color="dimgray",
        )
    fig.tight_layout(rect=(0, 0.05 if left_out else 0.0, 1, 0.95))
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def _profile_panel(ax: plt.Axes, part: pd.DataFrame, map_name: str, label: str, *, colour: Any, top: float) -> None:
    """One review's profile (``part``: its rows by position): the WS at every position, a marker per
    token kind (``TOKEN_STYLES``), the [PAD] rows shaded, the map's law at the profile's n where it has
    one; the y axis up to ``top`` (the largest WS of the map's row of panels) or the law."""
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
