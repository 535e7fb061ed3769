"""The trained study's rows (wordsens.studies.trained.run) on the demo's tiny BERT: the inputs are the
hidden states entering the layer, and each trained map stands beside its counterparts on the same sample."""

from __future__ import annotations

import math

import pytest
import torch

from wordsens import search
from wordsens.data.samples import synthetic_sample


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


# --------------------------------------------------------------------------- the study's rows


def test_layer_inputs_are_the_hidden_states_entering_the_layer(tiny_bert):
    from wordsens.data import embed, pretrained
    from wordsens.studies.trained.run import layer_inputs

    tokenizer, encoder = pretrained.load_encoder(tiny_bert, "cpu")
    texts = ["a good film with a great cast and a sad story " * 3, "the worst movie i have seen, bad acting " * 3]
    batch = embed.encode(tokenizer, texts, 10)
    with torch.no_grad():
        states = encoder(**batch, output_hidden_states=True).hidden_states
    for layer in (1, 2):
        raw = layer_inputs(tokenizer, encoder, texts, layer=layer, n=10, normalise=False)
        torch.testing.assert_close(raw, states[layer - 1].double(), rtol=1e-5, atol=1e-5)
        X = layer_inputs(tokenizer, encoder, texts, layer=layer, n=10, normalise=True)
        torch.testing.assert_close(X.norm(dim=-1), torch.full((2, 10), 8.0, dtype=torch.float64))
        torch.testing.assert_close(X / X.norm(dim=-1, keepdim=True), raw / raw.norm(dim=-1, keepdim=True))
    with pytest.raises(ValueError, match="fewer than n = 40 tokens"):
        layer_inputs(tokenizer, encoder, texts, layer=1, n=40, normalise=True)


def test_trained_rows_put_each_map_beside_its_counterparts_on_the_same_sample(tiny_bert):
    from wordsens.studies.trained.run import trained_rows

    X = synthetic_sample(6, 64, seed=7) * 0.5  # rows of norm 4: the model's own scale differs from the paper's
    common = {"model": tiny_bert, "layer": 2, "heads": 4, "seed": 3, "review": 1, "max_steps": 20}
    rows = trained_rows(X, positions=1, specials=True, draws=2, **common)
    per_row = [
        ("paper", "trained_attention", 0),
        ("paper", "mh_raf", 0),
        ("paper", "mh_raf", 1),
        ("paper", "trained_layer", 0),
        ("paper", "block", 0),
        ("paper", "block", 1),
        ("paper", "ln_block", 0),
        ("paper", "ln_block", 1),
        ("model", "trained_attention", 0),
        ("model", "matched_attention", 0),
        ("model", "matched_attention", 1),
        ("model", "trained_layer", 0),
        ("model", "matched_layer", 0),
        ("model", "matched_layer", 1),
    ]
    assert [(r["convention"], r["map"], r["draw"]) for r in rows] == [run for run in per_row for _ in range(3)]
    assert [r["token"] for r in rows[:3]] == ["word", "[CLS]", "[SEP]"] and rows[1]["position"] == 0
    assert {r["kind"] for r in rows if r["map"].startswith("trained")} == {"trained"}
    assert {r["n"] for r in rows} == {6} and {r["head"] for r in rows} == {0}
    # each row is the search of its map on this very sample, with the seed the rows record
    paper = X * (8.0 / X.norm(dim=-1, keepdim=True))
    for row, options in ((rows[0], {"model": tiny_bert, "layer": 2}), (rows[3], {"heads": 4})):
        assert row["convention"] == "paper" and row["map"] in ("trained_attention", "mh_raf")
        again = search.estimate(
            row["map"], paper, seed=row["seed"], position=row["position"], options=options, device="cpu", max_steps=20
        )
        assert again.lower == pytest.approx(row["ws"], rel=1e-6)
        assert row["radius"] == pytest.approx(8.0) and row["row_norm"] == pytest.approx(8.0)
    # the model's convention: the raw rows, the ball of the moved row's norm
    model = rows[24]
    assert (model["convention"], model["map"]) == ("model", "trained_attention")
    assert model["radius"] == pytest.approx(float(X[model["position"]].norm()))
    assert model["row_norm"] == pytest.approx(float(X.norm(dim=-1).mean()))
    again = search.estimate(
        "trained_attention",
        X,
        seed=model["seed"],
        position=model["position"],
        options={"model": tiny_bert, "layer": 2},
        device="cpu",
        max_steps=20,
        radius=model["radius"],
    )
    assert again.lower == pytest.approx(model["ws"], rel=1e-6)
    # draws differ, every counterpart shares a draw's seed (block and ln_block: the same random weights)
    blocks = [r for r in rows if r["map"] in ("block", "ln_block") and r["token"] == "word"]
    assert blocks[0]["seed"] == blocks[2]["seed"] != blocks[1]["seed"]
    with pytest.raises(ValueError, match="unknown trained maps"):
        trained_rows(X, maps_=("mh_raf",), **common)
    with pytest.raises(ValueError, match="unknown conventions"):
        trained_rows(X, conventions=("raw",), **common)
    heads = trained_rows(X, positions=1, per_head=True, **common)
    assert [r["head"] for r in heads] == [1, 2, 3, 4] and {r["convention"] for r in heads} == {"paper"}
    together = math.sqrt(sum(r["phi_norm"] ** 2 for r in heads))
    assert [r["ws_heads"] for r in heads] == pytest.approx([r["ws"] * r["phi_norm"] / together for r in heads])


