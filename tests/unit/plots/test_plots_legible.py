"""Legible figures (wordsens.plots), measured on the drawn figure: notes never over an axis or tick
label, the layers the limits left out marked in ``fig_trained``, coinciding points of different colours set
side by side, a few runaway rows drawn off scale and counted with the region read kept legible."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.markers import MarkerStyle
from plot_tables import _gen_table

from wordsens.plots.generalisation import gen_figure
from wordsens.studies.trained.figure import trained_figure
from wordsens.studies.ws.figure import ws_figure
from wordsens.theory import rf_law


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
    fig = ws_figure(tables, ["rf", "drf"], [tmp_path / "f.png"], scaled=scaled, left_out=left_out)
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
    fig = trained_figure(_trained_rows(), [tmp_path / "t.png"], left_out=left_out)
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
    fig = trained_figure(None, [tmp_path / "u.png"], left_out=left_out)
    assert all(any("layer=3" in t.get_text() for t in ax.texts) for ax in fig.axes[:4])
    with pytest.raises(ValueError, match="no rows of whole maps"):
        trained_figure(_trained_rows().iloc[:0], [tmp_path / "v.png"])


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
    fig = gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "f5.png"], hue="penalty")
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
    fig = gen_figure(table, [["rf", 8], ["raf", 8]], [tmp_path / "f4.png"], hue="N")
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
