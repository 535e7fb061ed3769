"""``wordsens gen-words`` on the demo's tiny BERT and generated corpus: the text and JSON outputs, and its
errors (a position at [CLS], [SEP], [PAD] or beyond n, ``--n`` beyond the encoder's positions, a model
folder without tokenizer files, too few distinct reviews). The numerics:
tests/unit/generalisation/test_gen_words.py."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS_ARGS = ["--d", "16", "--n", "12", "--N", "30", "--model", "demo-tiny-bert", "--data", "demo"]


def test_wordsens_gen_words_prints_the_best_words(tmp_path, capsys):
    from wordsens.cli import main

    common = ["gen-words", "--map", "raf", *TEXTS_ARGS, "--cache", str(tmp_path), "--top", "3"]
    assert main([*common, "--restarts", "4", "--max-steps", "40"]) == 0
    text = capsys.readouterr().out
    assert "best word" in text and "continuous at [CLS]" in text and "frontier (gamma_min, Err)" in text
    assert main([*common, "--words-only", "--json", "--position", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["words"] == out["vocab"] > 50 and out["position"] == 2
    assert {r["setting"] for r in out["rows"]} == {"words"} and len(out["rows"]) == 10
    assert set(out["frontiers"]) == {"fine_tune", "retrain"}
    # row n - 1 is the review's word (the embedding step's sample: a review longer than n), never [SEP]
    for position, message in (("0", "holds [CLS], not a word"), ("12", "outside the n = 12")):
        assert main([*common, "--words-only", "--position", position]) == 2
        assert message in capsys.readouterr().err
    assert main(["gen-words", "--map", "raf", *TEXTS_ARGS, "--cache", str(tmp_path), "--n", "4096"]) == 2
    assert "--n 4096 is beyond the encoder's" in capsys.readouterr().err
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((tmp_path / "models" / "demo-tiny-bert" / name).read_bytes())
    argv = ["gen-words", "--map", "raf", *TEXTS_ARGS, "--cache", str(tmp_path), "--model", str(folder)]
    assert main(argv) == 2
    assert "the tokenizer files are missing" in capsys.readouterr().err


def test_a_word_position_is_checked_before_any_work(tmp_path):
    """[CLS], [SEP] and [PAD] are refused by name, with the sample's word positions; a task needs N + 1
    distinct reviews."""
    from wordsens.data.demo import make_tiny_bert
    from wordsens.data.pretrained import load_encoder
    from wordsens.data.vocabulary import EmbeddingLayer, review_tokens
    from wordsens.studies.gen_words.run import check_word_position, word_task

    tokenizer, encoder = load_encoder(str(make_tiny_bert(tmp_path / "bert")), "cpu")
    ids = review_tokens(tokenizer, "a great movie", 8)  # [CLS] a great movie [SEP] [PAD] [PAD] [PAD]
    check_word_position(tokenizer, ids, 3)
    for position, token in ((0, "[CLS]"), (4, "[SEP]"), (6, "[PAD]")):
        with pytest.raises(ValueError, match=rf"position {position} holds \{token}, not a word.*1\.\.3"):
            check_word_position(tokenizer, ids, position)
    layer = EmbeddingLayer.of(encoder)
    texts, labels = ["a great movie", "a dull film", "a great movie"], [1, 0, 1]
    task = word_task(tokenizer, layer, texts, labels, review=0, N=1, n=8, d=16, seed=0)
    assert task.train == [1] and task.y == 1.0 and float(task.y_train[0]) == -1.0
    with pytest.raises(ValueError, match="only 1 samples distinct"):
        word_task(tokenizer, layer, texts, labels, review=0, N=2, n=8, d=16, seed=0)