def test_word_keys_rows_and_what_each_row_says_about_the_attention(tiny_bert):
    """``special_mass``: the attention word rows put on the first and last rows, against a NumPy softmax
    of the checkpoint's queries and keys; ``bias_share`` 0 for a map without biases; with ``word_keys``
    every map searched again on the sample without its [CLS] and [SEP] rows, at the same word rows."""
    import numpy as np

    from wordsens.maps.checkpoint import layer_weights
    from wordsens.studies.trained.run import trained_rows

    X = synthetic_sample(7, 64, seed=11) * 0.5
    common = {"model": tiny_bert, "layer": 1, "heads": 4, "seed": 5, "review": 0, "max_steps": 20}
    rows = trained_rows(X, positions=1, specials=False, draws=1, maps_=("trained_attention",), word_keys=True, **common)
    assert [(r["convention"], r["map"], r["keys"]) for r in rows] == [
        (c, m, k)
        for c, ms in (("paper", ("trained_attention", "mh_raf")), ("model", ("trained_attention", "matched_attention")))
        for m in ms
        for k in ("all", "words")
    ]
    full, words = rows[0], rows[1]
    assert words["position"] == full["position"] - 1 and words["token"] == "word"
    assert math.isnan(words["special_mass"]) and 0 < full["special_mass"] < 1
    # the word rows alone: the search of the same map and weights on X without its first and last rows
    paper = X * (8.0 / X.norm(dim=-1, keepdim=True))
    again = search.estimate(
        "trained_attention",
        paper[1:6],
        seed=words["seed"],
        position=words["position"],
        options={"model": tiny_bert, "layer": 1},
        device="cpu",
        max_steps=20,
    )
    assert again.lower == pytest.approx(words["ws"], rel=1e-6)
    # the attention on [CLS] and [SEP] of the word rows, mean over heads: a NumPy softmax
    W = {k: v.double().numpy() for k, v in layer_weights(tiny_bert, 1).items() if k != "eps"}
    x = paper.numpy()
    mass = []
    for h in range(4):
        logits = (x @ W["Wq"][h] + W["bq"][h]) @ (x @ W["Wk"][h] + W["bk"][h]).T / math.sqrt(16)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        mass.append((p[1:6, 0] + p[1:6, 6]).mean())
    assert full["special_mass"] == pytest.approx(float(np.mean(mass)), rel=1e-9)
    mh = next(r for r in rows if r["map"] == "mh_raf" and r["keys"] == "all")
    assert mh["bias_share"] == 0.0 and mh["model_row_norm"] == pytest.approx(float(X.norm(dim=-1).mean()))
    assert full["bias_share"] >= 0.0
