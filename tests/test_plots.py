"""The figure functions of wordsens.plots on hand-made tables: what each panel holds (points, hollow
markers, reference lines, legends), checked on the returned figures and the written files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba

from wordsens import plots
from wordsens.claims.slope import law_slope, t_quantile
from wordsens.theory import rf_law


def _gen_table(interpolates: list[bool] | None = None) -> pd.DataFrame:
    """Figure 4 rows: RF n = 8 and RAF n = 8, two N, both trainings and losses, 3 simulations."""
    rng = np.random.default_rng(0)
    rows = []
    for map_name in ("rf", "raf"):
        for N in (6, 12):
            for sim in range(3):
                for training in ("fine_tune", "retrain"):
                    for loss in ("surrogate", "direct"):
                        a = 1.0 if map_name == "rf" else float(rng.uniform(-0.2, 0.6))
                        rows.append(
                            {
                                "figure": "fig4",
                                "map": map_name,
                                "n": 8,
                                "N": N,
                                "d": 16,
                                "simulation": sim,
                                "training": training,
                                "loss": loss,
                                "penalty": 0.0,
                                "gamma_min": float(rng.uniform(0, 1.5)),
                                "err": float(rng.uniform(0, 4)),
                                "alignment": a,
                            }
                        )
    table = pd.DataFrame(rows)
    if interpolates is not None:
        table["interpolates"] = interpolates * (len(table) // len(interpolates))
    return table


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
    fig = plots.gen_figure(table, [["rf", 8], ["raf", 8]], paths, hue="N", y=y)
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
    fig = plots.gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "fig.png"], hue="N", y=y)
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
        plots.gen_figure(table, [["rf", 8]], [tmp_path / "fig.png"], hue="N", y="alignment")
    with pytest.raises(ValueError, match="y must be"):
        plots.gen_figure(_gen_table(), [["rf", 8]], [tmp_path / "fig.png"], hue="N", y="d0_shift")


# ----------------------------------------------------------------------------- beyond the paper
def _ws_rows(
    maps_ns: dict, *, trials: int = 4, data: str = "synthetic", d: int = 16, slope: float = -0.5, seed: int = 0
) -> pd.DataFrame:
    """Trials with log WS = log c + slope log n + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for map_name, ns in maps_ns.items():
        for n in ns:
            for trial in range(trials):
                rows.append(
                    {
                        "map": map_name,
                        "data": data,
                        "d": d,
                        "n": n,
                        "trial": trial,
                        "lower": 2.0 * n**slope * float(np.exp(rng.normal(0, 0.05))),
                    }
                )
    return pd.DataFrame(rows)


def test_loglog_slope_against_scipy():
    from scipy import stats

    table = _ws_rows({"rf": [64, 256, 1024]}, trials=10, slope=-0.5)
    slope, lo, hi = plots.loglog_slope(table["n"], table["lower"])
    fit = stats.linregress(np.log(table["n"]), np.log(table["lower"]))
    half = stats.t.ppf(0.975, len(table) - 2) * fit.stderr
    assert slope == pytest.approx(fit.slope, rel=1e-12)
    assert (lo, hi) == pytest.approx((fit.slope - half, fit.slope + half), rel=1e-7)
    assert lo < -0.5 < hi
    for df in (1, 2, 5, 30, 300):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-7)
    assert np.isnan(plots.loglog_slope([8, 8, 8], [1, 2, 3])[0])  # one n: no slope
    assert np.isnan(plots.loglog_slope([8, 16], [1, 2])[1])  # two trials: no interval


