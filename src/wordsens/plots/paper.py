"""Seaborn figures of the paper, from the aggregated result tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from . import registry
from .io import atomic_path
from .theory import rf_law

__all__ = [
    "attention_pair",
    "gen_figure",
    "layer_changes_figure",
    "loglog_slope",
    "long_context_figure",
    "map_label",
    "not_run_note",
    "positions_figure",
    "rf_law",
    "save",
    "text_table_figure",
    "variants_figure",
    "ws_figure",
]


def map_label(name: str) -> str:
    """A map's plot label, from the registry (``wordsens.registry``: one place for every map)."""
    return registry.get(name).label


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
        handles.append(
            plt.Line2D(
                [],
                [],
                color="black",
                ls=":",
                label=r"$(1+\sqrt{2/n})/\sqrt{n}$" + (r"$\;\times\sqrt{n}$" if scaled else ""),
            )
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
) -> None:
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
        title = map_label(map_name) + (f" (d = {ds.pop()})" if map_name == "drf" and len(ds) == 1 else "")
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
    return f"{map_label(map_name).split(' (')[0]}, n = {n}"


GEN_Y = {
    "err": ("test error Err", None),
    "alignment": (r"alignment ratio $a$", 1.0),  # the reference line: a = 1, no separation
}


def _not_interpolating(table: pd.DataFrame) -> pd.Series:
    """Rows whose first-stage model does not interpolate its training set (``interpolates`` False;
    tables written before that column existed count as interpolating)."""
    if "interpolates" not in table:
        return pd.Series(False, index=table.index)
    return ~table["interpolates"].fillna(True).astype(bool)


def gen_figure(
    table: pd.DataFrame,
    columns: Sequence[Sequence[Any]],
    paths: Sequence[str | Path],
    *,
    hue: str,
    y: str = "err",
    left_out: Sequence[dict[str, Any]] = (),
    settings: dict[str, Any] | None = None,
) -> plt.Figure:
    """Figures 4 and 5 as one ``seaborn.relplot``: ``y`` against gamma_min, rows = training,
    columns = (map, n); colour = ``hue`` (N or penalty); marker = loss (circle surrogate, cross
    direct). ``y``: ``"err"`` (the test error: the paper's figures) or ``"alignment"`` (the
    alignment ratio a of each row, with the reference line a = 1: the companion figures).

    Rows whose first stage does not interpolate its training set (``interpolates == False``) are
    drawn hollow and counted in the title; points left out are named under the panels. Returns the
    (saved, closed) figure.
    """
    settings = settings or {}
    if table.empty:
        raise ValueError("no generalisation results to plot")
    if y not in GEN_Y:
        raise ValueError(f"y must be one of {sorted(GEN_Y)}, got {y!r}")
    if y not in table:
        raise ValueError(f"the table has no column {y!r}: re-run the generalisation jobs (wordsens.NUMERICS_VERSIONS)")
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    cols = [_gen_panel(m, int(n)) for m, n in columns if ((table["map"] == m) & (table["n"] == int(n))).any()]
    trainings = [TRAINING_TITLES[t] for t in TRAINING_TITLES if t in set(table["training"])]
    losses = [loss for loss in LOSS_MARKERS if loss in set(table["loss"])]
    levels = sorted(table[hue].unique())
    palette = dict(zip(levels, sns.color_palette(settings.get("palette", "colorblind"), len(levels)), strict=True))
    frame = table.assign(
        panel=[_gen_panel(m, int(n)) for m, n in zip(table["map"], table["n"], strict=True)],
        training=table["training"].map(TRAINING_TITLES),
    )
    grid = sns.relplot(
        data=frame,
        x="gamma_min",
        y=y,
        row="training",
        col="panel",
        hue=hue,
        style="loss",
        kind="scatter",
        row_order=trainings,
        col_order=cols,
        hue_order=levels,
        palette=palette,
        style_order=losses,
        markers={loss: LOSS_MARKERS[loss] for loss in losses},
        s=28,
        alpha=0.85,
        linewidth=0.8,
        height=3.0,
        aspect=3.4 / 3.0,
        facet_kws={"sharex": False, "sharey": "row"},
        legend="full" if len(losses) > 1 else "brief",
    )
    grid.set_titles("{col_name}, {row_name}")
    label, reference = GEN_Y[y]
    grid.set_axis_labels(r"$\gamma_{\min}$", label)
    hollow = frame[_not_interpolating(frame)]
    for (training, panel), ax in grid.axes_dict.items():
        ax.set_xlim(left=0)
        if reference is None:
            ax.set_ylim(bottom=-0.05)
        else:
            ax.axhline(reference, color="dimgray", ls="--", lw=1, zorder=0)
        part = hollow[(hollow["training"] == training) & (hollow["panel"] == panel)]
        for (level, loss), points in part.groupby([hue, "loss"]):
            ax.scatter(
                points["gamma_min"],
                points[y],
                marker=LOSS_MARKERS[str(loss)],
                s=28,
                facecolors="white",
                edgecolors=[palette[level]],
                linewidths=1.0,
                zorder=3,
                label="_not_interpolating",
            )
    if reference is not None:
        grid.figure.text(
            0.01,
            1.0,
            "dashed: a = 1 (one word cannot separate the two sentences)",
            fontsize="small",
            color="dimgray",
            va="bottom",
            ha="left",
        )
    if len(hollow):
        grid.figure.suptitle(
            f"hollow: {len(hollow)} of {len(frame)} rows whose first stage does not interpolate its training set",
            fontsize="small",
            y=1.04,
        )
    if left_out:
        note = not_run_note(left_out, ["data", "map", "n", "N", "d"], most=8).replace("\n", "; ")
        grid.figure.text(0.01, -0.02, note, fontsize="small", color="dimgray", va="top", ha="left", wrap=True)
    save(grid.figure, paths, int(settings.get("dpi", 150)))
    return grid.figure


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
    save(fig, paths, int(settings.get("dpi", 150)))


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
    save(fig, paths, int(settings.get("dpi", 150)))


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
    save(fig, paths, int(settings.get("dpi", 150)))


