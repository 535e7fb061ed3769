"""The trained study's figure (``wordsens.studies.trained.figure``, ``fig_trained``) on hand-made tables: the ratios per
counterpart and convention, the entropies and the heads, a missing pair and missing heads marked not run."""

from __future__ import annotations

import numpy as np
import pytest


def _trained_table(counterparts=None, heads=4):
    """A synthetic table of the trained study: 2 layers, n = 32 (and a few rows at n = 16), 5 reviews, word
    rows: each trained map at WS 2 (layer 1) or 3 (layer 2) plus review / 10, each counterpart of
    ``counterparts`` ((trained, random, convention); default all) at WS 1 over 2 draws; [CLS] rows far
    above; ``heads`` per-head rows at n = 32 (WS layer + head / 10)."""
    import pandas as pd

    from wordsens.maps import registry

    if counterparts is None:
        counterparts = [
            (name, c.map, c.convention)
            for name in ("trained_attention", "trained_layer")
            for c in registry.get(name).counterparts
        ]
    rows = []
    base = {"model": "/models/tiny", "d": 64, "head": 0, "position": 3, "entropy": 2.0}
    for layer in (1, 2):
        for review in range(5):
            for n, token in ((32, "word"), (32, "[CLS]"), (16, "word")):
                scale = 10.0 if token == "[CLS]" else 1.0
                for trained, random, convention in counterparts:
                    common = {
                        **base,
                        "review": review,
                        "layer": layer,
                        "n": n,
                        "convention": convention,
                        "token": token,
                    }
                    rows.append(
                        {
                            **common,
                            "map": trained,
                            "kind": "trained",
                            "draw": 0,
                            "ws": scale * (layer + 1 + review / 10),
                        }
                    )
                    rows += [
                        {**common, "map": random, "kind": "random", "draw": k, "ws": scale * (1 + (k - 0.5) / 10)}
                        for k in (0, 1)
                    ]
    rows += [
        {
            **base,
            "review": 0,
            "layer": layer,
            "n": 32,
            "convention": "paper",
            "token": "word",
            "map": "trained_attention",
            "kind": "trained",
            "draw": 0,
            "head": h,
            "ws": layer + h / 10,
            "ws_heads": (layer + h / 10) / 4,
        }
        for layer in (1, 2)
        for h in range(1, heads + 1)
    ]
    frame = pd.DataFrame(rows).drop_duplicates(["review", "layer", "n", "convention", "token", "map", "draw", "head"])
    return frame.reset_index(drop=True)


def _styles(ax) -> dict[str, int]:
    """How many series of each style a panel has ("-": paper convention, "--": model scale): its labelled
    lines (not the error bars' caps, not the reference line)."""
    styles = [line.get_linestyle() for line in ax.get_lines() if not line.get_label().startswith("_")]
    return {style: styles.count(style) for style in sorted(set(styles))}


def test_trained_figure_draws_the_ratios_per_counterpart_and_convention_the_entropies_and_heads(tmp_path):
    from matplotlib.colors import to_rgb

    from wordsens.studies.trained.claims import trained_ratios
    from wordsens.studies.trained.figure import trained_figure

    table = _trained_table()
    paths = [tmp_path / "fig_trained.png", tmp_path / "fig_trained.pdf"]
    fig = trained_figure(table, paths)
    assert all(p.stat().st_size > 0 for p in paths)
    attention, layer, entropy, heat = fig.axes[:4]
    # per counterpart one series over the layers (paper solid, model dashed), at the word rows of the largest n
    assert _styles(attention) == {"-": 1, "--": 1} and _styles(layer) == {"-": 2, "--": 1}
    expected = trained_ratios(table[(table["head"] == 0) & (table["token"] == "word")])
    first = next(line for line in attention.get_lines() if line.get_label() == "mh_raf, paper, all")
    mh = expected[(expected["random"] == "mh_raf")].sort_values("layer")
    assert list(first.get_ydata()) == pytest.approx(list(mh["value"]))
    reviews = np.arange(5) / 10  # per review (layer + 1 + review / 10) / 1: their geometric mean
    assert list(mh["value"]) == pytest.approx([np.exp(np.log(layer + 1 + reviews).mean()) for layer in (1, 2)])
    assert [round(float(x)) for x in first.get_xdata()] == [1, 2]
    # the intervals over the 5 reviews: one error bar per point
    assert len(attention.collections) == 2
    assert "trained attention" in attention.get_title() and "trained encoder layer" in layer.get_title()
    colours = {to_rgb(line.get_color()) for line in layer.get_lines() if not line.get_label().startswith("_")}
    assert len(colours) == 3  # block, ln_block, matched_layer
    assert max(max(line.get_ydata()) for line in attention.get_lines()) < 5  # the [CLS] rows (10x) are not drawn
    assert "rows at [CLS]/[SEP]: in the table and claims" in fig.get_suptitle()
    assert "5 reviews, word rows, 2 draws per counterpart" in fig.get_suptitle()
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert any("mh_raf" in label for label in labels) and any("model scale" in label for label in labels)
    assert len(entropy.get_lines()) >= 4  # trained and counterpart per convention, and ln n
    assert heat.collections[0].get_array().shape == (2, 4)  # 2 layers x 4 heads
    assert "n = 32" in heat.get_title() and "all heads" in heat.collections[0].colorbar.ax.get_ylabel()
    with pytest.raises(ValueError, match="no rows of whole maps"):
        trained_figure(table[table["head"] > 0], paths)


