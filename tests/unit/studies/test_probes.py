"""The probes study (Figure 1 left, Figure 3 panels 3-4): the probes of a pre-trained encoder
(``wordsens.studies.probes.run``) on a tiny BERT built locally (no network), and their attention maps
read back from the table the figure rules draw from (``wordsens.studies.probes.figure``). Their memory:
tests/unit/compute/test_probe_memory.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from wordsens.data import demo, pretrained
from wordsens.studies.probes import AttentionMap
from wordsens.studies.probes import run as probes
from wordsens.studies.probes.figure import attention_maps, attention_pair
from wordsens.studies.probes.run import attention_table

TEXT = "the movie was great and the actors were very good but the plot was too slow i love her smile"


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    path = demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", hidden=32, layers=2, heads=4)
    return pretrained.load_encoder(str(path), "cpu", attentions=True)


def test_attracting_delta_captures_the_attention(bert):
    tokenizer, model = bert
    table = probes.layer_change_table(model, tokenizer, TEXT, 5, draws=10, seed=1)
    attract = table[table["kind"] == "attract"]
    gauss = table[table["kind"] == "gaussian"].drop_duplicates("draw")
    before, after = attract["attention_before"].iloc[0], attract["attention_after"].iloc[0]
    assert after >= 2 * before
    assert (gauss["attention_after"] < after).all()
    # every Delta has the moved row's norm
    with torch.no_grad():
        batch = tokenizer([TEXT], return_tensors="pt")
        h0 = model(**batch, output_hidden_states=True).hidden_states[0][0, 5]
    assert table["norm"].iloc[0] == pytest.approx(float(h0.norm()), rel=1e-5)
    assert np.isfinite(table["change"]).all() and (table["change"] >= 0).all()
    # layer 0 is the encoder's input: the change there is ||Delta|| / ||H_0||, the same for every Delta
    assert table[table["layer"] == 0]["change"].nunique() == 1 or np.allclose(
        table[table["layer"] == 0]["change"], attract[attract["layer"] == 0]["change"]
    )


def test_relative_changes_vanish_at_zero(bert):
    tokenizer, model = bert
    changes = probes.layer_changes(model, tokenizer, TEXT, 5, torch.zeros(32))
    assert changes.shape == (3,) and np.array_equal(changes, np.zeros(3))


def test_attention_maps(bert):
    tokenizer, model = bert
    full = probes.attention_map(model, tokenizer, "I love her smile", drop_special=False)
    assert full.tokens[0] == "[CLS]" and full.tokens[-1] == "[SEP]"
    np.testing.assert_allclose(full.matrix.sum(1), 1.0, rtol=1e-5)
    dropped = probes.attention_map(model, tokenizer, "I love her smile")
    assert dropped.tokens == ["i", "love", "her", "smile"] and dropped.matrix.shape == (4, 4)
    np.testing.assert_allclose(dropped.matrix, full.matrix[1:-1, 1:-1])
    one = probes.attention_map(model, tokenizer, "I love her smile", heads=[1], drop_special=False)
    assert not np.allclose(one.matrix, full.matrix)
    moved = probes.attention_map(
        model, tokenizer, "I love her smile", heads=[1], drop_special=False, position=2, delta=torch.ones(32)
    )
    assert not np.allclose(moved.matrix, one.matrix)


def test_bad_input(bert, tmp_path):
    tokenizer, model = bert
    with pytest.raises(ValueError, match="beyond the text"):
        probes.attract_delta(model, tokenizer, "too short", 41)
    with pytest.raises(ValueError, match="layer must be"):
        probes.attention_map(model, tokenizer, "I love her", layer=3)
    with pytest.raises(ValueError, match="heads must be"):
        probes.attention_map(model, tokenizer, "I love her", heads=[5])
    pool = pd.DataFrame({"text": ["a b c"], "tokens": [3], "review_id": [7]})
    with pytest.raises(ValueError, match="at least 200 tokens"):
        probes.pick_long_text(pool, 200)
    assert probes.pick_long_text(pool, 3) == ("a b c", 7)
    with pytest.raises(ValueError, match="norm must be"):
        probes.attract_delta(model, tokenizer, TEXT, 5, norm=-1.0)
    with pytest.raises(ValueError, match="position"):
        probes.attention_map(model, tokenizer, "I love her", delta=torch.ones(32))
    with pytest.raises(ValueError, match="heads must be"):
        probes.attention_map(model, tokenizer, "I love her", heads="first")


def test_a_model_without_attention_probabilities_is_refused(tmp_path):
    from transformers import AutoModel

    path = demo.make_tiny_bert(tmp_path / "sdpa", hidden=32, layers=1, heads=2)
    tokenizer, _ = pretrained.load_encoder(str(path), "cpu")
    model = AutoModel.from_pretrained(str(path), attn_implementation="sdpa")  # returns no attention probabilities
    with pytest.raises(ValueError, match="eager"):
        probes.attention_map(model, tokenizer, "I love her")
    with pytest.raises(ValueError, match="eager"):
        probes.attract_delta(model, tokenizer, "I love her smile", 2)


def test_causal_lm_answers(tmp_path, monkeypatch):
    path = demo.make_tiny_causal_lm(tmp_path / "lm")
    answers = probes.lm_answers(str(path), ["I love her smile", "I love her much"], max_new_tokens=6, device="cpu")
    assert len(answers) == 2 and all(answers)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # offline as Hugging Face decides it
    with pytest.raises(ValueError, match=r"probes.lm"):
        probes.lm_answers("no-such-org/no-such-lm", ["a", "b"])
    (tmp_path / "empty").mkdir()  # a local folder without a model
    with pytest.raises(ValueError, match=r"(?s)probes.lm.model .* as a tokenizer.*disable probes.lm"):
        probes.lm_answers(str(tmp_path / "empty"), ["a"])


FIG3 = {
    "text": TEXT,
    "min_tokens": 200,
    "token": 5,
    "norm": None,
    "gaussian_draws": 3,
    "steps": 20,
    "short_text": "I love her smile",
    "short_token": 2,
    "layer": 2,
    "head": 3,
}


def test_fig3_tables_are_the_probes_of_both_panels(bert):
    """The fig3_probes job's tables: panel 3 is layer_change_table on the text (no review), panel 4 the
    chosen head of the chosen layer before and after the attracting Delta of that layer."""
    tokenizer, model = bert
    layers, scores = probes.fig3_tables(model, tokenizer, FIG3, seed=4)
    expected = probes.layer_change_table(model, tokenizer, TEXT, 5, draws=3, steps=20, seed=4)
    pd.testing.assert_frame_equal(layers.drop(columns="review_id"), expected)
    assert layers["review_id"].isna().all()
    delta, _, _ = probes.attract_delta(model, tokenizer, "I love her smile", 2, layer=2, steps=20, seed=4)
    after = probes.attention_map(
        model, tokenizer, "I love her smile", layer=2, heads=[3], drop_special=False, position=2, delta=delta
    )
    assert list(pd.unique(scores["state"])) == ["before", "after"]
    moved = scores[scores["state"] == "after"]["attention"].to_numpy().reshape(after.matrix.shape)
    np.testing.assert_allclose(moved, after.matrix, rtol=1e-6)
    before = scores[scores["state"] == "before"]["attention"].to_numpy().reshape(after.matrix.shape)
    assert not np.allclose(before, moved)


def test_fig3_tables_read_panel_3_from_the_pool_without_a_text(bert):
    tokenizer, model = bert
    pool = pd.DataFrame({"text": ["too short", TEXT], "tokens": [2, 21], "review_id": [3, 9]})
    settings = {**FIG3, "text": None, "min_tokens": 20, "short_token": 1, "layer": 1}
    layers, _ = probes.fig3_tables(model, tokenizer, settings, pool=pool, seed=0)
    assert (layers["review_id"] == 9).all()
    with pytest.raises(ValueError, match=r"probes\.fig3\.text is null"):
        probes.fig3_tables(model, tokenizer, settings)
    with pytest.raises(ValueError, match="at least 30 tokens"):
        probes.fig3_tables(model, tokenizer, {**settings, "min_tokens": 30}, pool=pool)


def test_attention_maps_come_back_from_the_probes_table(tmp_path):
    """The probes write their maps as a table and the figure rules draw from it: the maps read back
    equal the ones written (through the CSV, tokens such as "null" kept as text), in label order."""
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