# ----------------------------------------------------------------------------- beyond the paper (issue 10)
def _t_quantile(q: float, df: int) -> float:
    """Quantile ``q`` (> 0.5) of Student's t with ``df`` degrees of freedom, by integrating its density
    in ``u = arctan(x / sqrt(df))``, where it is ``Gamma((df+1)/2) / (sqrt(pi) Gamma(df/2)) cos(u)^(df-1)``
    (smooth on [0, pi/2]; NumPy only)."""
    u = np.linspace(0.0, np.pi / 2, 200_001)
    dens = np.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(math.pi) * np.cos(u) ** (df - 1)
    cdf = 0.5 + np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(u))])
    return float(math.sqrt(df) * math.tan(float(np.interp(q, cdf, u))))


def loglog_slope(
    n: Sequence[float] | np.ndarray, ws: Sequence[float] | np.ndarray, *, level: float = 0.95
) -> tuple[float, float, float]:
    """Least-squares slope of log WS against log n over every trial, with its ``level`` t-interval
    (NaN bounds with fewer than 3 trials or a single n): (slope, low, high)."""
    x, y = np.log(np.asarray(n, dtype=float)), np.log(np.asarray(ws, dtype=float))
    xc = x - x.mean()
    sxx = float(xc @ xc)
    if sxx == 0:
        return math.nan, math.nan, math.nan
    slope = float(xc @ (y - y.mean())) / sxx
    if len(x) < 3:
        return slope, math.nan, math.nan
    resid = y - y.mean() - slope * xc
    se = math.sqrt(float(resid @ resid) / (len(x) - 2) / sxx)
    half = _t_quantile(0.5 + level / 2, len(x) - 2) * se
    return slope, slope - half, slope + half


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
        _mark_not_run(ax, not_run_note(left_out, ["map", "d", "n", "L"]).replace("\n", "; "))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)))
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
    solid synthetic, dashed IMDb): mean and 1-sd error bars over the trials, the least-squares slope
    of log WS on log n over every trial with its 95% t-interval in the legend, the RF law
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
            if part.empty:
                continue
            stats = part.groupby("n")["lower"].agg(["mean", "std"]).reset_index()
            slope, lo, hi = loglog_slope(part["n"], part["lower"])
            interval = f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) else ""
            ax.errorbar(
                stats["n"],
                stats["mean"],
                yerr=stats["std"].fillna(0),
                color=colours[map_name],
                ls=DATA_STYLES.get(data, ":"),
                marker="o",
                ms=4,
                capsize=2,
                label=f"{labels[map_name]}, {data}: slope {slope:.2f}{interval}",
            )
    rf_ns = [t.loc[t["map"] == "rf", "n"] for t in present.values() if "rf" in set(t["map"])]
    if rf_ns:
        ns = pd.concat(rf_ns)
        grid = np.geomspace(ns.min(), ns.max(), 100)
        ax.plot(grid, rf_law(grid), color="black", ls=":", lw=1.5, label=r"RF law $(1+\sqrt{2/n})/\sqrt{n}$")
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
        title="fitted log-log slope [95% CI]",
        title_fontsize="x-small",
    )
    if left_out:
        _mark_not_run(ax, not_run_note(left_out, ["study", "map", "d", "n"]).replace("\n", "; "))
    fig.tight_layout()
    save(fig, paths, int(settings.get("dpi", 150)))
    return fig


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
    ``token`` (``[CLS]``, ``word``, ``[SEP]``, ``[PAD]``); [PAD] rows shaded. Maps ``left_out``
    (``limits.unfit: skip``) are named under the panels."""
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
            ax.plot(part["position"], part["lower"], color=colours[map_name], lw=1, zorder=1)
            for kind, (marker, colour, size) in TOKEN_STYLES.items():
                rows = part[part["token"] == kind]
                if len(rows):
                    ax.scatter(
                        rows["position"],
                        rows["lower"],
                        marker=marker,
                        s=size,
                        zorder=2,
                        color=colour or colours[map_name],
                        label=kind,
                    )
            pads = part[part["token"] == "[PAD]"]
            if len(pads):
                ax.axvspan(
                    pads["position"].min() - 0.5, pads["position"].max() + 0.5, color="gray", alpha=0.12, lw=0, zorder=0
                )
            first = part.iloc[0]
            ax.set_title(
                f"{labels[map_name]}, review {int(first['review_id'])} ({int(first['review_tokens'])} tokens)",
                fontsize="small",
            )
            ax.set_ylim(0, 1.08 * float(table.loc[table["map"] == map_name, "lower"].max()))  # the row's scale
            if r == len(maps_) - 1:
                ax.set_xlabel("position i ([CLS] = 0)")
            if c == 0:
                ax.set_ylabel(r"WS at position $i$")
    handles = [
        plt.Line2D([], [], ls="", marker=m, color=col or "black", label=k)
        for k, (m, col, _) in TOKEN_STYLES.items()
        if k in set(table["token"])
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
    save(fig, paths, int(settings.get("dpi", 150)))
    return fig