def test_variants_figure_draws_one_curve_per_map_in_registry_order(tmp_path):
    table = _ws_rows({"raf": [4, 16, 64], "mh_raf": [4, 16, 64], "rf": [4, 16]})
    labels = {"rf": "RF (k = D)", "raf": "RAF (softmax attention)", "mh_raf": "multi-head attention", "block": "b"}
    left_out = [{"point": "variants block d16_n64", "map": "block", "d": 16, "n": 64, "L": None, "needs_gb": 9.0}]
    fig = plots.variants_figure(table, [tmp_path / "v.png", tmp_path / "v.pdf"], labels=labels, left_out=left_out)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["RF (k = D)", "RAF (softmax attention)", "multi-head attention"]
    lines = [line for line in ax.get_lines() if len(line.get_xdata())]
    means = table.groupby(["map", "n"])["lower"].mean()
    for line, map_name in zip(lines, ["rf", "raf", "mh_raf"], strict=False):
        np.testing.assert_allclose(line.get_ydata(), means[map_name].to_numpy())
    assert any("not run: map=block d=16 n=64" in t.get_text() for t in ax.texts)
    assert (tmp_path / "v.pdf").stat().st_size > 5000


def test_long_context_figure_fits_each_curve_and_marks_where_imdb_stops(tmp_path):
    synthetic = pd.concat(
        [
            _ws_rows({"raf": [64, 256, 1024, 4096]}, slope=0.0, trials=10),
            _ws_rows({"rf": [64, 256, 1024]}, slope=-0.5, trials=10),
        ]
    )
    imdb = _ws_rows({"raf": [64, 256, 512]}, slope=-0.1, trials=10, data="imdb")
    labels = {"rf": "RF", "raf": "RAF"}
    fig = plots.long_context_figure(
        {"synthetic": synthetic, "imdb": imdb}, [tmp_path / "l.png"], labels=labels, imdb_limit=512
    )
    (ax,) = fig.axes
    assert ax.get_xscale() == ax.get_yscale() == "log"
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    for label, data, frame in (
        ("RF", "synthetic", synthetic[synthetic["map"] == "rf"]),
        ("RAF", "synthetic", synthetic[synthetic["map"] == "raf"]),
        ("RAF", "imdb", imdb),
    ):
        slope, lo, hi = plots.loglog_slope(frame["n"], frame["lower"])
        law = law_slope(frame["n"])  # the law's slope over this curve's n, beside its fitted slope
        assert f"{label}, {data}: slope {slope:.2f} [{lo:.2f}, {hi:.2f}] (RF law {law:.2f})" in texts
    assert "(RF law -0.54)" in next(t for t in texts if t.startswith("RF, synthetic"))  # n = 64..1024
    assert not any(t.startswith("RF, imdb") for t in texts)
    assert any("RF law" in t for t in texts)
    # the RF law over RF's range, and the encoder's limit
    law = next(line for line in ax.get_lines() if line.get_label().startswith("RF law"))
    np.testing.assert_allclose(law.get_ydata(), rf_law(law.get_xdata()))
    assert law.get_xdata().min() == 64 and law.get_xdata().max() == pytest.approx(1024)
    limit = [line for line in ax.get_lines() if line.get_linestyle() == "-."]
    assert len(limit) == 1 and np.allclose(limit[0].get_xdata(), 512)
    assert any("n = 512" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError, match="no long-context results"):
        plots.long_context_figure({"imdb": imdb.iloc[:0]}, [tmp_path / "x.png"], labels=labels)


