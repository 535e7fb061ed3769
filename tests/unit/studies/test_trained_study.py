"""The trained study's job (``wordsens.studies.trained.run.layer_rows``, rule ``trained``): the reviews it
picks, the samples it searches and the rows it writes, against the planner's count
(``wordsens.studies.trained.TrainedJob.rows``), on the demo's tiny random BERT."""

from __future__ import annotations

import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline
from wordsens.data import models
from wordsens.studies.trained import NUMERICS
from wordsens.studies.trained import jobs as trained_jobs

LONG = "a good film with a great cast and a sad story " * 3
SHORT = "bad film"


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


def test_pick_reviews_takes_the_first_long_enough_and_says_what_is_missing(tiny_bert):
    from wordsens.data import pretrained
    from wordsens.data.reviews import pick_reviews

    tokenizer, _ = pretrained.load_encoder(tiny_bert, "cpu")
    texts = [SHORT, LONG, SHORT, "the worst movie, bad acting and a dull plot " * 3, LONG]
    assert pick_reviews(tokenizer, texts, n=10, count=2, section="trained") == [1, 3]
    # "[CLS] bad film [SEP]": 4 tokens, [CLS] and [SEP] included
    assert pick_reviews(tokenizer, texts, n=4, count=5, section="trained") == [0, 1, 2, 3, 4]
    assert pick_reviews(tokenizer, texts, n=5, count=1, section="trained") == [1]
    with pytest.raises(ValueError, match=r"only 3 of 5 reviews have at least n = 10 tokens, 4 needed: .*trained\.n"):
        pick_reviews(tokenizer, texts, n=10, count=4, section="trained")


def test_layer_rows_are_trained_rows_of_every_sample_and_as_many_as_the_plan_says(tiny_bert, tmp_path):
    from wordsens.data import pretrained
    from wordsens.studies.trained.run import layer_inputs, layer_rows, trained_rows

    tokenizer, encoder = pretrained.load_encoder(tiny_bert, "cpu")
    texts = [LONG, "the worst movie, bad acting and a dull plot " * 3]
    settings = {
        "n": [6, 10],
        "reviews": 2,
        "conventions": ["paper", "model"],
        "maps": ["trained_attention", "trained_layer"],
        "positions": 1,
        "specials": False,
        "draws": 1,
        "head_n": 10,
        "head_reviews": 1,
        "word_keys": False,
    }
    rows = layer_rows(
        tokenizer,
        encoder,
        texts,
        model=tiny_bert,
        layer=2,
        ns=settings["n"],
        conventions=settings["conventions"],
        positions=settings["positions"],
        specials=settings["specials"],
        draws=settings["draws"],
        head_n=settings["head_n"],
        head_reviews=settings["head_reviews"],
        seed=5,
        max_steps=10,
    )
    # the planner's count for the same settings (the aggregation refuses a file of another length)
    config = pipeline.validate(demo_config({"trained": {**settings, "max_steps": 10}}, check=False))
    (job, _) = trained_jobs(config, compute.Limits(cpu=2**34, gpu=None), NUMERICS[1])
    # per sample: (1 + 1 draw) attention + (1 + 2 x 1) layer in the paper's, (1 + 1) + (1 + 1) at the model's scale,
    # at 1 moved row; 2 reviews, 2 n; and one row per head
    assert len(rows) == job.rows == 9 * 2 * 2 + models.TINY_BERT_HEADS
    # each sample's rows are those of trained_rows on the hidden states entering layer 2
    X = layer_inputs(tokenizer, encoder, texts, layer=2, n=6, normalise=False)
    expected = trained_rows(
        X[1], model=tiny_bert, layer=2, heads=4, seed=5, review=1, positions=1, specials=False, draws=1, max_steps=10
    )
    got = [r for r in rows if r["n"] == 6 and r["review"] == 1]
    assert [(r["convention"], r["map"], r["position"]) for r in got] == [
        (r["convention"], r["map"], r["position"]) for r in expected
    ]
    assert [r["ws"] for r in got] == pytest.approx([r["ws"] for r in expected], rel=1e-9)
    # every head alone at head_n, paper convention, on the first review only, at its first word row
    heads = [(r["head"], r["n"], r["review"], r["convention"], r["token"]) for r in rows if r["head"] > 0]
    assert heads == [(h, 10, 0, "paper", "word") for h in range(1, models.TINY_BERT_HEADS + 1)]
    paper = [r for r in rows if r["convention"] == "paper"]
    assert all(r["row_norm"] == pytest.approx(8.0) and r["radius"] == pytest.approx(8.0) for r in paper)


def test_the_plan_refuses_more_word_rows_than_the_smallest_sample_has():
    pipeline.validate(demo_config({"trained": {"n": [8, 16], "positions": 6}}, check=False))  # 6 words at n = 8
    with pytest.raises(pipeline.ConfigError, match=r"trained.positions = 7 > the 6 word rows of a sample at n = 8"):
        pipeline.validate(demo_config({"trained": {"n": [8, 16], "positions": 7}}, check=False))
    with pytest.raises(pipeline.ConfigError, match=r"trained\.normalise"):
        pipeline.validate(demo_config({"trained": {"normalise": [True]}}, check=False))


def test_word_keys_double_the_word_rows_in_the_plan_and_are_a_param_only_when_on():
    """``trained.word_keys``: every word row searched again on the sample without [CLS] and [SEP] (the
    rows ``trained_rows`` writes with ``keys`` "words"); off (the default) it is no param, so turning the
    key on re-runs the layers, and a run without it re-runs nothing."""
    section = {"n": [6, 10], "reviews": 2, "positions": 1, "specials": True, "draws": 1, "head_n": None}
    section["word_keys"] = False  # the demo's is on

    def job(**extra):
        config = pipeline.validate(demo_config({"trained": {**section, **extra}}, check=False))
        return trained_jobs(config, compute.Limits(cpu=2**34, gpu=None), NUMERICS[1])[0]

    plain, words = job(), job(word_keys=True)
    assert "word_keys" not in plain.params and words.params["word_keys"] is True
    # per sample 9 searches (see above) at 1 word row and 2 specials; word_keys adds the word row once more
    assert plain.rows == 9 * 3 * 2 * 2 and words.rows == 9 * 4 * 2 * 2
    assert words.cost.seconds > plain.cost.seconds
