"""The figure functions of wordsens.plots on hand-made tables: what each panel holds (points, hollow
markers, reference lines, legends), checked on the returned figures and the written files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.markers import MarkerStyle

from wordsens import plots
from wordsens.claims.intervals import t_quantile
from wordsens.claims.slope import law_slope, loglog_slope
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
    slope, lo, hi = loglog_slope(table["n"], table["lower"])
    fit = stats.linregress(np.log(table["n"]), np.log(table["lower"]))
    half = stats.t.ppf(0.975, len(table) - 2) * fit.stderr
    assert slope == pytest.approx(fit.slope, rel=1e-12)
    assert (lo, hi) == pytest.approx((fit.slope - half, fit.slope + half), rel=1e-7)
    assert lo < -0.5 < hi
    for df in (1, 2, 5, 30, 300):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-7)
    assert np.isnan(loglog_slope([8, 8, 8], [1, 2, 3])[0])  # one n: no slope
    assert np.isnan(loglog_slope([8, 16], [1, 2])[1])  # two trials: no interval


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
        slope, lo, hi = loglog_slope(frame["n"], frame["lower"])
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
            assert laws[0].get_label() == r"RF law $(1+\sqrt{2/n})/\sqrt{n}$ at n = 10"  # the spec's law_label
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


# ----------------------------------------------------------------------------- legible figures
def _drawn(fig):
    """A renderer of ``fig`` after drawing it (a saved figure is closed: a canvas of its own again)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _covered(fig) -> list[str]:
    """The notes (dim grey text, ``plots.common.NOTE_STYLE``) drawn over an axis label, a tick label, a
    title or another note: "note / what it covers" for each."""
    from matplotlib.colors import same_color

    renderer = _drawn(fig)
    texts = [t for ax in fig.axes for t in ax.texts] + list(fig.texts)
    notes = [t for t in texts if t.get_visible() and t.get_text() and same_color(t.get_color(), "dimgray")]
    others = [
        t
        for ax in fig.axes
        for t in (ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_xticklabels(), *ax.get_yticklabels())
        if t.get_visible() and t.get_text() and ax.axison
    ]
    found = []
    for i, note in enumerate(notes):
        box = note.get_window_extent(renderer)
        for other in others + notes[i + 1 :]:
            o = other.get_window_extent(renderer)
            if min(box.x1, o.x1) - max(box.x0, o.x0) > 0.5 and min(box.y1, o.y1) - max(box.y0, o.y0) > 0.5:
                found.append(f"{note.get_text()!r} / {other.get_text()!r}")
    return found


def _figure2(left_out_d: int = 768):
    """Figure 2's tables (RF at d = 16, 32; DRF at d = 16) and DRF points at d = ``left_out_d`` left out."""
    rng = np.random.default_rng(1)
    rf = pd.DataFrame(
        [
            {"map": "rf", "d": d, "n": n, "L": None, "trial": t, "lower": rf_law(n) * rng.uniform(0.9, 1.0)}
            for d in (16, 32)
            for n in (8, 16, 24)
            for t in range(3)
        ]
    ).assign(upper=lambda f: f["lower"] * 1.5)
    drf = pd.DataFrame(
        [
            {"map": "drf", "d": 16, "n": n, "L": L, "trial": t, "lower": 0.2 * rng.uniform(0.9, 1.0), "upper": np.nan}
            for n in (8, 12)
            for L in (2, 3)
            for t in range(3)
        ]
    )
    left_out = [
        {"point": f"drf d{left_out_d}_n{n}_L{L}", "map": "drf", "d": left_out_d, "n": n, "L": L, "needs_gb": 15.1 * L}
        for n in (50, 90, 150)
        for L in (2, 4, 8)
    ]
    return {"rf": rf, "drf": drf}, left_out


@pytest.mark.parametrize("scaled", [False, True])
def test_not_run_notes_are_drawn_below_the_axis_labels(tmp_path, scaled):
    """Figure 2 with DRF at d = 768 left out: the note under the right panel names every point (six, then
    "and 4 more") and covers neither the x-axis label nor a tick label (measured on the drawn figure)."""
    tables, left_out = _figure2()
    fig = plots.ws_figure(tables, ["rf", "drf"], [tmp_path / "f.png"], scaled=scaled, left_out=left_out)
    _, drf_ax = fig.axes
    (note,) = [t for t in drf_ax.texts if t.get_text().startswith("not run")]
    assert "d=768 n=50 L=2 (needs 30.2 GB)" in note.get_text() and "and 4 more" in note.get_text()
    assert not _covered(fig)
    renderer = _drawn(fig)
    assert note.get_window_extent(renderer).y1 <= drf_ax.xaxis.label.get_window_extent(renderer).y0
    # the note is inside the saved figure (tight_layout made room for it)
    assert note.get_window_extent(renderer).y0 >= 0


