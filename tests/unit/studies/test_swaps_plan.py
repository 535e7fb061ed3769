"""The swaps study in the plan (wordsens.studies.swaps, wordsens.compute.swap_costs): one job per map and
n with its params, rows and schedule, the cross-key problems named with the key and the fix, which maps
are scored over the whole vocabulary."""

from __future__ import annotations

import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline
from wordsens.compute import swap_costs
from wordsens.data import models
from wordsens.maps import registry
from wordsens.studies import numerics_versions

SMALL = compute.Limits(cpu=16 * 1024**3, gpu=None)


_demo = demo_config  # config.yaml + config/demo.yaml + changes, checked (workflow_utils)


# ----------------------------------------------------------------------------- the plan


def test_the_study_plans_one_job_per_map_and_n():
    config = _demo()
    grid = pipeline.Grid(config, limits=SMALL)
    jobs = grid.tables()["swaps"]
    section = config["swaps"]
    in_order = [m for m in registry.names() if m in section["maps"]]  # the registry's order, then n
    assert [(j.map, j.n) for j in jobs] == [(m, n) for m in in_order for n in sorted(section["n"])]
    job = grid.job({"map": "raf", "setting": "d16_n8"})
    assert job in jobs and job.key == "swaps/raf/d16_n8" and job.family == "swaps:raf" and job.store is None
    assert job.rows == section["reviews"] * section["positions"]
    assert job.params["numerics_version"] == numerics_versions()["swaps"] and "chunk_mb" not in job.params
    # a checkpoint's map reads the encoder's first layer, its rows whole (d = the width)
    trained = grid.job({"map": "trained_attention", "setting": f"d{models.TINY_BERT_WIDTH}_n16"})
    assert trained.params["options"] == {"model": "demo-tiny-bert", "layer": 1}
    # every position of every n: n - 2 rows per review
    every = pipeline.Grid(_demo({"swaps": {"positions": "all"}}), limits=SMALL).job({"map": "rf", "setting": "d16_n16"})
    assert every.rows == section["reviews"] * 14 and every.cost.seconds > 0
    # a change of what the numbers depend on re-runs the job; the chunks' memory does not
    other = pipeline.Grid(_demo({"swaps": {"top_k": 3}}), limits=SMALL).job({"map": "raf", "setting": "d16_n8"})
    assert other.params != job.params
    same = pipeline.Grid(_demo({"swaps": {"chunk_mb": 8}}), limits=SMALL).job({"map": "raf", "setting": "d16_n8"})
    assert same.params == job.params
    # the schedule: after the pool and the model, a table, a figure, the claims
    tasks = {task.name: task for task in pipeline.run_tasks(config, grid)}
    assert set(tasks[job.key].after) == {"pool", "demo_model"}
    assert set(tasks["swaps_figure"].after) == {"table swaps"} and "table swaps" in tasks["claims"].after


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"swaps": {"positions": 7}}, ["swaps.positions = 7 > the 6 word positions of the smallest n = 8"]),
        ({"swaps": {"n": [2, 8]}}, ["swaps.n has 2 < 3"]),
        ({"swaps": {"n": [8, 130]}}, ["swaps.n = 130 needs reviews of at least 128 words", "data.max_tokens"]),
        ({"swaps": {"d": 65}}, ["swaps.d = 65 > the model width 64"]),
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


def test_screened_maps_are_planned_with_their_own_screen():
    """The post-LayerNorm layers screen by their first sublayer (``screen_flops``: ``O(d^2 + n d h)`` a
    word), DRF by the first-order score (None); a screened scan of ``block`` at BERT-Base's size is
    planned at a small part of scoring every word, and above the first-order screen's per-word cost."""
    drf, block = registry.get("drf"), registry.get("block")
    options = {"heads": 12}
    assert drf.cost.screen_flops(drf, drf.work(128, 768)) is None
    per_word = block.cost.screen_flops(block, block.work(128, 768, options))
    assert per_word == pytest.approx(2 * (12 * 768**2 + 128 * 768 * (2 * 12 + 8)))
    layer = registry.get("trained_layer")
    assert layer.cost.screen_flops(layer, layer.work(64, 384)) is not None
    whole = 30_522 * swap_costs.candidate_flops(block, 128, 768, options) / swap_costs.SCAN_FLOPS
    screened = swap_costs.scan_seconds(block, 128, 768, options, vocab=30_522)
    assert 30_522 * per_word / swap_costs.SCAN_FLOPS < screened < whole / 10
