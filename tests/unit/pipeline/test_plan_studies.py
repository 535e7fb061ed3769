"""wordsens.pipeline's plan of the studies beyond the paper and of plugin maps, without running
Snakemake: study jobs in their own folders, one trained job per encoder layer, study settings from the
registry, map options and plugins checked, a plugin exported to the jobs, the default studies' size, long
contexts on IMDb, validation without side effects."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_utils import NO_STUDIES, demo_config

from wordsens import compute, pipeline
from wordsens.compute import costs
from wordsens.data import models
from wordsens.data.models import encoder_size
from wordsens.maps import registry
from wordsens.studies import numerics_versions
from wordsens.studies.long_context import long_context_ns
from wordsens.studies.sensitivity import WSJob
from wordsens.studies.trained import TrainedJob, trained_layers

ROOT = Path(__file__).resolve().parents[3]
GB = costs.GB
SMALL = compute.Limits(cpu=16 * GB, gpu=None)  # a machine like the CI one, whatever this one has


_demo = demo_config  # config.yaml + config/demo.yaml + changes, checked (workflow_utils)


# ----------------------------------------------------------------------------- studies beyond the paper


def test_studies_are_ws_jobs_with_their_own_folders_and_leave_the_papers_jobs_alone():
    from wordsens.maps import registry

    config = _demo()
    grid = pipeline.Grid(config, limits=SMALL)
    folders = ["ws", "variants", "long_synthetic", "long_imdb", "positions"]
    assert [stem for stem in grid.tables() if not stem.startswith(("ws_", "gen_"))] == [
        *folders[1:],
        "trained",
        "swaps",
    ]
    by_study: dict[str, list] = {}  # by results folder: a long-context curve per data source
    for job in grid.jobs:
        if isinstance(job, WSJob):
            by_study.setdefault(job.folder, []).append(job)
    assert list(by_study) == folders
    variants, long_context = config["variants"], config["long_context"]
    # maps: all, every map with random weights (a checkpoint's maps are not variants)
    random_maps = [name for name in registry.names() if not registry.get(name).checkpoint]
    assert {"trained_attention", "trained_layer"} <= set(registry.names())
    assert {job.map for job in by_study["variants"]} == set(random_maps)
    assert len(by_study["variants"]) == len(random_maps) * len(variants["n"])
    assert sorted((j.map, j.n) for j in by_study["long_synthetic"]) == [
        ("raf", 8),
        ("raf", 32),
        ("raf", 128),
        ("rf", 8),
        ("rf", 32),
    ]
    # IMDb stops at long_context.max_length = 64 (and runs there); RF is capped at max_n = 32 before that
    assert sorted((j.map, j.n) for j in by_study["long_imdb"]) == [
        ("raf", 8),
        ("raf", 32),
        ("raf", 64),
        ("rf", 8),
        ("rf", 32),
    ]
    assert {j.store for j in by_study["long_imdb"]} == {"long"} and {j.store for j in by_study["ws"]} == {"main"}
    assert all(j.params["data_label"].endswith(f":len{long_context['max_length']}") for j in by_study["long_imdb"])
    mh = grid.job({"folder": "variants", "map": "mh_raf", "setting": "d16_n4", "chunk": "0"})
    assert mh.params["options"] == {"heads": 4} and mh.point == "variants mh_raf d16_n4"
    drf = grid.job({"folder": "variants", "map": "drf", "setting": "d16_n4_L2", "chunk": "0"})
    assert drf.swept == {"L": 2} and "options" not in drf.params
    (raf,) = [j for j in by_study["positions"] if j.map == "raf"]
    assert raf.params["position"] == "all" and raf.params["profile"] is True
    assert raf.params["shared_samples"] is True and raf.trials == (0, 1) and raf.store == "main"
    assert raf.cost.seconds == pytest.approx(registry.get("raf").ws_seconds(32, 16, positions=32, max_steps=300) * 2)
    # the paper's jobs are the same with or without the studies (same params: nothing re-runs)
    paper = [j for j in grid.jobs if j.rule == "gen" or j.study == "ws"]
    alone = pipeline.Grid(_demo(NO_STUDIES), limits=SMALL)
    assert [(j.wildcards, j.params) for j in paper] == [(j.wildcards, j.params) for j in alone.jobs]
    assert [j for j in alone.jobs if j.rule == "ws" and j.study != "ws"] == []
    assert [s for s in grid.tables() if s.startswith("ws_")] == [s for s in alone.tables() if s.startswith("ws_")]


def test_the_trained_study_plans_one_job_per_encoder_layer(tmp_path):
    """One job per layer of the encoder (``layers: all`` from its facts, without loading it), with the
    rows it writes, its params (a change of trained.n re-runs it) and estimates; the reviews come from
    the pool, so that the embedding stores are not needed for it."""
    config = _demo()
    grid = pipeline.Grid(config, limits=SMALL)
    jobs = [job for job in grid.fit if isinstance(job, TrainedJob)]
    assert [job.layer for job in jobs] == [1, 2] == list(range(1, models.TINY_BERT_LAYERS + 1))
    job = grid.job({"layer": "2"})
    assert job is jobs[1] and job.key == "trained/layer2" and job.store is None and job.family == "ws:trained"
    trained = config["trained"]
    # per review (5) and moved row (1, searched twice: the demo's word_keys, without [CLS] and [SEP] too): paper
    # (1 + 2 draws of mh_raf) + (1 + 2 x 2 of block, ln_block), model (1 + 2 of matched_attention) + (1 + 2 of
    # matched_layer); 4 heads on 1 review
    assert trained["word_keys"] and job.params["word_keys"]
    assert job.rows == 14 * 5 * 2 + models.TINY_BERT_HEADS * 1 == 144
    assert job.params["model"] == "demo-tiny-bert" and job.params["heads"] == models.TINY_BERT_HEADS
    assert job.params["n"] == trained["n"] and job.params["numerics_version"] == numerics_versions()["trained"]
    # two float32 copies of the encoder (tests/unit/compute/test_trained_memory.py), its processes and the searches
    held = costs.PROCESS_OVERHEAD + costs.JOBSTEP_OVERHEAD + 2 * 4 * encoder_size("demo-tiny-bert")
    assert job.cost.host_bytes >= held + job.cost.arrays and job.cost.seconds > 0
    more = pipeline.Grid(_demo({"trained": {"n": [8, 16, 24]}}), limits=SMALL).job({"layer": "2"})
    assert more.params != job.params and more.rows == 14 * 5 * 3 * 2 + 4
    # listed layers, and an encoder known from its local config.json (layers and heads)
    folder = tmp_path / "my-bert"
    folder.mkdir()
    facts = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": 32,
        "max_position_embeddings": 64,
        "num_hidden_layers": 5,
        "num_attention_heads": 2,
    }
    (folder / "config.json").write_text(json.dumps(facts))
    assert (models.model_layers(str(folder)), models.model_heads(str(folder))) == (5, 2)
    mine = _demo({"trained": {"model": str(folder), "layers": [2, 5, 2]}})
    assert [job.layer for job in pipeline.Grid(mine, limits=SMALL).fit if isinstance(job, TrainedJob)] == [2, 5]
    assert trained_layers(_demo({"trained": {"model": str(folder)}})) == [1, 2, 3, 4, 5]
    # an encoder that is not BERT's (a local config.json of another family) is refused at planning
    gpt = tmp_path / "my-gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({**facts, "model_type": "gpt2", "hidden_act": "gelu_new"}))
    with pytest.raises(pipeline.ConfigError, match="model type 'gpt2' is not a BERT-family encoder"):
        _demo({"trained": {"model": str(gpt)}})
    relative = tmp_path / "my-deberta-like"
    relative.mkdir()
    (relative / "config.json").write_text(
        json.dumps({**facts, "model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "relative_key"})
    )
    with pytest.raises(pipeline.ConfigError, match="position_embedding_type = 'relative_key'"):
        _demo({"trained": {"model": str(relative)}})
    # off: no job, and the paper's grids alone need no trained job
    assert [job for job in pipeline.Grid(_demo({"trained": None}), limits=SMALL).jobs if job.study == "trained"] == []


def test_study_settings_follow_the_registry_and_left_out_points_name_their_study():
    config = _demo({"variants": {"d": 768, "n": [10, 1000], "maps": ["drf", "raf"], "max_n": {"drf": 1000}}})
    grid = pipeline.Grid(config, limits=SMALL)
    (big,) = [j for j in grid.unfit if j.map == "drf"]
    assert big.point == "variants drf d768_n1000_L2" and big.n == 1000
    assert grid.left_out(study="variants") and not grid.left_out(study="ws")
    assert "variants drf d768_n1000_L2 (1 job): needs" in grid.left_out_message()
    estimate = registry.get("mh_raf").ws_memory(50, 768, {"heads": 4})
    job = pipeline.Grid(
        _demo({"variants": {"d": 768, "n": [50], "maps": ["mh_raf"], "options": {"mh_raf": {"heads": 4}}}}),
        limits=SMALL,
    ).job({"folder": "variants", "map": "mh_raf", "setting": "d768_n50", "chunk": "0"})
    assert job.cost.arrays == estimate.bytes


@pytest.mark.parametrize(
    "changes,words",
    [
        ({"ws": {"maps": {"nosuch": {"d": [16], "n": [8]}}}}, ["ws.maps.nosuch", "unknown map 'nosuch'", "plugins"]),
        ({"variants": {"maps": ["raf", "nosuch"]}}, ["variants.maps (nosuch)", "unknown map"]),
        ({"variants": {"options": {"mh_raf": {"heads": 5}}}}, ["variants.maps (mh_raf)", "heads = 5"]),
        ({"variants": {"options": {"raf": {"heads": 2}}}}, ["variants.maps (raf)", "no option heads"]),
        ({"long_context": {"maps": ["nosuch"]}}, ["long_context.maps (nosuch)"]),
        ({"long_context": {"max_n": {"rff": 32}}}, ["long_context.max_n.rff: unknown map"]),
        ({"long_context": {"position": 8}}, ["long_context.position 8 is beyond the smallest n = 8"]),
        ({"variants": {"position": 30}}, ["variants.position 30"]),
        ({"positions": {"maps": ["raf"], "n": 64}}, ["positions.n = 64 > model.max_length = 48"]),
        ({"positions": {"d": 128}}, ["positions.d = 128 > the model width 64"]),
        ({"ws": {"maps": {"mh_raf": {"d": [16], "n": [8], "options": {"heads": 3}}}}}, ["ws.maps.mh_raf", "heads"]),
        ({"plugins": ["/no/such/plugin.py"]}, ["plugins:", "/no/such/plugin.py"]),
    ],
)
def test_maps_options_and_plugins_are_checked_against_the_registry(changes, words, monkeypatch):
    monkeypatch.setenv("WORDSENS_PLUGINS", "")
    with pytest.raises(pipeline.ConfigError) as info:
        _demo(changes)
    text = str(info.value)
    assert all(word in text for word in words), text


def test_a_plugin_in_the_config_is_exported_and_its_map_planned():
    """plugins: [toy_map.py] in the config: exported in WORDSENS_PLUGINS (absolute path) and loaded by
    the loader (pipeline.check), so that a ws.maps grid of the toy map is planned with its options and the
    registry's cost model. In a fresh interpreter: a registered plugin stays registered."""
    toy = ROOT / "tests" / "plugins" / "toy_map.py"
    code = f"""
import os, yaml
from wordsens import compute, pipeline
from wordsens.maps import registry
from wordsens.compute import costs
config = pipeline.merge(yaml.safe_load(open("config.yaml")), yaml.safe_load(open("config/demo.yaml")))
config = pipeline.merge(config, {{"plugins": ["tests/plugins/toy_map.py"], "variants": None, "long_context": None,
    "positions": None, "ws": {{"maps": {{"toy": {{"d": [8], "n": [4, 6], "options": {{"scale": 2.0}}}}}}}}}})
pipeline.check(config)
assert os.environ["WORDSENS_PLUGINS"] == {str(toy)!r}, os.environ["WORDSENS_PLUGINS"]
assert "toy" in registry.names() and config["plugins"] == ["tests/plugins/toy_map.py"]
grid = pipeline.Grid(config, limits=compute.Limits(cpu=2**34, gpu=None))
job = grid.job({{"folder": "ws", "map": "toy", "setting": "d8_n6_depth1", "chunk": "0"}})
assert job.params["options"] == {{"scale": 2.0}}
assert job.cost.arrays == registry.get("toy").ws_memory(6, 8, {{"scale": 2.0}}).bytes
assert "ws_toy" in grid.tables()
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env={**os.environ, "WORDSENS_PLUGINS": ""})


def test_default_variants_and_long_context_stay_within_about_one_job_hour():
    """The default long_context + variants grids take about 1 job-hour per `wordsens plan` (the
    built-in calibration: this project's 2-core machine; in a fresh interpreter: no plugin registered
    by another test)."""
    out = subprocess.run(
        [sys.executable, "-m", "wordsens.cli", "plan"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "WORDSENS_PLUGINS": "", "WORDSENS_MAX_MEMORY_MB": "64000"},
    )
    line = out.stdout.split("job-hours per experiment (calibrated; the jobs that fit): ")[1].splitlines()[0]
    hours = dict(re.findall(r"(\w+) (\d+\.\d+)", line))
    beyond = sum(float(hours[key]) for key in ("variants", "long_synthetic", "long_imdb"))
    # 0.43 with the built-in time model of 2026-11-28 (0.68 with the variants' DRF at n = 50, which the
    # 0.2 h limit leaves out); a planner pricing jobs at nothing falls below 0.2
    assert 0.2 < beyond <= 1.25, out.stdout


def test_long_context_imdb_points_stop_at_the_stored_length():
    section = {"n": [64, 256, 1024, 4096], "max_n": {"rf": 1024, "tiny": 32}, "max_length": 512}
    assert long_context_ns(section, "raf", "synthetic") == [64, 256, 1024, 4096]
    assert long_context_ns(section, "raf", "imdb") == [64, 256, 512]
    assert long_context_ns(section, "rf", "synthetic") == [64, 256, 1024]
    assert long_context_ns(section, "rf", "imdb") == [64, 256, 512]
    assert long_context_ns(section, "tiny", "imdb") == []


def test_validate_has_no_side_effects_and_check_loads_the_plugins():
    """pipeline.validate fills defaults and checks, nothing else: no environment variable, no plugin
    imported (a plugin's map is unknown to it); pipeline.check exports and imports the plugins first."""
    toy = ROOT / "tests" / "plugins" / "toy_map.py"
    code = f"""
import os, yaml
from wordsens import pipeline
from wordsens.maps import registry
config = pipeline.merge(yaml.safe_load(open("config.yaml")), yaml.safe_load(open("config/demo.yaml")))
config = pipeline.merge(config, {{"plugins": [{str(toy)!r}], "ws": {{"maps": {{"toy": {{"d": [8], "n": [4]}}}}}}}})
before = dict(os.environ)
try:
    pipeline.validate(config)
    raise SystemExit("validate accepted a map of a plugin it did not import")
except pipeline.ConfigError as err:
    assert "unknown map 'toy'" in str(err), err
assert dict(os.environ) == before and "toy" not in registry.names()
pipeline.check(config)
assert os.environ["WORDSENS_PLUGINS"] == {str(toy)!r} and "toy" in registry.names()
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, env={**os.environ, "WORDSENS_PLUGINS": ""})