def _trained_rows(layers=(1, 2), heads=2) -> pd.DataFrame:
    base = {"d": 64, "convention": "paper", "token": "word", "head": 0, "position": 3, "entropy": 2.0}
    rows = [
        {**base, "review": r, "layer": layer, "n": n, "map": m, "kind": kind, "draw": 0, "ws": layer / n + r + 1}
        for layer in layers
        for n in (8, 32)
        for r in range(5)
        for m, kind in (
            ("trained_attention", "trained"),
            ("mh_raf", "random"),
            ("trained_layer", "trained"),
            ("block", "random"),
        )
    ]
    rows += [
        {**rows[0], "layer": layer, "n": 32, "map": "trained_attention", "kind": "trained", "head": h, "ws": h}
        for layer in layers
        for h in range(1, heads + 1)
    ]
    return pd.DataFrame(rows).assign(model="tiny")


def test_trained_figure_marks_the_layers_left_out(tmp_path):
    """Layers 3 and 4 left out by the limits: named under every panel and as blank rows of the heat map;
    nothing drawn over an axis label."""
    left_out = [
        {"point": f"trained layer{layer}", "map": "trained", "study": "trained", "layer": layer, "needs_gb": 9.5}
        for layer in (3, 4)
    ]
    fig = plots.trained_figure(_trained_rows(), [tmp_path / "t.png"], left_out=left_out)
    panels = fig.axes[:4]
    heat = panels[-1]
    for ax in panels:
        (note,) = [t.get_text() for t in ax.texts if "not run:" in t.get_text()]
        assert "layer=3 (needs 9.5 GB); layer=4 (needs 9.5 GB)" in note, ax.get_title()
    assert [t.get_text() for t in heat.get_yticklabels()] == ["1", "2", "3 (not run)", "4 (not run)"]
    values = heat.collections[0].get_array()
    assert values.shape == (4, 2) and np.ma.getmaskarray(values)[2:].all() and not np.ma.getmaskarray(values)[:2].any()
    assert not _covered(fig)
    # every layer left out: the panels say so, no table needed
    fig = plots.trained_figure(None, [tmp_path / "u.png"], left_out=left_out)
    assert all(any("layer=3" in t.get_text() for t in ax.texts) for ax in fig.axes[:4])
    with pytest.raises(ValueError, match="no rows of whole maps"):
        plots.trained_figure(_trained_rows().iloc[:0], [tmp_path / "v.png"])


def _figure5(coincide: bool) -> pd.DataFrame:
    """Figure 5 rows: RAF and RF at n = 8, three penalties, both trainings, surrogate loss. With
    ``coincide``, RAF re-trained reaches Err = 0 at the same gamma_min for every penalty (as on IMDb)."""
    rows = []
    spread = iter(range(1000))  # elsewhere every point apart from the others: a lattice walked in steps
    for map_name in ("rf", "raf"):
        for sim in range(4):
            shared = 0.2 + 0.3 * sim
            for training in ("fine_tune", "retrain"):
                for penalty in (0.0, 0.1, 1.0):
                    same = coincide and map_name == "raf" and training == "retrain"
                    k = next(spread)
                    rows.append(
                        {
                            "map": map_name,
                            "n": 8,
                            "N": 6,
                            "d": 16,
                            "simulation": sim,
                            "training": training,
                            "loss": "surrogate",
                            "penalty": penalty,
                            "gamma_min": shared if same else 0.05 + 0.06 * (k % 24),
                            "err": 0.0 if same else (7 * k % 24) / 6,
                            "alignment": 1.0,
                        }
                    )
    return pd.DataFrame(rows)


def _marker_positions(ax) -> list[tuple[np.ndarray, np.ndarray, tuple]]:
    """Each collection's data offsets, their drawn positions (pixels: its offset transform) and colour."""
    out = []
    for coll in ax.collections:
        offsets = np.asarray(coll.get_offsets())
        if len(offsets):
            shown = coll.get_offset_transform().transform(offsets)
            colour = tuple(np.round(coll.get_facecolors()[0][:3], 3))
            out.append((offsets, shown, colour))
    return out


