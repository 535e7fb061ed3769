"""``wordsens swap`` as a user reads it: the printed seed redraws the weights that gave the answer, the
sample is the studies' sample (the embedding step's first n rows), and bad input names its cause
(a model folder without tokenizer files, a special token's position, n beyond the encoder's
positions). The top words as text and JSON: tests/unit/cli/test_cli_commands.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from wordsens import maps
from wordsens.cli import main
from wordsens.data import demo
from wordsens.data.embed import encode, hidden_states
from wordsens.data.pretrained import load_encoder
from wordsens.data.samples import normalise
from wordsens.data.vocabulary import EmbeddingLayer, review_tokens

pytestmark = pytest.mark.usefixtures("one_thread")

# 23 words of the demo's vocabulary: longer than every n below, so that row n-1 is a word
TEXT = "a great movie with a boring plot and superb acting , the best film i love and the worst waste of time"
N, D, POSITION = 12, 16, 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The demo's tiny random BERT (512 positions), its tokenizer and encoder."""
    folder = demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny")
    tokenizer, encoder = load_encoder(str(folder), "cpu")
    return str(folder), tokenizer, encoder


def _swap(model: str, *extra: str) -> list[str]:
    common = ["--top", "3", "--device", "cpu", "--max-steps", "40"]
    return ["swap", "--map", "raf", "--d", str(D), "--n", str(N), "--model", model, "--text", TEXT, *common, *extra]


def _relative_change(X: torch.Tensor, row: torch.Tensor, position: int, W: torch.Tensor) -> tuple[float, float]:
    """RAF's ``||phi(X') - phi(X)|| / ||phi(X)||`` for row ``position`` of X replaced by ``row``, and ``||phi(X)||``."""
    moved = X.clone()
    moved[position] = row
    base = maps.raf(X, W)
    return float(torch.linalg.vector_norm(maps.raf(moved, W) - base) / torch.linalg.vector_norm(base)), float(
        torch.linalg.vector_norm(base)
    )


def test_the_printed_seed_redraws_the_weights_of_the_answer(tiny, capsys):
    """``seed`` in the JSON is the weights' seed: RAF's weights drawn from it give the best word's S_words
    and ||phi(X)|| by a plain forward (float64), whatever ``--seed`` was."""
    folder, tokenizer, encoder = tiny
    assert main([*_swap(folder, "--position", str(POSITION), "--seed", "5", "--json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seed"] != 5  # derived from --seed, the map and the review, as in the study's table
    layer = EmbeddingLayer.of(encoder)
    X = layer.sample(review_tokens(tokenizer, TEXT, N), D)
    W = maps.sample_weights("raf", out["seed"], N, D, dtype=torch.float64)
    best = tokenizer.convert_tokens_to_ids(out["best_word"])
    s_words, phi_norm = _relative_change(X, layer.rows([best], POSITION, D)[0], POSITION, W)
    assert math.isclose(out["phi_norm"], phi_norm, rel_tol=1e-6)
    assert math.isclose(out["s_words"], s_words, rel_tol=1e-6)


@pytest.mark.parametrize("n", [8, 12, 20])
def test_a_reviews_sample_is_the_embedding_steps_first_n_rows(tiny, n):
    """``review_tokens`` (the swaps study's and ``wordsens swap``'s sample) against the embedding step at
    the demo's max_length 48: the same ids (row n-1 a word of the review, not [SEP]) and the same rows."""
    _, tokenizer, encoder = tiny
    ids = review_tokens(tokenizer, TEXT, n)
    stored = encode(tokenizer, [TEXT], 48)["input_ids"][0]
    assert ids == [int(i) for i in stored[:n]]
    assert ids[-1] not in tokenizer.all_special_ids
    hidden, _ = hidden_states(tokenizer, encoder, [TEXT], layer=0, max_length=48, dtype=np.float64, progress=False)
    assert torch.allclose(EmbeddingLayer.of(encoder).sample(ids, D), normalise(hidden[0], n, D), atol=1e-5)
    # a review shorter than n: [SEP], then [PAD], as the embedding step pads it
    short = review_tokens(tokenizer, "a great movie", n)
    assert short == [int(i) for i in encode(tokenizer, ["a great movie"], 48)["input_ids"][0][:n]]
    assert short[4] == tokenizer.sep_token_id and short[-1] == tokenizer.pad_token_id


def test_the_cli_scores_the_sample_of_the_embedding_store(tiny, capsys):
    """The CLI's ||phi(X)|| and S_words on the embedding step's sample (hidden states at max_length 48, first
    n rows) with the printed seed's weights: the CLI and the studies read one sample."""
    folder, tokenizer, encoder = tiny
    assert main([*_swap(folder, "--position", str(N - 1), "--json")]) == 0
    out = json.loads(capsys.readouterr().out)
    hidden, _ = hidden_states(tokenizer, encoder, [TEXT], layer=0, max_length=48, dtype=np.float64, progress=False)
    X = normalise(hidden[0], N, D)
    W = maps.sample_weights("raf", out["seed"], N, D, dtype=torch.float64)
    best = tokenizer.convert_tokens_to_ids(out["best_word"])
    s_words, phi_norm = _relative_change(X, EmbeddingLayer.of(encoder).rows([best], N - 1, D)[0], N - 1, W)
    assert out["original"] == tokenizer.convert_ids_to_tokens(review_tokens(tokenizer, TEXT, N))[N - 1] != "[SEP]"
    # the model runs in float32: its layer 0 against the float64 formula (1e-5)
    assert math.isclose(out["phi_norm"], phi_norm, rel_tol=1e-4)
    assert math.isclose(out["s_words"], s_words, rel_tol=1e-4)


def test_a_model_folder_without_tokenizer_files_is_named(tiny, tmp_path, capsys):
    folder = demo.make_tiny_bert(tmp_path / "bare", hidden=32, layers=1, heads=2)
    for path in folder.iterdir():
        if path.name not in ("config.json", "model.safetensors"):
            path.unlink()
    assert main(_swap(str(folder))) == 2
    err = capsys.readouterr().err
    assert f"the tokenizer files are missing from {folder}" in err and "config.json, model.safetensors" in err
    assert "tokenizer.save_pretrained" in err and "--model" in err


def test_special_tokens_positions_are_refused(tiny, capsys):
    """[CLS] at 0 and [SEP] after a short review's last word: the study never moves them; a word's
    position at the sample's end (row n-1 of a longer review) is a word and is scored."""
    folder, tokenizer, _ = tiny
    assert main(_swap(folder, "--position", "0")) == 2
    assert "--position 0 holds the special token [CLS], not a word" in capsys.readouterr().err
    short = "a great movie with a boring plot"
    length = len(tokenizer(short)["input_ids"])  # [CLS] 7 words [SEP]
    args = _swap(folder, "--position", str(length - 1))
    args[args.index("--text") + 1], args[args.index("--n") + 1] = short, str(length)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"--position {length - 1} holds the special token [SEP]" in err and f"between 1 and {length - 2}" in err


def test_n_beyond_the_encoders_positions_names_n(tmp_path, capsys):
    folder = demo.make_tiny_bert(tmp_path / "short", hidden=32, layers=1, heads=2, max_positions=32)
    args = _swap(str(folder))
    args[args.index("--text") + 1] = " ".join([TEXT] * 3)  # 69 words: longer than --n
    args[args.index("--n") + 1] = "40"
    assert main(args) == 2
    assert "--n 40 exceeds the encoder's 32 positions" in capsys.readouterr().err
