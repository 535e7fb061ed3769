"""Seaborn figures of the paper, from the aggregated result tables."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .io import atomic_path
from .theory import rf_law

__all__ = [
    "attention_pair",
    "gen_figure",
    "layer_changes_figure",
    "not_run_note",
    "rf_law",
    "save",
    "text_table_figure",
    "ws_figure",
]

MAP_TITLES = {"rf": "RF (k = D)", "drf": "deep RF", "raf": "RAF (softmax attention)", "relu_raf": "ReLU-RAF"}


def save(fig: plt.Figure, paths: Sequence[str | Path], dpi: int) -> None:
    """Write ``fig`` to every path (format from the suffix), atomically."""
    for path in paths:
        atomic_path(path, partial(_savefig, fig, fmt=Path(path).suffix.lstrip("."), dpi=dpi))
    plt.close(fig)


def _savefig(fig: plt.Figure, target: Path, *, fmt: str, dpi: int) -> None:
    fig.savefig(target, format=fmt, dpi=dpi, bbox_inches="tight")


def not_run_note(points: Sequence[dict[str, Any]], keys: Sequence[str], *, most: int = 6) -> str:
    """'not run: L=8 n=80 (needs 99.4 GB)' lines for grid points left out (``wordsens.plan.Grid.left_out``)."""
    lines = []
    for point in points:
        values = " ".join(f"{key}={point[key]}" for key in keys if point.get(key) is not None)
        lines.append(f"{values} (needs {point['needs_gb']:g} GB)")
    if len(lines) > most:
        lines = [*lines[: most - 1], f"and {len(lines) - most + 1} more"]
    return "not run: " + "\n".join(lines) if lines else ""


def _mark_not_run(ax: plt.Axes, note: str) -> None:
    """The note under the panel's axis label, clear of the curves and the legend."""
    ax.text(0.0, -0.2, note, transform=ax.transAxes, fontsize="x-small", va="top", ha="left", color="dimgray")


def _panel(ax: plt.Axes, frame: pd.DataFrame, map_name: str, *, scaled: bool, palette: str) -> None:
    frame = frame.copy()
    factor = np.sqrt(frame["n"].astype(float)) if scaled else 1.0
    frame["value"] = frame["lower"] * factor
    hue = "L" if map_name == "drf" else "d"
    frame[hue] = frame[hue].astype(int)
    levels = sorted(frame[hue].unique())
    colors = dict(zip(levels, sns.color_palette(palette, len(levels)), strict=True))
    sns.lineplot(data=frame, x="n", y="value", hue=hue, hue_order=levels, palette=colors, errorbar="sd",
                 marker="o", ax=ax, legend=False)
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
        handles.append(plt.Line2D([], [], color="black", ls=":", label=r"$(1+\sqrt{2/n})/\sqrt{n}$"
                                  + (r"$\;\times\sqrt{n}$" if scaled else "")))
    ax.legend(handles=handles, fontsize="small", frameon=False)


def ws_figure(tables: dict[str, pd.DataFrame], maps: Sequence[str], paths: Sequence[str | Path], *,
              scaled: bool = False, left_out: Sequence[dict[str, Any]] = (),
              settings: dict[str, Any] | None = None) -> None:
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
        title = MAP_TITLES[map_name] + (f" (d = {ds.pop()})" if map_name == "drf" and len(ds) == 1 else "")
        ax.set_title(title)
        ax.set_xlabel("context length n")
        ax.set_ylabel(r"word sensitivity $\times\sqrt{n}$" if scaled else "word sensitivity (lower bound)")
        ax.set_ylim(bottom=0)
        if missing[map_name]:
            keys = ["d", "n", "L"] if map_name == "drf" else ["d", "n"]
            _mark_not_run(ax, not_run_note(missing[map_name], keys))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)))


TRAINING_TITLES = {"fine_tune": "fine-tuned", "retrain": "re-trained"}
LOSS_MARKERS = {"surrogate": "o", "direct": "X", "penalised": "o"}


def _gen_panel(map_name: str, n: int) -> str:
    return f"{MAP_TITLES[map_name].split(' (')[0]}, n = {n}"