def test_positions_figure_marks_every_token_kind(tmp_path):
    from wordsens.experiments import token_kinds

    rows = []
    for map_name, scale in (("raf", 1.0), ("rf", 0.1)):
        for trial, (review, length) in enumerate([(7, 5), (9, 12)]):
            kinds = token_kinds(10, length)
            for i in range(10):
                rows.append(
                    {
                        "map": map_name,
                        "trial": trial,
                        "review_id": review,
                        "review_tokens": length,
                        "position": i,
                        "n": 10,
                        "lower": scale * (1 + 0.1 * i),
                        "token": kinds[i],
                    }
                )
    table = pd.DataFrame(rows)
    fig = plots.positions_figure(table, [tmp_path / "p.png"], labels={"raf": "RAF", "rf": "RF"})
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in axes) == sorted(
        f"{m}, review {r} ({t} tokens)" for m in ("RAF", "RF") for r, t in ((7, 5), (9, 12))
    )
    for ax in axes:
        label, _, rest = ax.get_title().partition(", review ")
        review = int(rest.split()[0])
        part = table[(table["map"] == {"RAF": "raf", "RF": "rf"}[label]) & (table["review_id"] == review)]
        drawn = {c.get_label(): len(c.get_offsets()) for c in ax.collections}
        assert drawn == part["token"].value_counts().to_dict()
        pads = [p for p in ax.patches]  # the shaded [PAD] span
        assert len(pads) == (1 if (part["token"] == "[PAD]").any() else 0)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["[CLS]", "word", "[SEP]", "[PAD]", r"RF law $(1+\sqrt{2/n})/\sqrt{n}$"]
    for ax in axes:  # the RF law at the profiles' n in every RF panel, none in the others
        laws = [line for line in ax.get_lines() if line.get_label().startswith("RF law")]
        if ax.get_title().startswith("RF"):
            assert len(laws) == 1 and np.allclose(laws[0].get_ydata(), rf_law(10.0))
            assert laws[0].get_label() == "RF law at n = 10"
        else:
            assert not laws
    # a map left out (limits.unfit: skip) is named on the figure
    fig = plots.positions_figure(
        table[table["map"] == "raf"],
        [tmp_path / "q.png"],
        labels={"raf": "RAF", "rf": "RF"},
        left_out=[{"map": "rf", "d": 64, "n": 128, "needs_gb": 31.5}],
    )
    assert any("not run: map=rf d=64 n=128 (needs 31.5 GB)" in t.get_text() for t in fig.texts)


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
        plots.gen_figure(_gen_table(), [["rf", 8]], [tmp_path / "g.png"], hue="N", y="alignment", settings=settings),
        plots.variants_figure(table, [tmp_path / "v.png"], labels={"rf": "RF"}, settings=settings),
        plots.long_context_figure({"synthetic": table}, [tmp_path / "l.png"], labels={"rf": "RF"}, settings=settings),
    ]
    for fig in figures:
        (text,) = [t for t in fig.texts if t.get_text() == stamp]
        renderer = FigureCanvasAgg(fig).get_renderer()  # the saved figure is closed: a canvas again
        others = [t for t in fig.texts if t is not text] + [ax.title for ax in fig.axes]
        top = max(o.get_window_extent(renderer).y1 for o in others)
        assert text.get_window_extent(renderer).y0 >= top  # nothing hides it, it hides nothing
    plain = plots.variants_figure(table, [tmp_path / "w.png"], labels={"rf": "RF"})
    assert not any(t.get_text() == stamp for t in plain.texts)


def test_attention_maps_come_back_from_the_probes_table(tmp_path):
    """The probes write their maps as a table and the figure rules draw from it: the maps read back
    equal the ones written (through the CSV, tokens such as "null" kept as text), in label order."""
    from wordsens.experiments.probes import AttentionMap, attention_table

    rng = np.random.default_rng(0)
    written = [
        AttentionMap(rng.random((3, 3)), ["i", "null", "her"]),
        AttentionMap(rng.random((3, 3)), ["i", "nan", "smile"]),
    ]
    attention_table(written, ["b sentence", "a sentence"]).to_csv(tmp_path / "t.csv", index=False)
    table = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    read = plots.attention_maps(table, "sentence")
    assert list(read) == ["b sentence", "a sentence"]
    for back, amap in zip(read.values(), written, strict=True):
        np.testing.assert_allclose(back.matrix, amap.matrix, rtol=1e-12)
        assert back.tokens == amap.tokens
    with pytest.raises(ValueError, match=r"'a sentence' has 8 rows, not 3 x 3"):
        plots.attention_maps(table.iloc[:-1], "sentence")
    plots.attention_pair(list(read.values()), list(read), [tmp_path / "f.png"], settings={"dpi": 50})
    assert (tmp_path / "f.png").stat().st_size > 0
