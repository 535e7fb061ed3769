"""The run's stamp (``wordsens.plots.stamp.run_stamp``): runs with random weights get one, and every figure
function draws it above everything (``wordsens.plots.common.save``), on hand-made tables.

Each study's figure: tests/unit/studies/test_<study>_figure.py and test_studies_figures.py; legibility
measured on the drawn figures: test_plots_legible.py."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from plot_tables import _gen_table, _ws_rows

from wordsens import plots
from wordsens.plots.generalisation import gen_figure
from wordsens.studies.long_context.figure import long_context_figure
from wordsens.studies.variants.figure import variants_figure


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
