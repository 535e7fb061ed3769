"""The variants study's figure: every registered map's word sensitivity against n (``variants_figure``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...maps import registry
from ...plots.common import colours_of, finish, mark_not_run, not_run_note, start


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
    fig, ax = start(settings, figsize=(6.4, 4.2))
    colours = colours_of(maps_, settings)
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
    return finish(fig, paths, settings)


def draw(tables: dict[str, pd.DataFrame], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """The figure rule's drawing (``StudySpec.draw``)."""
    variants_figure(tables["table"], outputs["figures"], settings=settings, **params)
