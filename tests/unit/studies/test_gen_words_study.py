"""The gen_words study (wordsens.studies.gen_words) around its numerics (tests/unit/generalisation/test_gen_words.py
has those): its plan and checks, the rows of a job on the demo's tiny BERT (one review, training set and word
position per simulation index for every map), its claims -- the reach rates against an independent count and
the paired RF-RAF comparison on a case where it must hold and one where it must fail -- and its figures and
text. ``wordsens gen-words``: tests/unit/cli/test_cli_gen_words.py; the study in a workflow:
tests/workflow/test_workflow.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline
from wordsens.studies import bound, numerics_versions

SMALL = compute.Limits(cpu=16 * 1024**3, gpu=None)

# ----------------------------------------------------------------------------- the plan


def test_the_study_plans_one_job_per_map_n_N_and_chunk():
    config = demo_config({"gen_words": {"simulations": 5, "simulations_per_job": 2, "N": [6, 10]}})
    grid = pipeline.Grid(config, limits=SMALL)
    jobs = grid.tables()["gen_words"]
    # the registry's order (rf before raf), then n, N and the chunks of 2 + 2 + 1 simulations
    assert [(j.map, j.N, j.simulations) for j in jobs][:3] == [
        ("rf", 6, (0, 1)),
        ("rf", 6, (2, 3)),
        ("rf", 6, (4,)),
    ]
    assert len(jobs) == 2 * 2 * 3 and {j.map for j in jobs} == {"rf", "raf"}
    job = grid.job({"map": "raf", "setting": "n8_N10_d16", "chunk": "1"})
    assert job.key == "gen_words/raf/n8_N10_d16/chunk1" and job.d == config["gen"]["d"]
    assert job.params["numerics_version"] == numerics_versions()["gen_words"] and "chunk_mb" not in job.params
    # per simulation: 2 trainings x (surrogate, direct, 2 penalties) x (the words + 3 continuous settings)
    assert job.rows == 2 * 2 * 4 * 4 and job.cost.seconds > 0 and job.cost.host_bytes > 0
    # what the numbers depend on re-runs a job; the chunks' memory does not
    other = pipeline.Grid(demo_config({"gen_words": {"top_k": 3}}), limits=SMALL).job(
        {"map": "raf", "setting": "n8_N10_d16", "chunk": "0"}
    )
    same = pipeline.Grid(demo_config({"gen_words": {"chunk_mb": 8}}), limits=SMALL).job(
        {"map": "raf", "setting": "n8_N10_d16", "chunk": "0"}
    )
    base = pipeline.Grid(demo_config(), limits=SMALL).job({"map": "raf", "setting": "n8_N10_d16", "chunk": "0"})
    assert other.params != base.params and same.params == base.params
    # the schedule: after the pool and the model, a table, a figure, the claims
    config = demo_config()
    tasks = {task.name: task for task in pipeline.run_tasks(config, pipeline.Grid(config, limits=SMALL))}
    assert set(tasks[base.key].after) == {"pool", "demo_model"}
    assert set(tasks["gen_words_figure"].after) == {"table gen_words"} and "table gen_words" in tasks["claims"].after


def test_paper_takes_the_maps_and_n_of_figures_4_and_5():
    from wordsens.studies.gen_words import gen_words_maps

    config = demo_config({"gen_words": {"maps": "paper"}})
    assert gen_words_maps(config) == {"rf": [8], "raf": [8, 12], "relu_raf": [8, 12]}
    assert not pipeline.Grid(demo_config({"gen_words": None}), limits=SMALL).tables().get("gen_words")


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"gen_words": {"maps": {"raf": [2]}}}, ["gen_words.maps.raf has n = 2 < 3"]),
        ({"gen_words": {"maps": {"raf": [130]}}}, ["n = 130 needs reviews of at least 128 words", "data.max_tokens"]),
        ({"gen_words": {"N": [40]}}, ["gen_words.N = 40 needs data.pool_size >= 41"]),
        ({"gen_words": {"d": 65}}, ["gen_words.d = 65 > the model width 64"]),
        ({"gen_words": {"options": {"drf": {"L": 3}}}}, ["gen_words.options.drf: the study runs no drf"]),
        ({"gen_words": {"maps": {"nope": [8]}}}, ["nope"]),
        ({"gen_words": {"vocabulary": "all"}}, ["gen_words.vocabulary"]),
    ],
)
def test_problems_name_the_key_and_the_fix(changes, words):
    with pytest.raises(pipeline.ConfigError) as info:
        demo_config(changes)
    assert all(word in str(info.value) for word in words), str(info.value)


# ----------------------------------------------------------------------------- the rows of a job


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from wordsens.data.demo import make_corpus, make_tiny_bert
    from wordsens.data.pretrained import load_encoder

    root = tmp_path_factory.mktemp("gen_words")
    tokenizer, encoder = load_encoder(str(make_tiny_bert(root / "bert")), "cpu")
    texts, labels = [], []
    for label, folder in ((0, "neg"), (1, "pos")):
        for path in sorted((make_corpus(root / "corpus", per_label=12) / "train" / folder).glob("*.txt")):
            texts.append(path.read_text(encoding="utf-8"))
            labels.append(label)
    pool = pd.DataFrame({"text": texts, "label": labels, "review_id": range(100, 100 + len(texts))})
    return tokenizer, encoder, pool


def _settings(**changes):
    from wordsens.studies.gen_words import GenWordsJob

    values = dict(
        map="raf", options={}, n=8, N=10, d=16, simulations=(0, 1), model="demo", penalties=(1.0,),
        continuous=True, vocabulary="words", top_k=3, search={"restarts": 4, "max_steps": 40},
        device="cpu", seed=0, numerics_version="gen_words-1",
    )  # fmt: skip
    values.update(changes)
    return GenWordsJob(study="gen_words", **values)


def test_a_jobs_rows_pair_the_maps_by_simulation(tiny, one_thread):
    """Per simulation and (training, loss, penalty): the words' row and the three continuous rows; a
    simulation index is one review, training set and word position for every map, the weights the map's;
    ``reaches`` says whether the words' frontier (or the continuous move) has Err < 1 at gamma_min <= 1."""
    from wordsens.studies.gen_words.run import words_table

    tokenizer, encoder, pool = tiny
    raf = words_table(tokenizer, encoder, pool, _settings())
    rf = words_table(tokenizer, encoder, pool, _settings(map="rf", simulations=(1,)))
    assert len(raf) == 2 * 2 * 3 * 4 and set(raf["setting"]) == {"words", "cls", "position", "word_radius"}
    assert set(raf["loss"]) == {"surrogate", "direct", "penalised"} and (raf["model"] == "demo").all()
    head = ["review_id", "position", "original", "context", "y"]
    one = raf[raf["simulation"] == 1][head].drop_duplicates()
    assert len(one) == 1 and one.equals(rf[head].drop_duplicates().set_axis(one.index))
    assert raf.groupby("simulation")["review_id"].nunique().eq(1).all()
    assert raf.loc[raf["simulation"] == 0, "review_id"].iloc[0] != raf.loc[raf["simulation"] == 1, "review_id"].iloc[0]
    assert set(raf["seed"]) != set(rf["seed"])  # the weights: a seed of the map
    words = raf[raf["setting"] == "words"]
    assert (words["frontier_err_at_1"] <= words["err"].where(words["gamma_min"] <= 1, np.inf) + 1e-12).all()
    assert words["reaches"].equals(words["frontier_err_at_1"] < 1)
    continuous = raf[raf["setting"] != "words"]
    assert continuous["reaches"].equals((continuous["err"] < 1) & (continuous["gamma_min"] <= 1))
    assert all(len(json.loads(t)) == 3 for t in words["top_words"])
    # the same settings give the same numbers
    again = words_table(tokenizer, encoder, pool, _settings(simulations=(1,)))
    assert np.array_equal(again["err"].to_numpy(), raf[raf["simulation"] == 1]["err"].to_numpy(), equal_nan=True)


