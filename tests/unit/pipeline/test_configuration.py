"""wordsens.pipeline's one loader without running Snakemake: the shipped configurations load with the
schema's defaults, the schema's and the cross-key checks refuse with the key and the fix, encoder positions
from a local config.json, missing local data named at planning, null maps and empty figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_utils import NO_STUDIES, demo_config

from wordsens import pipeline
from wordsens.data import models

ROOT = Path(__file__).resolve().parents[3]
BASE, DEMO = ROOT / "config.yaml", ROOT / "config" / "demo.yaml"


_demo = demo_config  # config.yaml + config/demo.yaml + changes, checked (workflow_utils)


def test_shipped_configs_load_and_defaults_come_from_the_schema(tmp_path):
    config = pipeline.load_config(BASE)
    assert config["limits"] == {
        "memory_gb": "auto",
        "gpu_memory_gb": "auto",
        "cluster_memory_gb": None,
        "cluster_gpu_memory_gb": None,
        "max_job_hours": "auto",
        "unfit": "skip",
    }
    # a file that sets almost nothing gets every default of the schema
    minimal = tmp_path / "config.yaml"
    minimal.write_text(yaml.safe_dump({"ws": {"maps": {"raf": {"d": [16], "n": [8]}}}}))
    schema = pipeline.assembled()
    loaded = pipeline.load_config(minimal, schema=pipeline.SCHEMA)
    assert loaded["ws"]["trials"] == schema["properties"]["ws"]["properties"]["trials"]["default"]
    assert loaded["limits"]["unfit"] == "skip" and loaded["data"]["source"] == "hub"
    assert loaded["gen"]["fig4"] is None and loaded["ws"]["search"]["max_steps"] == 1000
    demo = pipeline.load_config(BASE, DEMO)
    assert demo["gen"]["fig4"]["losses"] == ["surrogate", "direct"] and demo["results"] == "results/demo"


@pytest.mark.parametrize(
    "changes,key",
    [
        ({"colour": "blue"}, "colour"),
        ({"ws": {"trials": "ten"}}, "ws.trials"),
        ({"ws": {"position": "middle"}}, "ws.position"),
        ({"ws": {"position": -1}}, "ws.position"),
        ({"data": {"pool_size": 41}}, "data.pool_size"),
        ({"data": {"source": "parquet", "path": None}}, "data.path"),
        ({"data": {"source": "aclimdb"}}, "data.path"),
        ({"limits": {"memory_gb": 0}}, "limits.memory_gb"),
        ({"limits": {"unfit": "maybe"}}, "limits.unfit"),
        ({"gen": {"fig5": {"penalties": []}}}, "gen.fig5.penalties"),
        ({"gen": {"fig4": {"losses": ["hinge"]}}}, "gen.fig4.losses"),
        ({"long_context": {"max_length": 2}}, "long_context.max_length"),
        ({"trained": {"conventions": []}}, "trained.conventions"),
        ({"trained": {"positions": 0}}, "trained.positions"),
        ({"trained": {"normalise": [True]}}, "trained.normalise"),
        ({"trained": {"maps": ["rf"]}}, "trained.maps"),
        ({"trained": {"layers": "first"}}, "trained.layers"),
    ],
)
def test_schema_refuses_with_the_key(changes, key):
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(changes)
    assert key in str(info.value)
    assert len(info.value.problems) == 1


@pytest.mark.parametrize(
    "changes,words",
    [
        ({"ws": {"maps": {"raf": {"d": [16], "n": [64]}}}}, ["ws.maps.raf.n", "model.max_length"]),
        ({"ws": {"maps": {"raf": {"d": [128], "n": [8]}}}}, ["ws.maps.raf.d", "model width 64"]),
        (
            {
                "ws": {"maps": {"rf": None, "drf": None, "raf": None, "relu_raf": None}},
                "gen": {"fig4": None, "fig5": None},
                **NO_STUDIES,
            },
            ["no study runs a job", "ws, gen, variants"],
        ),
        ({"gen": {"fig5": {"maps": {"raf": [8]}, "N": [50], "penalties": [1]}}}, ["data.pool_size >= 51"]),
        ({"gen": {"fig4": {"maps": {"raf": [60]}, "N": [6]}}}, ["gen.fig4.maps.raf", "model.max_length"]),
        ({"gen": {"d": 128}}, ["gen.d", "model width"]),
        ({"gen": {"position": 8}}, ["gen.position 8", "gen.fig4.maps.rf"]),
        ({"probes": {"fig3": {"token": 99}}}, ["probes.fig3.token"]),
        ({"probes": {"lm": {"model": "no-such-org/no-such-lm"}}}, ["probes.lm.model"]),
        ({"ws": {"position": 9}}, ["ws.position 9", "smallest n = 4", "ws.maps.raf"]),
        ({"model": {"max_length": 600}}, ["model.max_length = 600 > the 512 positions of demo-tiny-bert"]),
        ({"long_context": {"max_length": 1024}}, ["long_context.max_length = 1024 > the 512 positions"]),
        (
            {"model": {"name": "minilm", "max_length": 513}, **NO_STUDIES},
            ["model.max_length = 513 > the 512 positions of minilm"],
        ),
        ({"trained": {"layers": [1, 3]}}, ["trained.layers has [3] beyond the 2 layers of demo-tiny-bert"]),
        ({"trained": {"head_n": 12}}, ["trained.head_n = 12 is not one of trained.n = [16]"]),
        ({"trained": {"head_reviews": 6}}, ["trained.head_reviews = 6 > trained.reviews = 5"]),
        ({"trained": {"reviews": 42}}, ["trained.reviews = 42 > data.pool_size = 40"]),
        (
            {"trained": {"model": "no-such-org/no-such-bert"}},
            [
                "trained.model 'no-such-org/no-such-bert'",
                "huggingface-cli download no-such-org/no-such-bert config.json",
            ],
        ),
        ({"trained": {"positions": 15}}, ["trained.positions = 15 > the 14 word rows of a sample at n = 16"]),
        (
            {"trained": {"n": [8, 130]}},
            ["trained.n = 130 needs reviews of at least 128 words", "data.max_tokens = 120"],
        ),
        ({"trained": {"n": [8, 600]}}, ["trained.n has 600 > the 512 positions of demo-tiny-bert"]),
    ],
)
def test_cross_key_problems_name_the_key_and_the_fix(changes, words, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the LM check asks the Hub
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(changes)
    text = str(info.value)
    assert all(word in text for word in words), text
    assert all(":" in problem for problem in info.value.problems)  # key: problem ... fix


def test_encoder_positions_come_from_a_local_config_json(tmp_path):
    """A local encoder folder's config.json gives its width and positions before anything is loaded;
    long_context.max_length is checked only where it embeds IMDb reviews."""
    folder = tmp_path / "my-encoder"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 32, "max_position_embeddings": 40}')
    assert (models.model_width(str(folder)), models.model_positions(str(folder))) == (32, 40)
    changes = {
        "model": {"name": str(folder), "max_length": 48},
        "ws": {"maps": {"raf": {"d": [16], "n": [8]}}},
        "long_context": {"data": ["synthetic", "imdb"], "max_length": 64},
        "trained": None,  # its layers and heads are not in this config.json
    }
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(changes)
    fix = "(the encoder cannot embed longer inputs) or choose a model.name with more positions"
    assert info.value.problems == [
        f"model.max_length = 48 > the 40 positions of {folder}: lower model.max_length {fix}",
        f"long_context.max_length = 64 > the 40 positions of {folder}: lower long_context.max_length {fix}",
    ]
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(pipeline.merge(changes, {"long_context": {"data": ["synthetic"]}}))
    assert [p for p in info.value.problems if "positions" in p] == [info.value.problems[0]]
    # nothing embedded (every grid on synthetic rows): neither length matters
    synthetic = {
        "ws": {"data": "synthetic"},
        "gen": {"data": ["synthetic"]},
        "positions": None,
        "long_context": {"data": ["synthetic"]},
        "probes": {"enabled": False},
    }
    assert pipeline.problems(_demo(pipeline.merge(changes, synthetic))) == []
    assert models.model_positions("no-such-org/no-such-encoder") is None  # unknown: the embedding job checks


def test_good_configurations_have_no_problems(tmp_path):
    assert pipeline.problems(_demo()) == []
    assert pipeline.problems(_demo({"ws": {"position": "all"}})) == []
    (tmp_path / "train.parquet").write_bytes(b"")  # planning checks that the copy is there
    local = {"data": {"source": "parquet", "path": str(tmp_path / "train.parquet")}}
    assert pipeline.problems(_demo(local)) == [] and pipeline.preflight(_demo(local)) == []


def test_every_schema_problem_at_once_with_did_you_mean():
    """Four mistakes give four lines (Snakemake's validation stops at the first); an unknown key
    names the closest known key, or the keys there when none is close."""
    mistakes = {
        "data": {"pathh": "x", "pool_size": 7},
        "limits": {"unfit": "maybe"},
        "ws": {"trails": 3},
        "zzz": 1,
    }
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(mistakes)
    problems = info.value.problems
    assert problems[0].startswith("zzz: unknown key; the keys here are results, resources, seed")
    assert problems[1:] == [
        "data.pathh: unknown key; did you mean data.path?",
        problems[2],
        "limits.unfit: 'maybe' is not one of ['skip', 'fail']" + problems[3].split("]", 1)[1],
        "ws.trails: unknown key; did you mean ws.trials?",
    ]
    assert problems[2].startswith("data.pool_size: 7 is not a multiple of 2")
    assert str(info.value).count("\n") == 5  # a header, then one line per problem
    assert pipeline.schema_problems(_demo()) == []


def test_missing_local_data_and_encoder_are_named_together_at_planning(tmp_path, monkeypatch):
    """Going without the Hub: a local IMDb copy that is not there and an encoder only the Hub has
    are found before anything runs, in one message, with the cross-key problems."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = yaml.safe_load(BASE.read_text())
    offline = {"data": {"source": "parquet", "path": str(tmp_path / "nowhere.parquet")}, "ws": {"position": 500}}
    with pytest.raises(pipeline.ConfigError) as info:
        pipeline.check(pipeline.merge(base, offline))
    text = str(info.value)
    assert "ws.position 500" in text and f"data.path {str(tmp_path / 'nowhere.parquet')!r} does not exist" in text
    assert "model.name 'bert-base-uncased' is not a local folder" in text and "config/pretrained.yaml" in text
    assert "--config 'data={source: parquet, path: " in text  # the form Snakemake accepts
    # the copy there and a local encoder: nothing to say; the Hub source is left to its job
    (tmp_path / "nowhere.parquet").write_bytes(b"")
    encoder = tmp_path / "bert"
    encoder.mkdir()
    fine = pipeline.merge(offline, {"ws": {"position": 0}, "model": {"name": str(encoder)}})
    assert pipeline.preflight(pipeline.validate(pipeline.merge(base, fine))) == []
    assert pipeline.preflight(pipeline.validate(pipeline.merge(base, {}))) == []


def test_a_null_map_leaves_a_generalisation_figure_and_an_empty_figure_is_refused():
    """As in ws.maps, a --configfile drops a map of Figure 4/5 by setting it to null (the merge of
    config files is recursive, so leaving it out keeps it)."""
    config = _demo({"gen": {"fig4": {"maps": {"rf": None, "relu_raf": None}}}})
    assert set(config["gen"]["fig4"]["maps"]) == {"raf"}
    jobs = [j for j in pipeline.Grid(config).jobs if j.rule == "gen" and j.figure == "fig4"]
    assert jobs and {j.map for j in jobs} == {"raf"}
    with pytest.raises(pipeline.ConfigError, match=r"gen.fig5.maps: every map is null; set gen.fig5: null"):
        _demo({"gen": {"fig5": {"maps": {"raf": None, "relu_raf": None}}}})
