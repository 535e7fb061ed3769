"""The generalisation figures (Figures 4 and 5, ``wordsens.plots.generalisation.gen_figure``) on hand-made
tables: what each panel holds (points, hollow markers of the rows that do not interpolate, the reference
line a = 1, legends), checked on the returned figures and the written files; a table without the column
refused.

The run's stamp on every figure: tests/unit/plots/test_plots.py; legibility measured on the drawn figures
(coinciding and runaway points): tests/unit/plots/test_plots_legible.py."""

from __future__ import annotations

import numpy as np
import pytest
import seaborn as sns
from matplotlib.colors import to_rgba
from plot_tables import _gen_table

from wordsens.plots.generalisation import gen_figure


def _hollow_points(fig) -> int:
    """Markers drawn with a white face (the hollow overlay of rows that do not interpolate)."""
    count = 0
    for ax in fig.axes:
        for coll in ax.collections:
            faces = coll.get_facecolors()
            if len(faces) and np.allclose(faces[:, :3], 1.0) and coll.get_label() == "_not_interpolating":
                count += len(coll.get_offsets())
    return count


@pytest.mark.parametrize("y", ["err", "alignment"])
def test_gen_figure_draws_every_row_in_its_panel(tmp_path, y):
    table = _gen_table()
    paths = [tmp_path / f"fig.{ext}" for ext in ("png", "pdf")]
    fig = gen_figure(table, [["rf", 8], ["raf", 8]], paths, hue="N", y=y)
    assert all(path.stat().st_size > 5000 for path in paths)
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in axes) == sorted(
        f"{m}, n = 8, {t}" for m in ("RF", "RAF") for t in ("fine-tuned", "re-trained")
    )
    for ax in axes:
        panel, _, training = ax.get_title().rpartition(", ")
        rows = table[
            (table["map"] == ("rf" if panel.startswith("RF") else "raf"))
            & (table["training"] == {"fine-tuned": "fine_tune", "re-trained": "retrain"}[training])
        ]
        drawn = np.concatenate([c.get_offsets() for c in ax.collections])
        assert len(drawn) == len(rows)
        np.testing.assert_allclose(np.sort(drawn[:, 1]), np.sort(rows[y].to_numpy()))
        dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
        if y == "alignment":  # the reference line a = 1
            assert len(dashed) == 1 and np.allclose(dashed[0].get_ydata(), 1.0)
            assert ax.get_ylabel() in ("", "alignment ratio $a$")
        else:
            assert not dashed
    assert _hollow_points(fig) == 0 and not (fig._suptitle and fig._suptitle.get_text())


@pytest.mark.parametrize("y", ["err", "alignment"])
def test_rows_that_do_not_interpolate_are_hollow_and_counted(tmp_path, y):
    table = _gen_table(interpolates=[True, True, True, False])
    fig = gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "fig.png"], hue="N", y=y)
    missing = int((~table["interpolates"]).sum())
    assert missing == len(table) // 4
    assert _hollow_points(fig) == missing
    assert f"hollow: {missing} of {len(table)} rows" in fig._suptitle.get_text()
    # the hollow marker sits on its own point, edged in the colour of its N
    palette = dict(zip([6, 12], sns.color_palette("colorblind", 2), strict=True))
    for ax in fig.axes:
        for coll in ax.collections:
            if coll.get_label() == "_not_interpolating":
                edge = coll.get_edgecolors()[0]
                assert any(np.allclose(edge, to_rgba(colour)) for colour in palette.values())


def test_gen_figure_refuses_a_table_without_the_column(tmp_path):
    table = _gen_table().drop(columns="alignment")
    with pytest.raises(ValueError, match="alignment"):
        gen_figure(table, [["rf", 8]], [tmp_path / "fig.png"], hue="N", y="alignment")
    with pytest.raises(ValueError, match="y must be"):
        gen_figure(_gen_table(), [["rf", 8]], [tmp_path / "fig.png"], hue="N", y="d0_shift")