# ----------------------------------------------------------------------------- the claims


def _claim_frame(a_rf: list[float], a_raf: list[float], *, reach: dict | None = None) -> pd.DataFrame:
    """A gen_words table of len(a_rf) paired simulations: the surrogate words' alignments given, the other
    rows filler; ``reach``: (map, setting) -> the simulations whose some row reaches."""
    rows = []
    for m, values in (("rf", a_rf), ("raf", a_raf)):
        for s, a in enumerate(values):
            for training in ("fine_tune", "retrain"):
                for loss in ("surrogate", "direct"):
                    for setting in ("words", "cls", "position", "word_radius"):
                        hit = s in (reach or {}).get((m, setting), ()) and loss == "direct"
                        point = {"model": "bert", "map": m, "d": 768, "n": 40, "N": 400, "simulation": s}
                        row = {"training": training, "loss": loss, "penalty": 0.0, "setting": setting}
                        a_row = a if loss == "surrogate" else 0.5
                        rows.append({**point, **row, "alignment": a_row, "reaches": hit, "radius": 1.4 * 768**0.5})
    return pd.DataFrame(rows)


def _claims(frame):
    from wordsens.studies.claims import compute_claims

    table = compute_claims({"gen_words": frame})
    return table[table["claim"].str.startswith("gen_words")]


def test_the_reach_rate_counts_simulations():
    """The rate of simulations where some row reaches, with its exact binomial interval; reported."""
    from wordsens.claims.intervals import clopper_pearson

    frame = _claim_frame([0.9] * 4, [0.2] * 4, reach={("raf", "words"): {0, 2}, ("rf", "cls"): {1}})
    reach = _claims(frame).query("claim == 'gen_words_reach'")
    assert len(reach) == 2 * 2 * 4 and set(reach["verdict"]) == {"no claim"}
    row = reach[(reach["map"] == "raf") & (reach["scope"] == "d=768, n=40, N=400, retrain, words")].iloc[0]
    expected = clopper_pearson(2, 4)
    assert row["value"] == 0.5 and row["units"] == 4 and row["note"] == "2 of 4 simulations"
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.low, expected.high))
    assert reach[(reach["map"] == "rf") & reach["scope"].str.endswith("cls")]["value"].tolist() == [0.25, 0.25]
    assert reach[(reach["map"] == "rf") & reach["scope"].str.endswith("words")]["value"].tolist() == [0.0, 0.0]


