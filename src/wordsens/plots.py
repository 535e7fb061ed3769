"""Seaborn figures of the paper, from the aggregated result tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from .io import atomic_path  # noqa: E402

__all__ = ["attention_pair", "gen_figure", "layer_changes_figure", "rf_law", "save", "text_table_figure", "ws_figure"]

MAP_TITLES = {"rf": "RF (k = D)", "drf": "deep RF", "raf": "RAF (softmax attention)", "relu_raf": "ReLU-RAF"}


def rf_law(n: np.ndarray) -> np.ndarray:
    """Back-of-envelope RF word sensitivity (1 + sqrt(2/n)) / sqrt(n) (paper.md, section 2)."""
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)


def save(fig: plt.Figure, paths: Sequence[str | Path], dpi: int) -> None:
    """Write ``fig`` to every path (format from the suffix), atomically."""
    for path in paths:
        fmt = Path(path).suffix.lstrip(".")
        atomic_path(path, lambda p, fmt=fmt: fig.savefig(p, format=fmt, dpi=dpi, bbox_inches="tight"))
    plt.close(fig)


def _panel(ax: plt.Axes, frame: pd.DataFrame, map_name: str, *, scaled: bool, palette: str) -> None:
    frame = frame.copy()
    factor = np.sqrt(frame["n"].astype(float)) if scaled else 1.0
    frame["value"] = frame["lower"] * factor
    hue = "L" if map_name == "drf" else "d"
    frame[hue] = frame[hue].astype(int)
    levels = sorted(frame[hue].unique())
    colors = dict(zip(levels, sns.color_palette(palette, len(levels))))
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
    if map_name == "drf" and frame["d"].nunique() == 1:
        title = f"{MAP_TITLES[map_name]} (d = {int(frame['d'].iloc[0])})"
    else:
        title = MAP_TITLES[map_name]
    ax.set_title(title)
    ax.set_xlabel("context length n")
    ax.set_ylabel(r"word sensitivity $\times\sqrt{n}$" if scaled else "word sensitivity (lower bound)")
    ax.legend(handles=handles, fontsize="small", frameon=False)
    ax.set_ylim(bottom=0)


def ws_figure(tables: dict[str, pd.DataFrame], maps: Sequence[str], paths: Sequence[str | Path], *,
              scaled: bool = False, settings: dict[str, Any] | None = None) -> None:
    """One panel per map of ``maps`` present in ``tables``: mean WS vs n with a 1-sd band."""
    settings = settings or {}
    present = [m for m in maps if m in tables and not tables[m].empty]
    if not present:
        raise ValueError(f"no results for any of {list(maps)}")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    fig, axes = plt.subplots(1, len(present), figsize=(4.6 * len(present), 3.6), squeeze=False)
    for ax, map_name in zip(axes[0], present):
        _panel(ax, tables[map_name], map_name, scaled=scaled, palette=settings.get("palette", "colorblind"))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)))


TRAINING_TITLES = {"fine_tune": "fine-tuned", "retrain": "re-trained"}
LOSS_MARKERS = {"surrogate": "o", "direct": "X", "penalised": "o"}


def gen_figure(table: pd.DataFrame, columns: Sequence[Sequence[Any]], paths: Sequence[str | Path], *,
               hue: str, settings: dict[str, Any] | None = None) -> None:
    """Figures 4 and 5: a grid of scatter plots of Err against gamma_min, rows = training,
    columns = (map, n); colour = ``hue`` (N or penalty); marker = loss (circle surrogate, cross direct)."""
    settings = settings or {}
    if table.empty:
        raise ValueError("no generalisation results to plot")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    trainings = [t for t in ("fine_tune", "retrain") if t in set(table["training"])]
    cols = [(m, int(n)) for m, n in columns if ((table["map"] == m) & (table["n"] == int(n))).any()]
    fig, axes = plt.subplots(len(trainings), len(cols), figsize=(3.4 * len(cols), 3.0 * len(trainings)),
                             squeeze=False, sharey="row")
    levels = sorted(table[hue].unique())
    colors = dict(zip(levels, sns.color_palette(settings.get("palette", "colorblind"), len(levels))))
    losses = [loss for loss in ("surrogate", "direct", "penalised") if loss in set(table["loss"])]
    for r, training in enumerate(trainings):
        for c, (map_name, n) in enumerate(cols):
            ax = axes[r][c]
            part = table[(table["training"] == training) & (table["map"] == map_name) & (table["n"] == n)]
            for loss in losses:
                for level in levels:
                    pts = part[(part["loss"] == loss) & (part[hue] == level)]
                    ax.scatter(pts["gamma_min"], pts["err"], color=colors[level], marker=LOSS_MARKERS[loss],
                               s=28, alpha=0.85, linewidths=0.8)
            ax.set_title(f"{MAP_TITLES[map_name].split(' (')[0]}, n = {n}, {TRAINING_TITLES[training]}")
            ax.set_xlabel(r"$\gamma_{\min}$")
            ax.set_ylabel("test error Err" if c == 0 else "")
            ax.set_xlim(left=0)
            ax.set_ylim(bottom=-0.05)
    label = "N" if hue == "N" else "penalty"
    handles = [plt.Line2D([], [], ls="", marker="o", color=colors[v], label=f"{label} = {v:g}") for v in levels]
    if len(losses) > 1:
        handles += [plt.Line2D([], [], ls="", marker=LOSS_MARKERS[loss], color="gray", label=f"{loss} loss")
                    for loss in losses]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, 1.0 + 0.02 / len(trainings)))
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    save(fig, paths, int(settings.get("dpi", 150)))


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
    image = None
    for i, (ax, amap, title) in enumerate(zip(axes[0], maps_, titles)):
        image = _heatmap(ax, amap.matrix, amap.tokens, vmax, title)
        if i:
            ax.set_ylabel("")
    fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label=colorbar_label)
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
