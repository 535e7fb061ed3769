"""The swaps study's figure (``swaps_figure``: per map against n, the best word, the vocabulary's mean and the
continuous values) and its readable table of the top substitutions (``swaps_text``), with the Markdown helpers
the gen_words study shares.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter, LogLocator

from ...io import atomic_path
from ...plots.common import map_label, mark_not_run, not_run_note, save
from . import in_registry_order

MAX_COLUMNS = 3  # panels per row
# what a panel draws: column -> (legend label, marker, line style)
SERIES = {
    "continuous_sqrt_d": ("continuous WS, radius sqrt(d)", "s", ":"),
    "continuous": ("continuous WS, the row's best-word radius r* (each row)", "o", "none"),
    "s_words": ("best real word (S_words)", "D", "-"),
    "mean": ("vocabulary mean", "v", "--"),
}
# series drawn one point per row: their radius changes from row to row, so a mean would mix radii
PER_ROW = frozenset({"continuous"})


def swaps_figure(
    table: pd.DataFrame,
    paths: Sequence[str | Path],
    *,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """One panel per map of ``table`` (rows of ``wordsens.studies.swaps.run``): each series of ``SERIES``
    against n (log x where n spans a factor of 4 or more) on a log y axis, the mean over (review,
    position) with a min-max bar, but the ``PER_ROW`` series (the continuous WS at each row's own radius
    r*) one hollow point per row; "screened" in the title of maps whose vocabulary was screened; the
    points left out named under their panel."""
    settings = settings or {}
    maps_ = in_registry_order(set(table["map"]))
    if not maps_:
        raise ValueError("the swaps table has no rows")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    cols = min(len(maps_), MAX_COLUMNS)
    rows = math.ceil(len(maps_) / cols)
    fig, grid = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(maps_) :]:
        ax.set_visible(False)
    colours = dict(zip(SERIES, sns.color_palette(settings.get("palette", "colorblind"), len(SERIES)), strict=True))
    for ax, name in zip(axes, maps_, strict=False):
        part = table[table["map"] == name]
        for column, (label, marker, style) in SERIES.items():
            if column not in part or not (part[column] > 0).any():
                continue
            values = part[part[column] > 0]  # a log axis: a row without a move (r* = 0) has nothing to show
            if column in PER_ROW:
                ax.plot(
                    values["n"], values[column], ls=style, marker=marker, mfc="none", color=colours[column], label=label
                )
                continue
            stats = values.groupby("n")[column].agg(["mean", "min", "max"]).reset_index()
            ax.errorbar(
                stats["n"],
                stats["mean"],
                yerr=[stats["mean"] - stats["min"], stats["max"] - stats["mean"]],
                color=colours[column],
                marker=marker,
                ls=style,
                capsize=3,
                label=label,
            )
        ns = sorted(set(part["n"].astype(int)))
        if ns and max(ns) >= 4 * min(ns):
            ax.set_xscale("log")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.minorticks_off()
        screened = not bool(part["exhaustive"].astype(bool).all())
        ds = ", ".join(str(d) for d in sorted(set(part["d"].astype(int))))
        ax.set_title(f"{map_label(name)}, d = {ds}" + (" (screened)" if screened else ""), fontsize="medium")
        ax.set_xlabel("context length n")
        mine = [p for p in left_out if p.get("map") == name]
        if mine:
            mark_not_run(ax, not_run_note(mine, ["d", "n"]).replace("\n", "; "))
    for row in range(rows):
        grid[row][0].set_ylabel("relative change of the features (log)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, 0.07 / rows, 1, 1))
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def number(value: Any, spec: str = ".4g") -> str:
    """A cell of a Markdown table: ``value`` in ``spec``, "-" where it is None or not finite."""
    return "-" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{float(value):{spec}}"


def markdown_start(title: str, stamp: str | None, intro: str) -> list[str]:
    """The first lines of a Markdown text: its title, the run's stamp where there is one, the introduction."""
    return [f"# {title}", "", *([f"*{stamp}*", ""] if stamp else []), intro, ""]


def markdown_table(heading: str, header: Sequence[str]) -> list[str]:
    """The lines that open a section's Markdown table: its heading and the table's header."""
    return [f"## {heading}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def write_markdown(path: str | Path, lines: Sequence[str]) -> str:
    """``lines`` written atomically to ``path`` as one text; returns it."""
    text = "\n".join(lines)

    def write(target: Path) -> None:
        target.write_text(text, encoding="utf-8")

    atomic_path(path, write)
    return text


def swaps_text(table: pd.DataFrame, path: str | Path, *, top: int = 5, stamp: str | None = None) -> str:
    """The Markdown table of the ``top`` substitutions with the largest S_words per map and n (the review's
    words around the position, ``[original -> best]``; the best words in order; the best word's radius
    r*; S_words, the continuous word sensitivity at r* and their ratio; the continuous word sensitivity
    at sqrt(d) where the study computed it (``swaps.sqrt_d``); the vocabulary's mean), written
    atomically to ``path``; returns it."""
    at_sqrt_d = "continuous_sqrt_d" in table and bool(table["continuous_sqrt_d"].notna().any())
    intro = (
        "Per map and n, the substitutions with the largest relative change S_words: the review's words around the "
        "position with the substitution marked [original -> best word], the next best words, r* (the radius the "
        "best word moves its row, ||x_i(w*) - x_i||, up to 2 sqrt(d)), S_words, the continuous word sensitivity on "
        "the same weights at r*, best / continuous (above 1: the continuous search missed)"
        + (", the continuous word sensitivity at the paper's radius sqrt(d)" if at_sqrt_d else "")
        + " and the mean over the vocabulary."
    )
    lines = markdown_start("The top substitutions of the swaps study", stamp, intro)
    header = ["review", "position", "the review around it", "next best words", "r*", "S_words", "continuous at r*"]
    header += ["ratio", *(["at sqrt(d)"] if at_sqrt_d else []), "mean"]
    for name in in_registry_order(set(table["map"])):
        for n in sorted(set(table.loc[table["map"] == name, "n"].astype(int))):
            part = table[(table["map"] == name) & (table["n"] == n)].sort_values("s_words", ascending=False)
            kind = "exhaustive" if bool(part["exhaustive"].astype(bool).all()) else "screened"
            d, vocab = int(part["d"].iloc[0]), int(part["vocab"].iloc[0])
            heading = f"{map_label(name)}, d = {d}, n = {n} ({kind}, {vocab} words; sqrt(d) = {math.sqrt(d):.4g})"
            lines += markdown_table(heading, header)
            for _, row in part.head(top).iterrows():
                words = json.loads(row["top_words"])[1:6]
                text = str(row["context"]).replace("|", "\\|")
                numbers = [row["radius"], row["s_words"], row["continuous"], row["ratio"]]
                numbers += [row["continuous_sqrt_d"]] if at_sqrt_d else []
                cells = [str(int(row["review_id"])), str(int(row["position"])), text, ", ".join(words)]
                cells += [number(v) for v in [*numbers, row["mean"]]]
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    return write_markdown(path, lines)


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``): the figure and the top substitutions as text."""
    swaps_figure(tables["table"], outputs["figures"], left_out=params["left_out"], settings=settings)
    swaps_text(tables["table"], outputs["text"][0], stamp=settings.get("stamp"))
