"""The swaps study around the numerics (tests/unit/search/test_swaps.py has those): its jobs and checks
(wordsens.pipeline.swaps), the rows of a job (wordsens.experiments.swaps), the claims' rows
(wordsens.claims.swap_checks: continuous_covers_words holds and fails), the figure and the text table
(wordsens.plots.swaps), and ``wordsens swap``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from wordsens import NUMERICS_VERSIONS, pipeline
from wordsens.claims import compute_claims
from wordsens.compute import swap_costs
from wordsens.data import models
from wordsens.maps import registry

ROOT = Path(__file__).resolve().parents[3]
SMALL = pipeline.Limits(cpu=16 * 1024**3, gpu=None)


def _demo(changes: dict | None = None) -> dict:
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    config = pipeline.merge(base, yaml.safe_load((ROOT / "config" / "demo.yaml").read_text()))
    return pipeline.check(pipeline.merge(config, changes or {}))


# ----------------------------------------------------------------------------- the plan


def test_the_study_plans_one_job_per_map_and_n():
    config = _demo()
    grid = pipeline.Grid(config, limits=SMALL)
    jobs = grid.swaps()
    section = config["swaps"]
    in_order = [m for m in registry.names() if m in section["maps"]]  # the registry's order, then n
    assert [(j.map, j.n) for j in jobs] == [(m, n) for m in in_order for n in sorted(section["n"])]
    job = grid.job({"map": "raf", "setting": "d16_n8"})
    assert job in jobs and job.key == "swaps/raf/d16_n8" and job.family == "swaps:raf" and job.store is None
    assert job.rows == section["reviews"] * section["positions"]
    assert job.params["numerics_version"] == NUMERICS_VERSIONS["swaps"] and "chunk_mb" not in job.params
    # a checkpoint's map reads the encoder's first layer, its rows whole (d = the width)
    trained = grid.job({"map": "trained_attention", "setting": f"d{models.TINY_BERT_WIDTH}_n16"})
    assert trained.params["options"] == {"model": "demo-tiny-bert", "layer": 1}
    # every position of every n: n - 2 rows per review
    every = pipeline.Grid(_demo({"swaps": {"positions": "all"}}), limits=SMALL).job({"map": "rf", "setting": "d16_n16"})
    assert every.rows == section["reviews"] * 14 and every.seconds > 0
    # a change of what the numbers depend on re-runs the job; the chunks' memory does not
    other = pipeline.Grid(_demo({"swaps": {"top_k": 3}}), limits=SMALL).job({"map": "raf", "setting": "d16_n8"})
    assert other.params != job.params
    same = pipeline.Grid(_demo({"swaps": {"chunk_mb": 8}}), limits=SMALL).job({"map": "raf", "setting": "d16_n8"})
    assert same.params == job.params
    # the schedule: after the pool and the model, a table, a figure, the claims
    tasks = {task.name: task for task in pipeline.run_tasks(config, grid)}
    assert set(tasks[job.key].after) == {"pool", "demo_model"}
    assert set(tasks["swaps_figure"].after) == {"swaps_table"} and "swaps_table" in tasks["claims"].after


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"swaps": {"positions": 7}}, ["swaps.positions = 7 > the 6 word positions of the smallest n = 8"]),
        ({"swaps": {"n": [2, 8]}}, ["swaps.n has 2 < 3"]),
        ({"swaps": {"n": [8, 130]}}, ["swaps.n = 130 needs reviews of at least 128 words", "data.max_tokens"]),
        ({"swaps": {"d": 65}}, ["swaps.d = 65 exceeds the width 64"]),
        ({"swaps": {"reviews": 41}}, ["swaps.reviews = 41 > data.pool_size = 40"]),
        ({"swaps": {"options": {"trained_attention": {"layer": 2}}}}, ["swaps.options.trained_attention.layer = 2"]),
        ({"swaps": {"maps": ["raf", "nope"]}}, ["swaps.maps has unknown maps ['nope']"]),
    ],
)
def test_problems_name_the_key_and_the_fix(changes, words):
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(changes)
    assert all(word in str(info.value) for word in words), str(info.value)


def test_which_maps_are_scored_whole():
    """The maps with a cheap move always; the others while their vocabulary's forwards are cheap."""
    for name in ("rf", "raf", "relu_raf", "mh_raf", "sigmoid_raf", "linear_raf"):
        assert swap_costs.exhaustive(registry.get(name))
    drf, block = registry.get("drf"), registry.get("block")
    assert not swap_costs.exhaustive(drf)  # no sizes: not known to be cheap
    assert swap_costs.exhaustive(drf, 16, 16, {}, vocab=30_522)
    assert not swap_costs.exhaustive(drf, 50, 768, {}, vocab=30_522)
    assert not swap_costs.exhaustive(block, 128, 768, {"heads": 12}, vocab=30_522)
    per = swap_costs.candidate_flops(registry.get("rf"), 150, 768, {"k": None})
    assert per == pytest.approx(2 * 150 * 768 * 768 + 8 * 150 * 768)  # RF: 2 k d with k = n d
    assert swap_costs.chunk_size(registry.get("rf"), 150, 768, {}, chunk_mb=64, dtype="float32") >= 1024


