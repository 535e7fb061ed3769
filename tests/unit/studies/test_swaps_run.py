"""The swaps study around the numerics (tests/unit/search/test_swaps.py has those): the rows of a job
(wordsens.studies.swaps.run) on a tiny BERT, and the figure and the text table made from them
(wordsens.studies.swaps.figure).

Its plan: test_swaps_plan.py; its claims: test_swaps_claims.py; ``wordsens swap``: test_swaps_cli.py and
tests/unit/cli/test_cli_commands.py."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from wordsens.studies.swaps import NUMERICS, SwapJob

# ----------------------------------------------------------------------------- the rows of a job


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from wordsens.data.demo import make_tiny_bert
    from wordsens.data.pretrained import load_encoder

    folder = make_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert")
    tokenizer, encoder = load_encoder(str(folder), "cpu")
    return folder, tokenizer, encoder


TEXTS = [
    "a great movie with a boring plot and superb acting , the best film i love and the worst waste of time",
    "the music was dull and the story silly but the actors were charming and funny in every scene here",
]


def _job(**changes) -> SwapJob:
    job = dict(
        map="raf", d=16, n=12, options={}, model="demo", reviews=2, positions=2, n_min=8, n_max=12, top_k=4,
        vocabulary="words", screen=16, sample=32, sqrt_d=True, max_steps=100, device="cpu", seed=0,
        numerics_version=NUMERICS[1],
    )  # fmt: skip
    job.update(changes)
    return SwapJob(study="swaps", **job)


def test_a_jobs_rows(tiny, one_thread):
    from wordsens.data.vocabulary import swap_positions
    from wordsens.studies.swaps.run import swap_table

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


# ----------------------------------------------------------------------------- figure and text


def test_the_figure_and_the_text(tmp_path, tiny, one_thread):
    from wordsens.studies.swaps.figure import swaps_figure, swaps_text
    from wordsens.studies.swaps.run import swap_table

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
