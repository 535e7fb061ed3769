"""The trained study's figure (``trained_figure``): a pre-trained encoder's layers and heads against their
random models, with the layers the limits left out marked not run.
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

from ..maps import registry
from .common import NOTE_STYLE, mark_not_run, not_run_note, save

__all__ = ["trained_figure"]


# each trained map beside its random model (same d and heads), one panel each, in this order
_TRAINED_PAIRS = tuple(registry.TRAINED_RANDOM_MODELS.items())


def trained_figure(
    table: pd.DataFrame | None,
    paths: Sequence[str | Path],
    *,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """A pre-trained encoder's layers against their random models (rows of
    ``wordsens.experiments.trained.trained_rows``): WS against n per layer, trained solid, random dashed.

    One panel per pair (``trained_attention`` beside ``mh_raf``, ``trained_layer`` beside ``block``),
    x = n (log scale when max n / min n >= 4), y = the mean WS over the reviews with a band from the
    smallest to the largest review (min-max, not a standard deviation: a few reviews only), one colour
    per layer (``_layer_colours``: a sequential ramp, legend "layer l"), trained solid with filled
    markers, random dashed with open markers; y on a log scale when a panel spans a factor of 10 or
    more. A pair without rows keeps its panel, marked not run. Last panel: the mean WS of each (layer,
    head) of the trained attention (rows with ``head`` > 0), a heat map at the n of those rows (the
    largest, should there be several); marked not run without such rows. Layers ``left_out`` by the
    limits (``wordsens.pipeline.Grid.left_out``: points with ``layer``) are named under every panel,
    in the legend ("layer l: not run") and as blank rows of the heat map.

    Only the row-normalised samples (``normalise`` true, rows of norm sqrt(d): the paper's scale) are
    drawn; raw-scale rows (``normalise`` false) are left to the table (tables/trained.csv) and the
    title says so. ``settings``: ``context`` (seaborn), ``palette`` (the layers' colours), ``dpi`` and
    ``stamp`` (``run_stamp``), as the other figures. Raises ValueError without whole-map (``head`` 0)
    row-normalised rows, unless every layer was left out (``table`` None or empty: every panel
    marked not run)."""
    settings = settings or {}
    table = pd.DataFrame(columns=["normalise", "head", "layer", "n", "map", "ws"]) if table is None else table
    normalised = table["normalise"].astype(bool)
    frame = table[normalised]
    whole = frame[frame["head"] == 0]
    heads = frame[frame["head"] > 0]
    if whole.empty and not (left_out and table.empty):
        raise ValueError("no rows of whole maps (head 0) on row-normalised samples to draw")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    layers = sorted({int(layer) for layer in whole["layer"]})
    colours = _layer_colours(settings.get("palette", "colorblind"), layers)
    log_x = not whole.empty and float(whole["n"].max()) / float(whole["n"].min()) >= 4
    not_run = not_run_note(left_out, ["layer"]).replace("\n", "; ")
    missing_layers = sorted({int(point["layer"]) for point in left_out})
    panels = len(_TRAINED_PAIRS) + 1
    fig, axes = plt.subplots(
        1, panels, figsize=(4.3 * len(_TRAINED_PAIRS) + 5.0, 4.4), width_ratios=(*[1.0] * len(_TRAINED_PAIRS), 1.2)
    )
    for ax, pair in zip(axes[:-1], _TRAINED_PAIRS, strict=True):
        _trained_pair_panel(ax, whole, pair, colours, log_x=log_x, not_run=not_run)
    _trained_heads_panel(axes[-1], heads, missing_layers, not_run=not_run)
    handles = [plt.Line2D([], [], color=colours[layer], marker="o", ms=4, label=f"layer {layer}") for layer in layers]
    handles += [
        plt.Line2D([], [], color="darkgray", marker="x", ls="", ms=5, label=f"layer {layer}: not run")
        for layer in missing_layers
    ]
    handles += [
        plt.Line2D([], [], color="black", ls="-", marker="o", ms=4, label="trained"),
        plt.Line2D([], [], color="black", ls="--", marker="o", ms=4, mfc="white", label="random (same d, heads)"),
    ]
    ncol = min(len(handles), 8)
    rows = -(-len(handles) // ncol)
    top = 1.0 - (0.12 + 0.25 * rows) / fig.get_figheight()  # room for the legend above the panels
    fig.tight_layout(rect=(0.0, 0.0, 1.0, top))
    fig.legend(
        handles=handles, loc="upper center", ncol=ncol, frameon=False, fontsize="small", bbox_to_anchor=(0.5, 1.0)
    )
    fig.suptitle(_trained_title(whole, raw=int((~normalised).sum())), y=1.0, va="bottom", fontsize="medium")
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def _layer_colours(palette: Any, layers: Sequence[int]) -> dict[int, Any]:
    """One colour per layer: samples of ``palette`` where it names a continuous colormap ("viridis",
    "rocket", "crest", ...), else shades of its first colour from light (first layer) to dark (last),
    so that the categorical palettes of the other figures ("colorblind") also give a sequential one."""
    cmap = matplotlib.colormaps.get(palette) if isinstance(palette, str) else None
    if cmap is not None and cmap.N >= 64:
        return dict(zip(layers, sns.color_palette(palette, len(layers)), strict=True))
    base = np.asarray(sns.color_palette(palette, 1)[0], dtype=float)
    if len(layers) == 1:
        return {layers[0]: tuple(base)}
    ramp = sns.blend_palette([base + (1.0 - base) * 0.6, base, base * 0.45], len(layers))
    return dict(zip(layers, ramp, strict=True))


def _trained_pair_panel(
    ax: plt.Axes,
    whole: pd.DataFrame,
    pair: tuple[str, str],
    colours: Mapping[int, Any],
    *,
    log_x: bool,
    not_run: str = "",
) -> None:
    """One pair's panel: per layer, the trained map's mean WS over the reviews against n (solid) and its
    random model's (dashed), each with its min-max band; ``whole``: the row-normalised head-0 rows;
    ``not_run``: the note naming the layers left out."""
    trained, random = pair
    ax.set_title(f"{registry.get(trained).label} (solid)\nvs {registry.get(random).label} (dashed)", fontsize="small")
    part = whole[whole["map"].isin(pair)]
    if part.empty:
        ax.set_axis_off()
        mark_not_run(ax, "\n".join(filter(None, [f"not run: no rows of {trained} or {random}", not_run])))
        return
    stats = part.groupby(["map", "layer", "n"])["ws"].agg(["mean", "min", "max"]).reset_index()
    missing = [name for name in pair if name not in set(stats["map"])]
    for name, style, face, alpha in ((trained, "-", None, 0.16), (random, "--", "white", 0.08)):
        for layer, at in stats[stats["map"] == name].groupby("layer"):
            at = at.sort_values("n")
            colour = colours[int(layer)]
            ax.plot(at["n"], at["mean"], ls=style, marker="o", ms=4, lw=1.4, color=colour, mfc=face or colour)
            ax.fill_between(at["n"], at["min"], at["max"], color=colour, alpha=alpha, lw=0)
    ns = sorted({int(n) for n in part["n"]})
    if log_x:
        ax.set_xscale("log", base=2)
    if len(ns) <= 8:
        ax.set_xticks(ns)
    ax.xaxis.set_major_formatter(plt.ScalarFormatter())
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    low, high = float(stats["min"].min()), float(stats["max"].max())
    if low > 0 and high / low >= 10:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("context length n (tokens)")
    ax.set_ylabel("word sensitivity (mean over reviews)")
    mark_not_run(ax, "\n".join(filter(None, [f"not run: {', '.join(missing)}" if missing else "", not_run])))


def _trained_heads_panel(ax: plt.Axes, heads: pd.DataFrame, missing: Sequence[int], *, not_run: str = "") -> None:
    """The heat map of the mean WS of each (layer, head) of the trained attention at one n (the largest
    of the per-head rows), the layers left out (``missing``) as blank rows marked in their label, or a
    panel marked not run without per-head rows."""
    title = "trained attention, one head at a time"
    if heads.empty:
        ax.set_axis_off()
        ax.set_title(title, fontsize="small")
        mark_not_run(ax, "\n".join(filter(None, ["not run: no per-head rows (head > 0)", not_run])))
        return
    n = int(heads["n"].max())
    grid = heads[heads["n"] == n].pivot_table(index="layer", columns="head", values="ws", aggfunc="mean")
    grid = grid.reindex(sorted({*grid.index.astype(int), *missing}))
    grid.index = [f"{layer} (not run)" if layer in missing else str(layer) for layer in grid.index]
    # cell labels: two significant digits below 10, whole numbers above (never "1e+02")
    labels = grid.map(lambda v: "" if v != v else f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}")
    sns.heatmap(
        grid,
        ax=ax,
        cmap="viridis",
        annot=labels.to_numpy() if grid.shape[0] <= 12 and grid.shape[1] <= 12 else False,
        fmt="",
        annot_kws={"fontsize": "x-small"},
        cbar_kws={"label": "word sensitivity (mean over reviews)"},
    )
    ax.set_title(f"{title}, n = {n}", fontsize="small")
    ax.set(xlabel="head (1-based)", ylabel="encoder layer (1-based)")
    ax.grid(False)
    ax.tick_params(axis="y", rotation=0)
    for row, label in enumerate(grid.index):  # the layers left out: hatched rows that say so
        if label.endswith("(not run)"):
            ax.axhspan(row, row + 1, facecolor="none", edgecolor="darkgray", hatch="//", lw=0)
            box = {"facecolor": "white", "lw": 0}
            ax.text(grid.shape[1] / 2, row + 0.5, "not run", ha="center", va="center", bbox=box, **NOTE_STYLE)
    others = sorted({int(m) for m in heads["n"]} - {n})
    elsewhere = f"per-head rows at n = {', '.join(map(str, others))}: in the table only" if others else ""
    mark_not_run(ax, "\n".join(filter(None, [elsewhere, not_run])))


def _trained_title(whole: pd.DataFrame, *, raw: int) -> str:
    """The figure's title, two lines: the model and d where the table has them; the reviews, the band and
    the samples' scale (and how many raw-scale rows the figure leaves to the table)."""
    what = []
    if "model" in whole:
        what.append(", ".join(sorted({Path(str(m)).name for m in whole["model"]})))
    if "d" in whole:
        what.append(f"d = {', '.join(str(d) for d in sorted({int(d) for d in whole['d']}))}")
    head = f"{', '.join(what)}: " if what else ""
    reviews = f"mean WS over {whole['review'].nunique()} reviews" if "review" in whole else "mean WS over the reviews"
    scale = f"; {raw} raw-scale rows: in the table only" if raw else ""
    return (
        f"{head}each layer of the trained encoder against its random model (same d and heads)\n"
        f"{reviews}, band min-max; row-normalised samples (rows of norm sqrt(d)){scale}"
    )
