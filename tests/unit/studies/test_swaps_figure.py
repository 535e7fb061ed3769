"""The swaps study's figure and text show the radius (wordsens.studies.swaps.figure): the continuous word
sensitivity at each row's own radius r* is drawn per row, never averaged over rows of different radii;
the best word, the vocabulary's mean and the continuous values are all legible on one panel (measured
in the drawn figure); the top substitutions' table has r* and the value at sqrt(d) where the study
computed it. The figure and text on a real scan: test_swaps_run.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg

from wordsens.studies.swaps.figure import SERIES, swaps_figure, swaps_text

D = 768


def _table(sqrt_d: bool = True) -> pd.DataFrame:
    """Rows shaped as the study's at BERT-Base's size, with the issue's magnitudes: S_words 0.04-0.18, the
    vocabulary's mean about half of it, the continuous values about 2.5 at radii r* of 25-30 (each row
    its own) and about 3 at sqrt(d)."""
    rng = np.random.default_rng(0)
    rows = []
    for n in (16, 64, 128):
        for review in range(2):
            for position in (3, 7):
                best = rng.uniform(0.04, 0.18)
                radius = rng.uniform(25.0, 30.0)
                continuous = 2.5 * radius / 27.0
                rows.append(
                    {
                        "map": "raf", "d": D, "n": n, "review": review, "review_id": 10 + review,
                        "position": position, "s_words": best, "mean": 0.45 * best, "radius": radius,
                        "continuous": continuous, "ratio": best / continuous,
                        "continuous_sqrt_d": rng.uniform(2.8, 3.2) if sqrt_d else math.nan,
                        "exhaustive": True, "vocab": 23695, "context": "... a [good -> dull] film ...",
                        "top_words": json.dumps(["dull", "grey", "lone"]),
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_continuous_value_at_each_rows_radius_is_drawn_per_row(tmp_path):
    table = _table()
    fig = swaps_figure(table, [tmp_path / "fig.png"])
    (ax,) = [a for a in fig.axes if a.get_visible()]
    lines = {line.get_label(): line for line in ax.get_lines()}
    per_row = lines.get(SERIES["continuous"][0])
    assert per_row is not None, f"no series of the rows' continuous values among {sorted(lines)}"
    drawn = sorted(zip(per_row.get_xdata(), per_row.get_ydata(), strict=True))
    assert drawn == sorted(zip(table["n"], table["continuous"], strict=True))  # every row, none averaged
    assert ax.get_yscale() == "log"


def test_words_and_continuous_values_are_legible_on_one_panel(tmp_path):
    """On the drawn panel the best word's and the vocabulary mean's points stand at least 5% of the
    panel's height apart, and from the panel's bottom, while the continuous values (15-60 times larger)
    are on the panel too."""
    table = _table()
    fig = swaps_figure(table, [tmp_path / "fig.png"])
    FigureCanvasAgg(fig).draw()
    (ax,) = [a for a in fig.axes if a.get_visible()]
    bottom, top = ax.get_ylim()
    to_axes = (ax.transData + ax.transAxes.inverted()).transform  # data -> fraction of the panel
    for n, part in table.groupby("n"):
        best = to_axes((n, part["s_words"].mean()))[1]
        mean = to_axes((n, part["mean"].mean()))[1]
        assert best - mean >= 0.05 and mean >= 0.05, (n, best, mean)
    assert bottom <= table["mean"].min() and table["continuous"].max() <= top


def test_the_top_table_shows_r_star_and_the_value_at_sqrt_d(tmp_path):
    table = _table()
    text = swaps_text(table, tmp_path / "top.md", top=2)
    assert f"sqrt(d) = {math.sqrt(D):.4g}" in text
    header = next(line for line in text.splitlines() if line.startswith("| review"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[4:] == ["r*", "S_words", "continuous at r*", "ratio", "at sqrt(d)", "mean"]
    best = table[table["n"] == 16].sort_values("s_words", ascending=False).iloc[0]
    row = next(line for line in text.splitlines() if f"| {best['s_words']:.4g} |" in line)
    values = [c.strip() for c in row.strip("|").split("|")][4:]
    assert values == [
        f"{best[c]:.4g}" for c in ("radius", "s_words", "continuous", "ratio", "continuous_sqrt_d", "mean")
    ]
    # without swaps.sqrt_d the study has no value at sqrt(d): no such column
    plain = swaps_text(_table(sqrt_d=False), tmp_path / "plain.md")
    assert "at sqrt(d)" not in plain and "| r* |" in plain