# ----------------------------------------------------------------------------- the rows of a job


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from wordsens.data.demo import make_tiny_bert
    from wordsens.data.embed import load_encoder

    folder = make_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert")
    tokenizer, encoder = load_encoder(str(folder), "cpu")
    return folder, tokenizer, encoder


TEXTS = [
    "a great movie with a boring plot and superb acting , the best film i love and the worst waste of time",
    "the music was dull and the story silly but the actors were charming and funny in every scene here",
]


def _job(**changes):
    job = dict(
        map="raf", d=16, n=12, options={}, model="demo", reviews=2, positions=2, n_min=8, n_max=12, top_k=4,
        vocabulary="words", screen=16, sample=32, sqrt_d=True, max_steps=100, device="cpu", seed=0,
    )  # fmt: skip
    job.update(changes)
    return job


def test_a_jobs_rows(tiny, one_thread):
    from wordsens.experiments.swaps import swap_positions, swap_table

    folder, tokenizer, encoder = tiny
    pool = pd.DataFrame({"text": TEXTS, "review_id": [11, 12], "label": [1, 0]})
    frame = swap_table(tokenizer, encoder, pool, _job(), source=str(folder))
    assert len(frame) == 4 and list(frame["review_id"]) == [11, 11, 12, 12]
    assert set(frame["study"]) == {"swaps"} and frame["config_hash"].nunique() == 1
    # the positions: words below n_min - 1, seeded per review (the same for every map and n)
    ids = tokenizer(TEXTS[0])["input_ids"][:12]
    expected = swap_positions(ids, tokenizer.all_special_ids, count=2, n_min=8, seed=0)
    assert all(1 <= p <= 6 for p in frame["position"])
    assert swap_positions(ids, tokenizer.all_special_ids, count=2, n_min=8, seed=0) == expected
    more = swap_table(tokenizer, encoder, pool, _job(map="rf", n=16, n_max=16), source=str(folder))
    assert list(more["position"]) == list(frame["position"])
    row = frame.iloc[0]
    words = json.loads(row["top_words"])
    assert len(words) == 4 and words[0] == row["best_word"] and f"-> {row['best_word']}]" in row["context"]
    scores = json.loads(row["top_scores"])
    assert scores == sorted(scores, reverse=True) and scores[0] == pytest.approx(row["s_words"], rel=1e-6)
    assert row["vocab"] == row["stats_words"] + 1  # the original word is a candidate, not a substitution
    assert row["mean"] <= row["p99"] <= row["s_words"] and row["ratio"] == pytest.approx(
        row["s_words"] / row["continuous"]
    )
    assert 0 < row["radius"] <= 2 * math.sqrt(16) and math.isfinite(row["continuous_sqrt_d"])
    with pytest.raises(ValueError, match="positive integer or 'all'"):
        swap_positions(ids, [], count=0, n_min=8, seed=0)