def gen_figure(table: pd.DataFrame, columns: Sequence[Sequence[Any]], paths: Sequence[str | Path], *,
               hue: str, left_out: Sequence[dict[str, Any]] = (), settings: dict[str, Any] | None = None) -> None:
    """Figures 4 and 5 as one ``seaborn.relplot``: Err against gamma_min, rows = training,
    columns = (map, n); colour = ``hue`` (N or penalty); marker = loss (circle surrogate, cross
    direct). Points left out are named under the panels."""
    settings = settings or {}
    if table.empty:
        raise ValueError("no generalisation results to plot")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    cols = [_gen_panel(m, int(n)) for m, n in columns if ((table["map"] == m) & (table["n"] == int(n))).any()]
    trainings = [TRAINING_TITLES[t] for t in TRAINING_TITLES if t in set(table["training"])]
    losses = [loss for loss in LOSS_MARKERS if loss in set(table["loss"])]
    levels = sorted(table[hue].unique())
    frame = table.assign(panel=[_gen_panel(m, int(n)) for m, n in zip(table["map"], table["n"], strict=True)],
                         training=table["training"].map(TRAINING_TITLES))
    grid = sns.relplot(
        data=frame, x="gamma_min", y="err", row="training", col="panel", hue=hue, style="loss",
        kind="scatter", row_order=trainings, col_order=cols, hue_order=levels,
        palette=dict(zip(levels, sns.color_palette(settings.get("palette", "colorblind"), len(levels)), strict=True)),
        style_order=losses, markers={loss: LOSS_MARKERS[loss] for loss in losses}, s=28, alpha=0.85,
        linewidth=0.8, height=3.0, aspect=3.4 / 3.0, facet_kws={"sharex": False, "sharey": "row"},
        legend="full" if len(losses) > 1 else "brief",
    )
    grid.set_titles("{col_name}, {row_name}")
    grid.set_axis_labels(r"$\gamma_{\min}$", "test error Err")
    for ax in grid.axes.flat:
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=-0.05)
    if left_out:
        note = not_run_note(left_out, ["data", "map", "n", "N", "d"], most=8).replace("\n", "; ")
        grid.figure.text(0.01, -0.02, note, fontsize="small", color="dimgray", va="top", ha="left", wrap=True)
    save(grid.figure, paths, int(settings.get("dpi", 150)))


def _heatmap(ax: plt.Axes, matrix: np.ndarray, tokens: Sequence[str], vmax: float, title: str):
    image = ax.imshow(matrix, vmin=0, vmax=vmax, cmap="viridis")
    ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize="small")
    ax.set_yticks(range(len(tokens)), tokens, fontsize="small")
    ax.set_xlabel("key token")
    ax.set_ylabel("query token")
    ax.set_title(title)
    ax.grid(False)
    return image


def attention_pair(maps_: Sequence[Any], titles: Sequence[str], paths: Sequence[str | Path], *,
                   settings: dict[str, Any] | None = None, colorbar_label: str = "attention") -> None:
    """Two attention heat maps side by side with one shared colour scale (Figure 1 left, Figure 3 panel 4)."""
    settings = settings or {}
    sns.set_theme(context=settings.get("context", "paper"), style="white")
    vmax = max(float(np.max(m.matrix)) for m in maps_)
    size = max(3.2, 0.32 * max(len(m.tokens) for m in maps_) + 1.5)
    fig, axes = plt.subplots(1, len(maps_), figsize=(size * len(maps_) + 1.2, size), squeeze=False,
                             layout="constrained")
    images = [_heatmap(ax, amap.matrix, amap.tokens, vmax, title)
              for ax, amap, title in zip(axes[0], maps_, titles, strict=True)]
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    fig.colorbar(images[-1], ax=list(axes[0]), shrink=0.8, label=colorbar_label)
    save(fig, paths, int(settings.get("dpi", 150)))


def layer_changes_figure(table: pd.DataFrame, paths: Sequence[str | Path], *, title: str,
                         settings: dict[str, Any] | None = None) -> None:
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
    ax.fill_between(gauss["layer"], gauss["mean"] - gauss["std"].fillna(0), gauss["mean"] + gauss["std"].fillna(0),
                    color=colors[1], alpha=0.25)
    ax.set_xticks(sorted(table["layer"].unique()))
    ax.set_xlabel("layer (0 = encoder input)")
    ax.set_ylabel(r"$\|H_l(X') - H_l(X)\| \,/\, \|H_l(X)\|$")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize="small")
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)))


def text_table_figure(frame: pd.DataFrame, paths: Sequence[str | Path], *, title: str, width: int = 60,
                      settings: dict[str, Any] | None = None) -> None:
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
    save(fig, paths, int(settings.get("dpi", 150)))
