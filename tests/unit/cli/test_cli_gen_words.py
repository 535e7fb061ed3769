"""``wordsens gen-words`` on the demo's tiny BERT and generated corpus: the text and JSON outputs, and its
errors (a position at [CLS], [SEP] or beyond n, ``--n`` beyond the encoder's positions, a model folder
without tokenizer files). The numerics: tests/unit/generalisation/test_gen_words.py."""

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
    for position, message in (("0", "holds [CLS], not a word"), ("11", "holds [SEP]"), ("12", "outside the n = 12")):
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
    assert "without tokenizer files" in capsys.readouterr().err
