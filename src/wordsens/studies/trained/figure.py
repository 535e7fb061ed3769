"""The trained study's figure (``trained_figure``): a pre-trained encoder's layers against their random
counterparts in each convention, the attention entropies that show the regime of each, and the heads;
the layers the limits left out marked not run.
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
from matplotlib.ticker import FuncFormatter

from ...maps import registry
from ...plots.common import NOTE_STYLE, mark_not_run, not_run_note, save
from .claims import trained_ratios
from .pairs import trained_maps

# each convention's line style and marker; the word rows are drawn (the special rows are in the table)
_STYLE = {"paper": ("-", "o"), "model": ("--", "s")}
_CONVENTION_LABEL = {"paper": "paper (rows sqrt(d), ball sqrt(d))", "model": "model scale (ball ||x_i||)"}
# the ratios on the word rows alone as keys (trained.word_keys): hollow markers, dotted, lighter
_WORD_KEYS_LABEL = "hollow, dotted: [CLS], [SEP] dropped (word rows alone)"
_WORD_KEYS: dict[str, Any] = {"ls": ":", "mfc": "none", "alpha": 0.75}


def trained_figure(
    table: pd.DataFrame | None,
    paths: Sequence[str | Path],
    *,
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """The trained study's figure (docs/studies.md) from rows of ``wordsens.studies.trained.run.trained_rows``
    at word rows and the largest n: one panel per trained map with the ratios of ``trained_ratios`` per layer
    (one colour per counterpart, the convention as line style, the word-keys ratios hollow and dotted), the
    attention entropies with ln n, and the heat map of the per-head rows (``ws_heads``, else ``ws``); a panel
    without its rows, and the layers ``left_out``, marked not run. ``settings``: ``context``, ``palette``,
    ``dpi``, ``stamp``. ValueError without whole-map (``head`` 0) word rows, unless every layer was left out."""
    settings = settings or {}
    columns = ["model", "review", "layer", "n", "convention", "map", "head", "draw", "token", "ws", "entropy"]
    table = pd.DataFrame(columns=columns) if table is None else table
    whole = table[(table["head"] == 0) & (table["token"] == "word")]
    keys = whole["keys"].fillna("all") if "keys" in whole else pd.Series("all", index=whole.index)
    words_only = whole[keys == "words"]  # every map searched on the word rows alone (trained.word_keys)
    whole = whole[keys == "all"]
    heads = table[table["head"] > 0]
    if whole.empty and not (left_out and table.empty):
        raise ValueError("no rows of whole maps (head 0) at word rows to draw")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    ratios = trained_ratios(whole) if not whole.empty else pd.DataFrame(columns=["map", "random", "convention"])
    without = trained_ratios(words_only) if not words_only.empty else None
    counterparts = list(dict.fromkeys(ratios["random"])) if not ratios.empty else []
    palette = sns.color_palette(settings.get("palette", "colorblind"), max(len(counterparts), 1))
    colours = dict(zip(counterparts, palette[: len(counterparts)], strict=True))
    not_run = not_run_note(left_out, ["layer"]).replace("\n", "; ")
    missing_layers = sorted({int(point["layer"]) for point in left_out})
    trained = trained_maps()
    fig, axes = plt.subplots(
        1, len(trained) + 2, figsize=(4.4 * len(trained) + 9.0, 4.6), width_ratios=(*[1.0] * len(trained), 1.0, 1.2)
    )
    for ax, name in zip(axes[: len(trained)], trained, strict=True):
        _ratio_panel(ax, ratios, name, colours, not_run=not_run, without=without)
    _entropy_panel(axes[-2], ratios, colours, not_run=not_run)
    _heads_panel(axes[-1], heads, missing_layers, not_run=not_run)
    handles = _legend_handles(counterparts, colours, ratios, without)
    ncol = max(1, min(len(handles), 4))
    rows = -(-max(len(handles), 1) // ncol)
    top = 1.0 - (0.12 + 0.25 * rows) / fig.get_figheight()  # room for the legend above the panels
    fig.tight_layout(rect=(0.0, 0.0, 1.0, top))
    if handles:
        fig.legend(
            handles=handles, loc="upper center", ncol=ncol, frameon=False, fontsize="small", bbox_to_anchor=(0.5, 1.0)
        )
    fig.suptitle(_title(whole, table), y=1.0, va="bottom", fontsize="medium")
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def _legend_handles(
    counterparts: Sequence[str], colours: dict[str, Any], ratios: pd.DataFrame, without: pd.DataFrame | None
) -> list[plt.Line2D]:
    """The legend: a colour per counterpart, a line style per convention drawn, and the hollow dotted twin
    where the word rows alone were searched too."""
    handles = [
        plt.Line2D([], [], color=colours[name], lw=2, label=f"vs {registry.get(name).label} ({name})")
        for name in counterparts
    ]
    handles += [
        plt.Line2D([], [], color="black", ls=ls, marker=marker, ms=4, label=_CONVENTION_LABEL[convention])
        for convention, (ls, marker) in _STYLE.items()
        if not ratios.empty and convention in set(ratios["convention"])
    ]
    if without is not None and not without.empty:
        handles.append(plt.Line2D([], [], color="black", marker="o", ms=4, label=_WORD_KEYS_LABEL, **_WORD_KEYS))
    return handles


def _offsets(count: int, width: float = 0.3) -> np.ndarray:
    """Horizontal offsets that set ``count`` series side by side around each layer."""
    return np.linspace(-width / 2, width / 2, count) if count > 1 else np.zeros(1)


def _ratio_panel(
    ax: plt.Axes,
    ratios: pd.DataFrame,
    trained: str,
    colours: dict[str, Any],
    *,
    not_run: str,
    without: pd.DataFrame | None = None,
) -> None:
    """One trained map's ratios to each counterpart, per layer, with their intervals; ``without``: the same
    ratios on the word rows alone as keys, drawn beside them hollow and dotted."""
    ax.set_title(f"{registry.get(trained).label}: WS(trained) / WS(random)", fontsize="small")
    part = ratios[(ratios["map"] == trained)] if not ratios.empty else ratios
    part = part[np.isfinite(part["value"].astype(float))] if not part.empty else part
    if part.empty:
        ax.set_axis_off()
        mark_not_run(ax, "\n".join(filter(None, [f"not run: no {trained} rows beside a counterpart", not_run])))
        return
    frames = [part.assign(_keys="all")]
    if without is not None and not without.empty:
        words = without[without["map"] == trained]
        frames.append(words[np.isfinite(words["value"].astype(float))].assign(_keys="words"))
    part = pd.concat(frames, ignore_index=True)
    series = list(part.groupby(["random", "convention", "_keys"], sort=False))
    offsets = _offsets(len(series), width=0.3 if len(series) <= 4 else 0.5)
    for index, ((random, convention, keys), at) in enumerate(series):
        at = at.sort_values("layer")
        x = at["layer"].to_numpy(float) + offsets[index]
        value = at["value"].to_numpy(float)
        low, high = at["low"].to_numpy(float), at["high"].to_numpy(float)
        ls, marker = _STYLE.get(str(convention), ("-", "o"))
        style: dict[str, Any] = {"ls": ls, "lw": 1.3, "alpha": 1.0}
        if keys == "words":
            style = {**_WORD_KEYS, "lw": 1.0}
        ax.plot(x, value, marker=marker, ms=4, color=colours[random], label=f"{random}, {convention}, {keys}", **style)
        has = np.isfinite(low) & np.isfinite(high)
        if has.any():
            err = np.vstack([value[has] - low[has], high[has] - value[has]])
            ax.errorbar(
                x[has],
                value[has],
                yerr=err,
                fmt="none",
                ecolor=colours[random],
                elinewidth=1,
                capsize=2,
                alpha=style["alpha"],
            )
    ax.axhline(1.0, color="gray", lw=0.8, zorder=0)
    values = part[["value", "low", "high"]].to_numpy(float)
    values = values[np.isfinite(values) & (values > 0)]
    if values.size and values.max() / values.min() >= 4:
        ax.set_yscale("log")
        plain = FuncFormatter(lambda value, _: f"{value:g}")  # 2, 3, 4 rather than 2 x 10^0
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
    layers = sorted({int(layer) for layer in part["layer"]})
    ax.set_xticks(layers)
    ax.set_xlabel("encoder layer")
    ax.set_ylabel(f"ratio at word rows, n = {int(part['n'].max())}")
    short = part[part["short"].astype(str) != ""]
    note = f"no interval: {short['short'].iloc[0]}" if not short.empty else ""
    mark_not_run(ax, "\n".join(filter(None, [note, not_run])))


def _entropy_panel(ax: plt.Axes, ratios: pd.DataFrame, colours: dict[str, Any], *, not_run: str) -> None:
    """The mean attention entropy of the trained attention and of its counterparts, per layer and convention."""
    ax.set_title("attention entropy on the samples (regime)", fontsize="small")
    # the first trained map with entropies (the trained maps of one layer share its attention)
    known = ratios[np.isfinite(ratios["entropy_trained"].astype(float))] if not ratios.empty else ratios
    if known.empty:
        ax.set_axis_off()
        mark_not_run(ax, "\n".join(filter(None, ["not run: no trained rows with attention entropies", not_run])))
        return
    trained = str(known["map"].iloc[0])
    part = known[known["map"] == trained]
    for convention, at in part.groupby("convention", sort=False):
        ls, marker = _STYLE.get(str(convention), ("-", "o"))
        first = at.drop_duplicates("layer").sort_values("layer")
        ax.plot(first["layer"], first["entropy_trained"], ls=ls, marker=marker, ms=4, lw=1.6, color="black")
        for random, rows in at.groupby("random", sort=False):
            rows = rows.sort_values("layer")
            ax.plot(rows["layer"], rows["entropy_random"], ls=ls, marker=marker, ms=4, lw=1.2, color=colours[random])
    n = int(part["n"].max())
    ax.axhline(np.log(n), color="gray", ls=":", lw=1.0)
    ax.annotate(
        f"ln n = {np.log(n):.2f} (uniform)",
        (0.02, np.log(n)),
        xycoords=("axes fraction", "data"),
        va="bottom",
        fontsize="x-small",
        color="gray",
    )
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.12 * np.log(n)))  # the uniform line and its label inside the panel
    ax.set_xticks(sorted({int(layer) for layer in part["layer"]}))
    ax.set_xlabel("encoder layer")
    ax.set_ylabel("mean entropy of a softmax row (nats)")
    mark_not_run(ax, "\n".join(filter(None, [f"black: {trained}", not_run])))


def _heads_panel(ax: plt.Axes, heads: pd.DataFrame, missing: Sequence[int], *, not_run: str = "") -> None:
    """The heat map of each (layer, head) of the trained attention at one n (the largest of the
    per-head rows) on the scale that compares heads, the layers left out (``missing``) as blank rows
    marked in their label, or a panel marked not run without per-head rows."""
    title = "trained attention, one head at a time"
    if heads.empty:
        ax.set_axis_off()
        ax.set_title(title, fontsize="small")
        mark_not_run(ax, "\n".join(filter(None, ["not run: no per-head rows (head > 0)", not_run])))
        return
    column = "ws_heads" if "ws_heads" in heads and heads["ws_heads"].notna().any() else "ws"
    n = int(heads["n"].max())
    grid = heads[heads["n"] == n].pivot_table(index="layer", columns="head", values=column, aggfunc="mean")
    grid = grid.reindex(sorted({*grid.index.astype(int), *missing}))
    grid.index = [f"{layer} (not run)" if layer in missing else str(layer) for layer in grid.index]
    # cell labels: two significant digits below 10, whole numbers above (never "1e+02")
    labels = grid.map(lambda v: "" if v != v else f"{v:.0f}" if abs(v) >= 10 else f"{v:.2g}")
    what = "WS relative to all heads' output" if column == "ws_heads" else "WS relative to the head's own output"
    sns.heatmap(
        grid,
        ax=ax,
        cmap="viridis",
        annot=labels.to_numpy() if grid.shape[0] <= 12 and grid.shape[1] <= 12 else False,
        fmt="",
        annot_kws={"fontsize": "x-small"},
        cbar_kws={"label": what},
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


def _title(whole: pd.DataFrame, table: pd.DataFrame) -> str:
    """Two lines: the model and d where the table has them; the reviews, the rows moved, the draws and
    how many special rows the figure leaves to the table."""
    what = []
    if "model" in whole and not whole.empty:
        what.append(", ".join(sorted({Path(str(m)).name for m in whole["model"]})))
    if "d" in whole and not whole.empty:
        what.append(f"d = {', '.join(str(d) for d in sorted({int(d) for d in whole['d']}))}")
    head = f"{', '.join(what)}: " if what else ""
    reviews = whole["review"].nunique() if not whole.empty else 0
    random = whole[whole["kind"] == "random"] if "kind" in whole else whole.iloc[0:0]
    draws = int(random["draw"].nunique()) if not random.empty else 0
    special = int(((table["head"] == 0) & (table["token"] != "word")).sum()) if not table.empty else 0
    specials = f"; {special} rows at [CLS]/[SEP]: in the table and claims" if special else ""
    return (
        f"{head}each layer of the trained encoder against its random counterparts\n"
        f"{reviews} reviews, word rows, {draws} draws per counterpart, 95% intervals over reviews{specials}"
    )


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``): every layer left out when no job fits."""
    trained_figure(tables.get("table"), outputs["figures"], left_out=params["left_out"], settings=settings)
