"""The figures of the encoder probes: attention heat maps of two sentences (Figure 1, left), the
change of every layer's hidden states (Figure 3, panels 3-4) and text tables (Figure 1, right: a
causal LM's answers). They draw from the probes' tables (``wordsens.studies.probes.run``), so a
plot setting re-draws them without running the encoder again.
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

from ...plots.common import save
from . import AttentionMap


def attention_maps(table: pd.DataFrame, column: str) -> dict[str, AttentionMap]:
    """The maps of an attention table (``wordsens.studies.probes.run.attention_table``: one row per
    label, query and key), by label in the table's order. Read its CSV with
    ``keep_default_na=False``, so that a token such as "null" stays text."""
    out = {}
    for label in pd.unique(table[column]):
        rows = table[table[column] == label]
        size = int(rows["query"].max()) + 1
        if len(rows) != size * size:
            raise ValueError(f"the attention map {label!r} has {len(rows)} rows, not {size} x {size}")
        matrix = np.zeros((size, size))
        matrix[rows["query"].to_numpy(int), rows["key"].to_numpy(int)] = rows["attention"].to_numpy(float)
        tokens = rows.drop_duplicates("query").sort_values("query")["query_token"].astype(str).tolist()
        out[str(label)] = AttentionMap(matrix, tokens)
    return out


def _heatmap(ax: plt.Axes, matrix: np.ndarray, tokens: Sequence[str], vmax: float, title: str):
    image = ax.imshow(matrix, vmin=0, vmax=vmax, cmap="viridis")
    ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize="small")
    ax.set_yticks(range(len(tokens)), tokens, fontsize="small")
    ax.set_xlabel("key token")
    ax.set_ylabel("query token")
    ax.set_title(title)
    ax.grid(False)
    return image


def attention_pair(
    maps_: Sequence[Any],
    titles: Sequence[str],
    paths: Sequence[str | Path],
    *,
    settings: dict[str, Any] | None = None,
    colorbar_label: str = "attention",
) -> None:
    """Two attention heat maps side by side with one shared colour scale (Figure 1 left, Figure 3 panel 4)."""
    settings = settings or {}
    sns.set_theme(context=settings.get("context", "paper"), style="white")
    vmax = max(float(np.max(m.matrix)) for m in maps_)
    size = max(3.2, 0.32 * max(len(m.tokens) for m in maps_) + 1.5)
    fig, axes = plt.subplots(
        1, len(maps_), figsize=(size * len(maps_) + 1.2, size), squeeze=False, layout="constrained"
    )
    images = [
        _heatmap(ax, amap.matrix, amap.tokens, vmax, title)
        for ax, amap, title in zip(axes[0], maps_, titles, strict=True)
    ]
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    fig.colorbar(images[-1], ax=list(axes[0]), shrink=0.8, label=colorbar_label)
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))


def layer_changes_figure(
    table: pd.DataFrame, paths: Sequence[str | Path], *, title: str, settings: dict[str, Any] | None = None
) -> None:
    """Figure 3 panel 3: relative change of every layer's hidden states, attracting Delta against
    Gaussian Deltas of the same norm (mean and 1-sd band)."""
    settings = settings or {}
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    gauss = table[table["kind"] == "gaussian"].groupby("layer")["change"].agg(["mean", "std"]).reset_index()
    attract = table[table["kind"] == "attract"].sort_values("layer")
    colors = sns.color_palette(settings.get("palette", "colorblind"), 2)
    ax.plot(attract["layer"], attract["change"], marker="o", color=colors[0], label="attention-attracting Delta")
    ax.plot(gauss["layer"], gauss["mean"], marker="s", color=colors[1], label="Gaussian Delta (same norm)")
    ax.fill_between(
        gauss["layer"],
        gauss["mean"] - gauss["std"].fillna(0),
        gauss["mean"] + gauss["std"].fillna(0),
        color=colors[1],
        alpha=0.25,
    )
    ax.set_xticks(sorted(table["layer"].unique()))
    ax.set_xlabel("layer (0 = encoder input)")
    ax.set_ylabel(r"$\|H_l(X') - H_l(X)\| \,/\, \|H_l(X)\|$")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))


def text_table_figure(
    frame: pd.DataFrame,
    paths: Sequence[str | Path],
    *,
    title: str,
    width: int = 60,
    settings: dict[str, Any] | None = None,
) -> None:
    """A table of texts rendered as a figure (Figure 1 right: prompts and answers)."""
    import textwrap

    settings = settings or {}
    cells = [[textwrap.fill(str(v), width) for v in row] for row in frame.itertuples(index=False)]
    lines = max(1, max(cell.count("\n") + 1 for row in cells for cell in row))
    fig, ax = plt.subplots(figsize=(4.5 * len(frame.columns), 0.9 + 0.22 * lines * len(frame)))
    ax.axis("off")
    table = ax.table(cellText=cells, colLabels=list(frame.columns), loc="center", cellLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    for (row, _), cell in table.get_celld().items():
        cell.set_height((cells[row - 1][0].count("\n") + 1 if row else 1) * 0.9 / (lines * len(frame) + 1))
    ax.set_title(title)
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
