"""The figures of the word-sensitivity studies beyond the paper on hand-made tables: the variants figure
(``wordsens.studies.variants.figure``: one curve per map, in registry order), the long-context figure
(``wordsens.studies.long_context.figure``: each curve fitted, where IMDb stops marked) and the positions
figure (``wordsens.studies.positions.figure``: every token kind marked)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from plot_tables import _ws_rows

from wordsens.claims.slope import law_slope, loglog_slope
from wordsens.studies.long_context.figure import long_context_figure
from wordsens.studies.positions.figure import positions_figure
from wordsens.studies.variants.figure import variants_figure
from wordsens.theory import rf_law


def test_variants_figure_draws_one_curve_per_map_in_registry_order(tmp_path):
    table = _ws_rows({"raf": [4, 16, 64], "mh_raf": [4, 16, 64], "rf": [4, 16]})
    labels = {"rf": "RF (k = D)", "raf": "RAF (softmax attention)", "mh_raf": "multi-head attention", "block": "b"}
    left_out = [{"point": "variants block d16_n64", "map": "block", "d": 16, "n": 64, "L": None, "needs_gb": 9.0}]
    fig = variants_figure(table, [tmp_path / "v.png", tmp_path / "v.pdf"], labels=labels, left_out=left_out)
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
    fig = long_context_figure(
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
        long_context_figure({"imdb": imdb.iloc[:0]}, [tmp_path / "x.png"], labels=labels)


def test_positions_figure_marks_every_token_kind(tmp_path):
    from wordsens.studies.sensitivity import token_kinds

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
    fig = positions_figure(table, [tmp_path / "p.png"], labels={"raf": "RAF", "rf": "RF"})
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
    fig = positions_figure(
        table[table["map"] == "raf"],
        [tmp_path / "q.png"],
        labels={"raf": "RAF", "rf": "RF"},
        left_out=[{"map": "rf", "d": 64, "n": 128, "needs_gb": 31.5}],
    )
    assert any("not run: map=rf d=64 n=128 (needs 31.5 GB)" in t.get_text() for t in fig.texts)
