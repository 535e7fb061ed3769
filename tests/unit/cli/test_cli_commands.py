"""The ``wordsens`` commands that run a search: ``wordsens ws`` prints one JSON line and refuses bad input
clearly, ``wordsens gen`` prints one JSON line, ``wordsens ws`` runs a trained map offline (on the demo's tiny
BERT), each in a fresh process; ``wordsens swap`` prints the top words as text and JSON.
``wordsens claims``, ``maps`` and a plugin's map: test_cli.py."""

from __future__ import annotations

import json

import pytest
from workflow_utils import run_cli


def test_cli_prints_one_json_line():
    out = run_cli("ws", "--map", "raf", "--d", 8, "--n", 5, "--seed", 2)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    for key in ("lower", "upper", "steps", "seconds", "peak_memory_mb", "map", "n", "d", "seed", "method"):
        assert key in row
    assert row["map"] == "raf" and row["n"] == 5 and row["d"] == 8 and row["lower"] > 0


@pytest.mark.slow  # CLI processes (torch start-up each)
def test_cli_errors_are_clear():
    out = run_cli("ws", "--map", "rf", "--d", 4, "--n", 3, "--position", 7)
    assert out.returncode == 2 and "position" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("ws", "--map", "rf", "--d", 0, "--n", 3)
    assert out.returncode == 2 and "positive integer" in out.stderr
    out = run_cli("ws", "--map", "rf", "--d", 4, "--n", 3, "--data", "/nonexistent/store")
    assert out.returncode == 2 and "no embedding store" in out.stderr


@pytest.mark.slow  # a CLI process
def test_cli_gen_prints_one_json_line():
    import json

    retrain = ("gen", "--map", "raf", "--n", 6, "--N", 10, "--d", 8, "--training", "retrain")
    out = run_cli(*retrain, "--loss", "penalised", "--penalty", 0.5, "--seed", 3)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    for key in ("t0", "t1", "D0", "D1", "err", "gamma_min", "steps", "seconds", "peak_memory_mb", "N", "penalty"):
        assert key in row
    assert row["err"] == pytest.approx((row["D1"] + row["y"]) ** 2)
    bad = run_cli(*retrain, "--loss", "direct", "--penalty", 0.5)
    assert bad.returncode == 2 and "penalised" in bad.stderr


@pytest.mark.slow
def test_cli_runs_a_trained_map_offline(tiny_bert):
    common = ["--n", "5", "--option", f"model={tiny_bert}", "--max-steps", "60", "--device", "cpu"]
    out = run_cli("ws", "--map", "trained_attention", "--option", "layer=2", "--d", "64", *common)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["map"] == "trained_attention" and result["options"]["layer"] == 2 and result["lower"] > 0
    bad = run_cli("ws", "--map", "trained_layer", "--d", 32, *common)
    assert bad.returncode != 0 and "set d = 64" in bad.stderr


TEXTS = [
    "a great movie with a boring plot and superb acting , the best film i love and the worst waste of time",
    "the music was dull and the story silly but the actors were charming and funny in every scene here",
]


def test_wordsens_swap_prints_the_top_words(tmp_path, one_thread, capsys):
    from wordsens.cli import main

    args = ["swap", "--map", "raf", "--d", "16", "--n", "12", "--model", "demo-tiny-bert", "--text", TEXTS[0]]
    common = [*args, "--position", "3", "--top", "3", "--cache", str(tmp_path), "--device", "cpu", "--max-steps", "50"]
    assert main(common) == 0
    text = capsys.readouterr().out
    assert "rank  word" in text and "continuous word sensitivity at the best word's radius" in text
    assert main([*common, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["position"] == 3 and len(out["top_words"]) == 3 and out["exhaustive"] is True
    assert out["ratio"] == pytest.approx(out["s_words"] / out["continuous"])
    assert main([*args, "--position", "12", "--cache", str(tmp_path)]) == 2
    assert "outside the n = 12 tokens" in capsys.readouterr().err