def test_trained_figure_marks_a_missing_pair_and_missing_heads_not_run(tmp_path):
    from wordsens.studies.trained.figure import trained_figure

    table = _trained_table(counterparts=[("trained_attention", "mh_raf", "paper")], heads=0)
    path = tmp_path / "fig_trained.png"
    left_out = [{"layer": 3, "needs_gb": 40.0}]
    fig = trained_figure(table, [path], left_out=left_out, settings={"palette": "rocket", "dpi": 60, "stamp": "toy"})
    assert path.stat().st_size > 0
    attention, layer, entropy, heat = fig.axes[:4]
    assert _styles(attention) == {"-": 1} and entropy.get_lines()
    for ax in (layer, heat):
        assert not ax.axison and not ax.get_lines() and not ax.collections
        assert any(text.get_text().startswith("not run") for text in ax.texts)
    assert any("layer=3 (needs 40 GB)" in text.get_text() for text in attention.texts)
    assert [t.get_text() for t in fig.texts if t.get_label() == "stamp"] == ["toy"]


def test_the_ratios_on_the_word_rows_alone_are_drawn_beside_hollow_and_dotted(tmp_path):
    """With ``trained.word_keys`` rows (``keys`` "words"), each ratio series has a hollow, dotted twin with
    the word rows' own ratios; a table without them draws none and names none in the legend."""
    import pandas as pd

    from wordsens.studies.trained.claims import trained_ratios
    from wordsens.studies.trained.figure import trained_figure

    table = _trained_table().assign(keys="all")
    words = table[table["head"] == 0].assign(keys="words")
    words.loc[words["kind"] == "trained", "ws"] *= 0.6  # the trained map less sensitive among the words alone
    both = pd.concat([table, words], ignore_index=True)
    fig = trained_figure(both, [tmp_path / "fig_trained.png"])
    attention, layer = fig.axes[:2]
    assert _styles(attention) == {"-": 1, "--": 1, ":": 2} and _styles(layer) == {"-": 2, "--": 1, ":": 3}
    hollow = next(line for line in attention.get_lines() if line.get_label() == "mh_raf, paper, words")
    assert hollow.get_markerfacecolor() == "none" and hollow.get_linestyle() == ":"
    alone = words[words["token"] == "word"]
    expected = trained_ratios(alone)
    mh = expected[(expected["map"] == "trained_attention") & (expected["random"] == "mh_raf")].sort_values("layer")
    assert list(hollow.get_ydata()) == pytest.approx(list(mh["value"]))
    full = next(line for line in attention.get_lines() if line.get_label() == "mh_raf, paper, all")
    assert all(w < f for w, f in zip(hollow.get_ydata(), full.get_ydata(), strict=True))
    assert any("[CLS], [SEP] dropped" in text.get_text() for text in fig.legends[0].get_texts())

    plain = trained_figure(table, [tmp_path / "plain.png"])
    assert ":" not in _styles(plain.axes[0])
    assert not any("dropped" in text.get_text() for text in plain.legends[0].get_texts())
