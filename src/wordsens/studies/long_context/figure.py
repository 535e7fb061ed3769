"""The long-context study's figure: word sensitivity up to long contexts, log-log, with fitted slopes (the
claims', ``wordsens.claims.slope.loglog_slope``) beside the RF law's over the same n (``long_context_figure``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...claims.slope import law_slope, loglog_slope
from ...plots.common import NOTE_STYLE, colours_of, finish, map_law, mark_not_run, not_run_note, start

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
    """Log-log WS against n, one curve per map (colour) and data source (``tables``: data -> rows; solid
    synthetic, dashed IMDb) with 1-sd error bars, each labelled with its fitted slope and the RF law's over the
    same n (``law_slope``: -0.54 on n = 64..1024, not -1/2); the RF law where RF ran, and a line where the IMDb
    curves stop (``imdb_limit``: ``long_context.max_length``)."""
    settings = settings or {}
    present = {data: t for data, t in tables.items() if not t.empty}
    if not present:
        raise ValueError("no long-context results to plot")
    maps_ = [m for m in labels if any(m in set(t["map"]) for t in present.values())]
    fig, ax = start(settings, figsize=(7.0, 4.6))
    colours = colours_of(maps_, settings)
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
            **NOTE_STYLE,
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
    return finish(fig, paths, settings)


def _slope_curve(ax: plt.Axes, part: pd.DataFrame, name: str, *, colour: Any, ls: str) -> None:
    """One curve: mean and 1-sd error bars of ``part``'s trials against n, labelled with the fitted log-log
    slope, its 95% t-interval and the RF law's slope over the same n."""
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


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``)."""
    long_context_figure(tables, outputs["figures"], settings=settings, **params)