# ----------------------------------------------------------------------------- claims


def _rows(continuous: list[float], reviews: int = 6) -> pd.DataFrame:
    rows = []
    for review in range(reviews):
        for k, cont in enumerate(continuous):
            rows.append(
                dict(
                    model="m", map="raf", d=16, n=8, review=review, position=k + 1, original="a", best_word="b",
                    s_words=0.4, continuous=cont, mean=0.1, exhaustive=True,
                )
            )  # fmt: skip
    return pd.DataFrame(rows)


def _claim(frame: pd.DataFrame, claim: str) -> pd.Series:
    out = compute_claims({"swaps": frame})
    (row,) = [r for _, r in out.iterrows() if r["claim"] == claim]
    return row


def test_continuous_covers_words_holds_and_fails():
    holds = _claim(_rows([0.5, 0.8]), "continuous_covers_words")
    assert holds["verdict"] == "holds" and holds["value"] == 0 and holds["units"] == 12
    # within the numerical tolerance: no miss
    assert _claim(_rows([0.4 / (1 + 1e-9)]), "continuous_covers_words")["verdict"] == "holds"
    missed = _rows([0.5, 0.8])
    missed.loc[3, "continuous"] = 0.39  # one row whose best word beats the continuous search
    fails = _claim(missed, "continuous_covers_words")
    assert fails["verdict"] == "fails" and fails["value"] == 1
    assert "review 1 position 2: a -> b S_words 0.4 > continuous 0.39" in fails["note"]


def test_the_ratios_are_reported_without_a_verdict():
    ratio = _claim(_rows([0.5, 0.8]), "swaps_ratio")
    assert ratio["verdict"] == "no claim" and ratio["scope"] == "d=16, n=8"
    assert ratio["value"] == pytest.approx(np.mean([0.4 / 0.5, 0.4 / 0.8]))
    assert ratio["ci_low"] == pytest.approx(ratio["value"])  # every review alike: a zero-width interval
    assert _claim(_rows([0.5]), "swaps_mean_ratio")["value"] == pytest.approx(0.25)
    assert _claim(_rows([0.5], reviews=2), "swaps_ratio")["verdict"] == "no claim"  # too few reviews: no interval
    absent = compute_claims({})
    assert set(absent.loc[absent["claim"].str.startswith(("swaps", "continuous")), "verdict"]) == {"not run"}


# ----------------------------------------------------------------------------- figure, text, command line


def test_the_figure_and_the_text(tmp_path, tiny, one_thread):
    from wordsens.experiments.swaps import swap_table
    from wordsens.plots import swaps_figure, swaps_text

    folder, tokenizer, encoder = tiny
    pool = pd.DataFrame({"text": TEXTS, "review_id": [11, 12], "label": [1, 0]})
    frames = [
        swap_table(tokenizer, encoder, pool, _job(map=m, n=n, n_max=16), source=str(folder))
        for m in ("raf", "drf")
        for n in (8, 16)
    ]
    table = pd.concat(frames, ignore_index=True)
    fig = swaps_figure(table, [tmp_path / "fig.png"], left_out=[{"map": "raf", "d": 16, "n": 32, "needs_gb": 99}])
    assert (tmp_path / "fig.png").stat().st_size > 0 and len(fig.axes) == 2
    text = swaps_text(table, tmp_path / "top.md", top=2, stamp="toy demo")
    assert (tmp_path / "top.md").read_text() == text and "*toy demo*" in text
    assert text.count("## ") == 4 and f"[{table['original'].iloc[0]} -> " in text


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