def test_coinciding_points_of_different_penalties_are_drawn_side_by_side(tmp_path):
    """Figure 5 where RAF re-trained reaches Err = 0 at one gamma_min for all three penalties: each
    penalty's marker is drawn apart from the others (at least 4 points), on the same data position,
    and the panel names the overlap; panels without coinciding points are drawn as they are."""
    table = _figure5(coincide=True)
    fig = plots.gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "f5.png"], hue="penalty")
    renderer = _drawn(fig)
    points = renderer.points_to_pixels(1.0)
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    raf = by_title["RAF, n = 8, re-trained"]
    drawn = _marker_positions(raf)
    assert len(drawn) == 3 and len({colour for _, _, colour in drawn}) == 3  # one collection per penalty
    for i, (data_i, shown_i, _) in enumerate(drawn):
        for data_j, shown_j, _ in drawn[i + 1 :]:
            for point, shown in zip(data_i, shown_i, strict=True):  # the same point of another penalty
                (same,) = np.flatnonzero((data_j == point).all(axis=1))
                assert abs(shown[0] - shown_j[same, 0]) >= 4 * points and shown[1] == pytest.approx(shown_j[same, 1])
    notes = [t.get_text() for t in raf.texts]
    assert any(t.startswith("side by side: 12 points where penalty = 0, 0.1, 1\nfall on one another") for t in notes)
    for title, ax in by_title.items():  # nothing moved elsewhere: each marker on its data position
        if title != "RAF, n = 8, re-trained":
            for data, shown, _ in _marker_positions(ax):
                np.testing.assert_allclose(shown, ax.transData.transform(data), atol=1e-6)
            assert not any("side by side" in t.get_text() for t in ax.texts)
    assert not _covered(fig)


def test_a_few_runaway_rows_leave_the_region_read_legible(tmp_path):
    """Figure 4 where three RAF re-trained surrogate rows run away (Err up to 330, gamma_min up to 18):
    the axes keep the region the figure is read at (gamma_min <= 2, Err <= 4) over most of each
    panel, the runaway rows are drawn as triangles at the edge and counted under their panel, and
    every row is still drawn."""
    table = _gen_table()
    runaway = (table["map"] == "raf") & (table["training"] == "retrain") & (table["loss"] == "surrogate")
    index = table.index[runaway][:3]
    table.loc[index, "err"] = [330.0, 120.0, 45.0]
    table.loc[index, "gamma_min"] = [18.0, 7.0, 1.0]
    fig = plots.gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "f4.png"], hue="N")
    by_title = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    for title, ax in by_title.items():
        rows = table[
            (table["map"] == ("rf" if title.startswith("RF") else "raf"))
            & (table["training"] == ("retrain" if title.endswith("re-trained") else "fine_tune"))
        ]
        assert sum(len(c.get_offsets()) for c in ax.collections) == len(rows)  # every row drawn
        bottom, top = ax.get_ylim()
        assert top <= 6 and (4 - max(bottom, 0)) / (top - bottom) >= 0.6, title  # Err <= 4: most of the axis
        if title.startswith("RAF") and title.endswith("re-trained"):
            left, right = ax.get_xlim()
            assert right <= 3 and 2 / (right - left) >= 0.6
            off = [c for c in ax.collections if c.get_label() == "_off_scale"]
            assert sum(len(c.get_offsets()) for c in off) == 3
            up = MarkerStyle("^")  # every one of them a triangle pointing off scale
            assert all(
                np.allclose(c.get_paths()[0].vertices, up.get_path().transformed(up.get_transform()).vertices)
                for c in off
            )
            (note,) = [t.get_text() for t in ax.texts]
            assert note.splitlines() == [
                "off scale: 3 of 12 rows, triangles at the edge",
                "(Err from 45 to 330; $\\gamma_{\\min}$ up to 18)",
            ]
        else:
            assert not ax.texts
    assert "off scale (at the edge)" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert not _covered(fig)


def test_on_scale_leaves_out_only_a_few_runaway_values():
    from wordsens.plots.scatter import on_scale

    rng = np.random.default_rng(0)
    body = rng.uniform(0, 4, 97)
    assert on_scale(body, anchor=0.0) == (None, None)  # a spread without runaways: everything on scale
    assert on_scale(np.r_[body, 50.0, 150.0, 330.0], anchor=0.0) == (None, body.max())
    assert on_scale([0.0] * 20 + [0.5, 0.7], anchor=0.0) == (None, None)  # nothing to resolve below them
    assert on_scale([1.0, 2.0, 3.0, 400.0]) == (None, None)  # too few values to call any a runaway
    many = np.r_[body, rng.uniform(300, 330, 30)]  # a quarter of the values far above: a second cluster
    assert on_scale(many, anchor=0.0) == (None, None)
    low, high = on_scale(np.r_[body, -200.0, 90.0])  # no anchor: both sides
    assert (low, high) == (body.min(), body.max())


def test_side_by_side_moves_only_points_of_different_series_that_coincide():
    from wordsens.plots.scatter import side_by_side

    x = np.array([1.0, 1.0, 1.0, 1.0, 3.0, 3.0, 5.0])
    y = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0])
    series = ["a", "b", "c", "a", "a", "a", "b"]
    offsets, together, moved = side_by_side(x, y, series, x_span=10, y_span=10)
    np.testing.assert_allclose(offsets, [-1, 0, 1, -1, 0, 0, 0])  # (3, 2): two points of one series stay
    assert together == ["a", "b", "c"] and moved == 4
    offsets, together, moved = side_by_side(x + np.arange(7), y, series, x_span=10, y_span=10)
    assert not offsets.any() and together == [] and moved == 0
