"""The figure functions of wordsens.plots on hand-made tables: what each panel holds (points, hollow
markers, reference lines, legends), checked on the returned figures and the written files: the
generalisation figures, the stamp of runs with random weights, the probes' attention maps.

The studies' figures: test_plots_studies.py; legibility measured on the drawn figures: test_plots_legible.py;
the trained study's figure: test_plots_trained.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from plot_tables import _gen_table, _ws_rows

from wordsens import plots
from wordsens.studies.gen.figure import gen_figure
from wordsens.studies.long_context.figure import long_context_figure
from wordsens.studies.probes.figure import attention_maps, attention_pair
from wordsens.studies.variants.figure import variants_figure


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


# ----------------------------------------------------------------------------- stamps


def test_runs_with_random_weights_get_a_stamp(tmp_path):
    assert plots.run_stamp({"model": {"name": "demo-tiny-bert"}}) == "toy demo: tiny random BERT"
    assert plots.run_stamp({"model": {"name": "bert-base-uncased"}}) is None
    assert plots.run_stamp({"model": {"name": "minilm"}}) is None
    assert plots.run_stamp({"model": {"name": "minilm"}}, model="demo-tiny-lm") == "toy demo: tiny random causal LM"
    folder = tmp_path / "my-bert"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert plots.run_stamp({"model": {"name": str(folder)}}) == "random weights: my-bert"  # a config alone
    (folder / "model.safetensors").write_bytes(b"")
    assert plots.run_stamp({"model": {"name": str(folder)}}) is None


def test_every_figure_function_draws_the_stamp_above_everything(tmp_path):
    stamp = "toy demo: tiny random BERT"
    settings = {"stamp": stamp}
    table = _ws_rows({"rf": [8, 16, 24]})
    figures = [
        gen_figure(_gen_table(), [["rf", 8]], [tmp_path / "g.png"], hue="N", y="alignment", settings=settings),
        variants_figure(table, [tmp_path / "v.png"], labels={"rf": "RF"}, settings=settings),
        long_context_figure({"synthetic": table}, [tmp_path / "l.png"], labels={"rf": "RF"}, settings=settings),
    ]
    for fig in figures:
        (text,) = [t for t in fig.texts if t.get_text() == stamp]
        renderer = FigureCanvasAgg(fig).get_renderer()  # the saved figure is closed: a canvas again
        others = [t for t in fig.texts if t is not text] + [ax.title for ax in fig.axes]
        top = max(o.get_window_extent(renderer).y1 for o in others)
        assert text.get_window_extent(renderer).y0 >= top  # nothing hides it, it hides nothing
    plain = variants_figure(table, [tmp_path / "w.png"], labels={"rf": "RF"})
    assert not any(t.get_text() == stamp for t in plain.texts)


def test_attention_maps_come_back_from_the_probes_table(tmp_path):
    """The probes write their maps as a table and the figure rules draw from it: the maps read back
    equal the ones written (through the CSV, tokens such as "null" kept as text), in label order."""
    from wordsens.studies.probes.run import AttentionMap, attention_table

    rng = np.random.default_rng(0)
    written = [
        AttentionMap(rng.random((3, 3)), ["i", "null", "her"]),
        AttentionMap(rng.random((3, 3)), ["i", "nan", "smile"]),
    ]
    attention_table(written, ["b sentence", "a sentence"]).to_csv(tmp_path / "t.csv", index=False)
    table = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    read = attention_maps(table, "sentence")
    assert list(read) == ["b sentence", "a sentence"]
    for back, amap in zip(read.values(), written, strict=True):
        np.testing.assert_allclose(back.matrix, amap.matrix, rtol=1e-12)
        assert back.tokens == amap.tokens
    with pytest.raises(ValueError, match=r"'a sentence' has 8 rows, not 3 x 3"):
        attention_maps(table.iloc[:-1], "sentence")
    attention_pair(list(read.values()), list(read), [tmp_path / "f.png"], settings={"dpi": 50})
    assert (tmp_path / "f.png").stat().st_size > 0