def test_rf_above_raf_holds_where_raf_separates_and_fails_where_rf_does():
    rng = np.random.default_rng(0)
    a_rf, a_raf = list(0.95 + 0.02 * rng.standard_normal(6)), list(0.3 + 0.1 * rng.standard_normal(6))
    holds = _claims(_claim_frame(a_rf, a_raf)).query("claim == 'gen_words_rf_vs_raf'")
    assert list(holds["verdict"]) == ["holds", "holds"] and (holds["ci_low"] > 0).all()
    assert holds["value"].iloc[0] == pytest.approx(np.mean(np.array(a_rf) - np.array(a_raf)))
    assert "6 paired simulations" in holds["note"].iloc[0] and "RAF below RF in 6 of 6" in holds["note"].iloc[0]
    fails = _claims(_claim_frame(a_raf, a_rf)).query("claim == 'gen_words_rf_vs_raf'")
    assert list(fails["verdict"]) == ["fails", "fails"] and (fails["ci_high"] < 0).all()
    # at the demo's sizes the bounds overlap: reported, whatever the data say
    toy = _claim_frame(a_raf, a_rf).assign(d=16, n=8, radius=1.4 * 4.0)
    rows = _claims(toy).query("claim == 'gen_words_rf_vs_raf'")
    assert set(rows["verdict"]) == {"no claim"} and rows["note"].str.contains("do not set RF and RAF apart").all()
    # two paired simulations: no interval
    few = _claims(_claim_frame(a_rf[:2], a_raf[:2])).query("claim == 'gen_words_rf_vs_raf'")
    assert set(few["verdict"]) == {"inconclusive"} and few["note"].str.contains("not enough data").all()


def test_the_comparison_needs_both_maps_and_the_table():
    only = _claim_frame([0.9] * 4, [0.2] * 4)
    rows = _claims(only[only["map"] == "raf"]).query("claim == 'gen_words_rf_vs_raf'")
    assert list(rows["verdict"]) == ["not run"] and "the study ran no rf" in rows["note"].iloc[0]
    shifted = only.assign(n=np.where(only["map"] == "rf", 40, 120))
    rows = _claims(shifted).query("claim == 'gen_words_rf_vs_raf'")
    assert list(rows["verdict"]) == ["not run"] and "share no (d, n, N, simulation)" in rows["note"].iloc[0]
    from wordsens.studies.claims import compute_claims

    empty = compute_claims({})
    assert set(empty.loc[empty["claim"].str.startswith("gen_words"), "verdict"]) == {"not run"}
    with pytest.raises(ValueError, match="lacks the column"):
        compute_claims({"gen_words": only.drop(columns="reaches")})


def test_a_study_cannot_define_a_claim_twice():
    import dataclasses

    from wordsens import studies
    from wordsens.claims import CLAIMS
    from wordsens.studies.claims import catalogue

    spec = studies.get("gen_words")
    assert {"gen_words_reach", "gen_words_rf_vs_raf"} <= set(catalogue()) and set(CLAIMS) < set(catalogue())
    twice = (*bound(spec.definitions), CLAIMS["rf_law"])
    with studies.isolated():
        studies.register(dataclasses.replace(spec, definitions=twice), replace=True)
        with pytest.raises(ValueError, match="defines the claim 'rf_law', which is defined already"):
            catalogue()
    assert "gen_words_reach" in catalogue()


# ----------------------------------------------------------------------------- the figures and the text


def test_the_figures_and_the_text(tmp_path, tiny, one_thread):
    from wordsens.studies.gen_words.figure import SETTING_LABELS, gen_words_figure, gen_words_text
    from wordsens.studies.gen_words.run import words_table

    tokenizer, encoder, pool = tiny
    table = pd.concat(
        [words_table(tokenizer, encoder, pool, _settings(map=m, simulations=(0,))) for m in ("rf", "raf")],
        ignore_index=True,
    )
    paths, penalised = [tmp_path / "fig.png"], [tmp_path / "pen.png"]
    gen_words_figure(table, [["rf", 8], ["raf", 8]], paths, penalised, left_out=[])
    assert all(p.stat().st_size > 10_000 for p in (*paths, *penalised))
    with pytest.raises(ValueError, match="no penalised rows"):
        gen_words_figure(table[table["loss"] != "penalised"], [["rf", 8]], paths, penalised)
    text = gen_words_text(table, tmp_path / "top.md", top=2)
    assert (tmp_path / "top.md").read_text(encoding="utf-8") == text
    assert "## RF (k = D), d = 16, n = 8, N = 10" in text and "## RAF" in text
    direct = table[(table["setting"] == "words") & (table["loss"] == "direct")].iloc[0]
    assert f"[{direct['original']} -> {direct['word']}]" in text and " -> ?]" not in text
    assert len(SETTING_LABELS) == 4
