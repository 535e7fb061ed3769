"""wordsens.pipeline without running Snakemake: the job grid (lookup by wildcards, params, numerics
versions, resources, devices, limits) and the messages naming what is left out.

The loader and its checks: test_configuration.py; the studies beyond the paper and plugin maps:
test_plan_studies.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline
from wordsens.compute import costs, map_costs
from wordsens.compute.placement import CUDA_CONTEXT_BYTES, Request
from wordsens.maps import registry
from wordsens.seeds import canonical, canonical_json, derive_seed
from wordsens.studies import gen as gen_plan
from wordsens.studies import main_store, numerics_versions
from wordsens.studies.jobs import config_hash
from wordsens.studies.probes.plan import probe_request

ROOT = Path(__file__).resolve().parents[3]
GB = costs.GB
SMALL = compute.Limits(cpu=16 * GB, gpu=None)  # a machine like the CI one, whatever this one has


_demo = demo_config  # config.yaml + config/demo.yaml + changes, checked (workflow_utils)


def test_grid_looks_jobs_up_by_their_wildcards():
    config = _demo()
    grid = pipeline.Grid(config, limits=SMALL)
    points = sum(len(g["d"]) * len(g["n"]) * len(g.get("L", [1])) for g in config["ws"]["maps"].values())
    paper = [j for j in grid.jobs if j.rule == "ws" and j.study == "ws"]
    assert len(paper) == points  # trials_per_job = trials: one chunk each
    for job in grid.fit:
        assert grid.job(job.wildcards) is job
    rf = grid.select(folder="ws", map="rf")
    assert {job.map for job in rf} == {"rf"} and len(rf) == 6
    fig4 = grid.select(figure="fig4", data="imdb")
    assert {(job.figure, job.data) for job in fig4} == {("fig4", "imdb")} and len(fig4) == 8
    with pytest.raises(LookupError, match="no job"):
        grid.job({"folder": "ws", "map": "rf", "setting": "d99_n8", "chunk": "0"})
    assert sorted(stem for stem in grid.tables() if stem.startswith("ws_")) == [
        "ws_drf",
        "ws_raf",
        "ws_relu_raf",
        "ws_rf",
    ]
    assert [f.name for f in grid.figures() if f.study == "ws"] == ["fig2_rf_drf", "fig3_raf_relu_raf"]
    assert "gen_fig5_synthetic" in grid.tables()


def test_params_are_the_configuration_slice_without_threads():
    grid = pipeline.Grid(_demo(), limits=SMALL)
    more_threads = pipeline.Grid(_demo({"ws": {"threads": 8}, "gen": {"threads": 8}}), limits=SMALL)
    assert [job.params for job in grid.jobs] == [job.params for job in more_threads.jobs]
    ws = grid.job({"folder": "ws", "map": "drf", "setting": "d16_n12_L3", "chunk": "0"})
    assert ws.params["numerics_version"] == numerics_versions()["ws"] and "threads" not in str(ws.params)
    assert ws.device == "cpu" and ws.params["trials"] == [0, 1, 2]
    assert ws.params["data_label"] == "imdb:demo-tiny-bert:layer0"
    # a search setting changes exactly the WS params
    steps = pipeline.Grid(_demo({"ws": {"search": {"max_steps": 299}}}), limits=SMALL)
    changed = {job.rule for job, new in zip(grid.jobs, steps.jobs, strict=True) if job.params != new.params}
    assert changed == {"ws"}


def test_each_experiment_has_its_numerics_version():
    """A bump of one experiment's numerics version changes the params of its jobs only (so
    Snakemake re-runs those), and every job carries its own experiment's version."""
    grid = pipeline.Grid(_demo(), limits=SMALL)
    assert {job.rule: job.params["numerics_version"] for job in grid.jobs} == numerics_versions()
    for bumped in numerics_versions():
        versions = {**numerics_versions(), bumped: "bumped"}
        other = pipeline.Grid(_demo(), limits=SMALL, numerics_versions=versions)
        changed = {job.rule for job, new in zip(grid.jobs, other.jobs, strict=True) if job.params != new.params}
        assert changed == {bumped}


def test_runtime_follows_the_sampler_and_the_positions():
    """position 'all' searches every position: n times the runtime (RAF, same sampler), and for RF
    the blockwise sampler that the map's cost model picks for it."""
    one = pipeline.Grid(_demo(), limits=SMALL)
    every = pipeline.Grid(_demo({"ws": {"position": "all"}}), limits=SMALL)
    for wildcards in (
        {"folder": "ws", "map": "raf", "setting": "d32_n16", "chunk": "0"},
        {"folder": "ws", "map": "rf", "setting": "d32_n24", "chunk": "0"},
    ):
        a, b = one.job(wildcards), every.job(wildcards)
        spec = registry.get(a.map)
        sampler = spec.choose_sampler(position="all")
        steps = _demo()["ws"]["search"]["max_steps"]
        expected = spec.ws_seconds(a.n, a.d, sampler=sampler, positions=a.n, max_steps=steps) * len(a.trials)
        assert b.cost.seconds == pytest.approx(expected)
        assert b.cost.seconds >= a.n * a.cost.seconds * (1 - 1e-12)
        assert b.runtime >= a.runtime
    assert every.job({"folder": "ws", "map": "raf", "setting": "d32_n16", "chunk": "0"}).cost.seconds == pytest.approx(
        16 * one.job({"folder": "ws", "map": "raf", "setting": "d32_n16", "chunk": "0"}).cost.seconds
    )


def test_attention_features_flops_are_the_products_of_the_forward():
    """The flop count that prices the attention maps' features, decides when they are float32 and sets
    bench_gen's floor, against torch's own count of the forwards' matrix products."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from wordsens.maps.paper import raf_forward, relu_raf_forward

    N, n, d = 3, 5, 7
    X, W = torch.randn(N, n, d), torch.randn(d, d)
    for forward in (raf_forward, relu_raf_forward):
        with FlopCounterMode(display=False) as counter:
            forward(X, W)
        assert counter.get_total_flops() == map_costs.attention_features_flops(N, n, d)
    assert map_costs.attention_features_flops(2 * N, n, d) == 2 * map_costs.attention_features_flops(N, n, d)


def test_unfit_jobs_are_left_out_and_named_with_the_ways_out():
    config = _demo({"ws": {"data": "synthetic", "maps": {"drf": {"d": [768], "n": [80], "L": [8]}}}})
    grid = pipeline.Grid(config, limits=SMALL)
    assert [job.point for job in grid.unfit] == ["drf d768_n80_L8"]
    assert "ws_drf" not in grid.tables() and "fig2_rf_drf" in [f.name for f in grid.figures()]  # marks the point
    (point,) = grid.left_out(map="drf")
    assert point["L"] == 8 and point["n"] == 80 and point["needs_gb"] > 16
    skip, fail = grid.left_out_message(), grid.left_out_message(fail=True)
    for text in (skip, fail):
        assert "drf d768_n80_L8" in text and "16.0 GB allowed by limits.memory_gb" in text
        assert "profiles/slurm" in text and "gpu_memory_gb" in text
    assert "left out" in skip and "limits.unfit: fail" in skip
    assert "nothing runs" in fail and "limits.unfit: skip runs the rest" in fail
    assert pipeline.Grid(_demo(), limits=SMALL).left_out_message() == ""


def test_auto_device_puts_drf_on_a_gpu_with_the_gpu_memory_limit():
    config = _demo({"ws": {"data": "synthetic", "device": "auto", "maps": {"drf": {"d": [768], "n": [80], "L": [4]}}}})
    cpu_only = pipeline.Grid(config, limits=SMALL)
    with_gpu = pipeline.Grid(config, limits=compute.Limits(cpu=16 * GB, gpu=80 * GB))
    drf = with_gpu.job({"folder": "ws", "map": "drf", "setting": "d768_n80_L4", "chunk": "0"})
    assert drf.device == "cuda" and drf.gpu == 1 and drf.params["device"] == "cuda"
    # ws.dtype: auto searches DRF in bfloat16 on the GPU: its layers held in it
    assert drf.params["dtype"] == "bfloat16"
    arrays = registry.get("drf").ws_memory(80, 768, {"L": 4}, dtype="bfloat16").bytes
    assert drf.cost.device_bytes == arrays + CUDA_CONTEXT_BYTES <= 80 * GB  # its arrays and its CUDA context
    assert drf.gpu_mem_mb == -(-drf.cost.device_bytes // costs.MB)
    assert drf.mem_mb * costs.MB < drf.cost.device_bytes  # the host does not hold the weights
    assert [job.point for job in cpu_only.unfit] == ["drf d768_n80_L4"]
    small_gpu = pipeline.Grid(config, limits=compute.Limits(cpu=16 * GB, gpu=16 * GB))  # 23.2 GB in bfloat16
    assert "allowed by the GPU (limits.gpu_memory_gb)" in small_gpu.left_out_message()
    # ws.device: cpu keeps DRF on CPU even with a GPU; cuda without a known GPU is not refused here
    assert pipeline.Grid(pipeline.merge(config, {"ws": {"device": "cpu"}}), limits=with_gpu.limits).unfit
    explicit = pipeline.Grid(pipeline.merge(config, {"ws": {"device": "cuda"}}), limits=SMALL)
    assert not explicit.unfit and {job.device for job in explicit.jobs if job.rule == "ws"} == {"cuda"}


def test_auto_puts_every_job_on_a_shared_gpu_and_only_drf_on_a_clusters():
    """One machine's GPU is shared by its jobs (each declares gpu_mem_mb): cuda sends every WS and
    generalisation job of every map there, auto only those whose cost model finishes sooner there
    (wordsens.compute.placement: none of the demo's toy jobs, whose GPU start-up alone outlasts them). A
    cluster grants each GPU job a GPU of its own: auto sends only the maps whose cost model prefers a
    GPU (DRF) there."""
    config = _demo({"ws": {"device": "auto"}, "gen": {"device": "auto"}})
    forced = pipeline.merge(
        config,
        {
            "ws": {"device": "cuda"},
            "gen": {"device": "cuda"},
            "swaps": {"device": "cuda"},
            "gen_words": {"device": "cuda"},
        },
    )
    shared = pipeline.Grid(forced, limits=compute.Limits(cpu=16 * GB, gpu=80 * GB))
    maps = {job.map for job in shared.jobs if job.rule in ("ws", "gen")}
    assert {"rf", "drf", "raf", "relu_raf", "mh_raf", "block"} <= maps  # the studies' maps included
    assert {job.device for job in shared.jobs if job.rule in ("ws", "gen")} == {"cuda"}
    on_shared = [job for job in shared.jobs if job.rule != "trained"]
    assert all(job.gpu == 1 and job.gpu_mem_mb * costs.MB >= job.cost.device_bytes for job in on_shared)
    by_cost = pipeline.Grid(config, limits=compute.Limits(cpu=16 * GB, gpu=80 * GB, cores=16))
    assert {job.device for job in by_cost.jobs if job.rule in ("ws", "gen")} == {"cpu"}
    cluster = pipeline.Grid(config, limits=compute.Limits(cpu=16 * GB, gpu=80 * GB, shared_gpu=False))
    on_gpu = {job.map for job in cluster.jobs if job.device == "cuda"}
    assert on_gpu == {m for m in maps if registry.get(m).cost.prefers_gpu} == {"drf"}
    assert {job.gpu_mem_mb for job in cluster.jobs if job.device == "cpu"} == {0}
    assert {job.device for job in pipeline.Grid(config, limits=SMALL).jobs} == {"cpu"}  # no GPU known


def test_steps_that_run_a_model_declare_their_gpu_memory_where_the_plan_puts_them():
    config = _demo({"model": {"device": "auto"}, "probes": {"device": "auto", "lm": {"device": "auto"}}})
    gpu = compute.Limits(cpu=16 * GB, gpu=80 * GB)
    store = main_store(config)
    embed = pipeline.embed_step(config, gpu, store)
    assert embed.device == "cuda" and embed.gpu == 1 and embed.gpu_mem_mb * costs.MB > CUDA_CONTEXT_BYTES
    assert embed.mem_mb == pipeline.embed_step(config, SMALL, store).mem_mb  # the host memory does not depend on it
    assert pipeline.embed_step(config, SMALL, store) == Request(embed.mem_mb, "cpu", 0)
    cluster = compute.Limits(cpu=16 * GB, gpu=80 * GB, shared_gpu=False)
    # on a cluster a GPU each: the embeddings and the LM, not the few forward passes of the encoder probes
    assert [pipeline.embed_step(config, cluster, store).gpu, probe_request(config, cluster, "lm").gpu] == [1, 1]
    assert probe_request(config, cluster, "encoder") == probe_request(config, SMALL, "encoder")
    assert probe_request(config, gpu, "encoder").gpu_mem_mb > 0
    # a device set to cpu stays there whatever is known
    assert probe_request(pipeline.merge(config, {"probes": {"device": "cpu"}}), gpu, "encoder").gpu == 0


def test_limits_of_a_configuration(monkeypatch):
    monkeypatch.setenv("WORDSENS_MAX_MEMORY_MB", "2048")
    limits = compute.Limits.of(_demo({"limits": {"gpu_memory_gb": 40}}))
    assert limits.cpu <= 2048 * costs.MB and limits.gpu == 40 * GB
    assert compute.Limits.of(_demo({"limits": {"memory_gb": 3}})).cpu == 3 * GB


def test_describe_lists_jobs_devices_and_what_is_left_out():
    config = _demo({"ws": {"data": "synthetic", "maps": {"drf": {"d": [768], "n": [80], "L": [8]}}}})
    text = pipeline.describe(config, limits=SMALL)
    assert "ws drf (cpu)" in text and "hours" in text and "drf d768_n80_L8" in text
    assert "every job fits" in pipeline.describe(_demo(), limits=SMALL)


def test_one_canonical_form_for_hashes_and_params():
    a = {"b": [1, 2.0, (3, {"z": 1, "y": 2})], "a": 100.0}
    b = {"a": 100, "b": [1, 2, [3, {"y": 2, "z": 1}]]}
    assert canonical_json(a) == canonical_json(b) and config_hash(a) == config_hash(b)
    assert derive_seed(a) == derive_seed(b)
    assert list(canonical(a)) == ["a", "b"] and canonical(a)["a"] == 100.0  # params keep their floats
    assert config_hash({"a": 1}) != config_hash({"a": 2})


def test_failed_jobs_are_read_from_a_real_snakemake_log(tmp_path):
    (tmp_path / "Snakefile").write_text(
        'rule all:\n    input: "ok.txt", "bad_1.txt"\n'
        'rule bad:\n    output: "bad_{x}.txt"\n    log: "logs/bad/{x}.log"\n    shell: "echo no > {log}; exit 1"\n'
        'rule ok:\n    output: "ok.txt"\n    shell: "touch {output}"\n'
    )
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "--keep-going"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    (log,) = (tmp_path / ".snakemake" / "log").glob("*.log")
    assert pipeline.failed_jobs(log.read_text()) == [{"rule": "bad", "output": "bad_1.txt", "log": "logs/bad/1.log"}]
    assert (tmp_path / "ok.txt").exists()


def test_limits_travel_to_the_jobs_as_text():
    for limits in (compute.Limits(cpu=3 * GB, gpu=None), compute.Limits(cpu=5, gpu=80 * GB)):
        assert compute.Limits.from_text(limits.to_text()) == limits


def test_planning_does_not_load_torch():
    """The Snakefile plans in every cluster job's Snakemake process too: without torch there (about
    180 MB), that process stays within the memory each job requests for it."""
    code = (
        "import sys, wordsens.pipeline, wordsens.seeds, wordsens.io; "
        "config = wordsens.pipeline.load_config('config.yaml', 'config/demo.yaml'); "
        "wordsens.pipeline.Grid(config, limits=wordsens.compute.Limits(cpu=2**34, gpu=None)); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_memory_setting_lets_drf_stream_within_it():
    """ws.max_memory_gb: DRF is planned with the layers that do not fit streamed (wordsens.compute.costs
    drf_layout), so the job fits the setting, takes longer, and passes the setting to the estimate."""
    drf = {"ws": {"data": "synthetic", "maps": {"drf": {"d": [768], "n": [80], "L": [8]}}}}
    wildcards = {"folder": "ws", "map": "drf", "setting": "d768_n80_L8", "chunk": "0"}
    big = compute.Limits(cpu=64 * GB, gpu=None)
    resident = pipeline.Grid(_demo(drf), limits=big)
    assert resident.unfit  # every layer resident: about 99 GB
    streamed = pipeline.Grid(_demo(pipeline.merge(drf, {"ws": {"max_memory_gb": 16}})), limits=big)
    job = streamed.job(wildcards)
    layout = map_costs.drf_layout(80, 768, 8, budget=16 * GB, restarts=registry.get("drf").settings.restarts)
    assert layout.streamed > 0 and job.cost.arrays == layout.bytes <= 16 * GB
    assert job.params["max_memory_gb"] == 16 and job.draw_on == "device"
    resident = pipeline.Grid(_demo(drf), limits=compute.Limits(cpu=2**50, gpu=None)).job(wildcards)
    assert job.cost.seconds > resident.cost.seconds
    tiny = pipeline.Grid(_demo(pipeline.merge(drf, {"ws": {"max_memory_gb": 0.5}})), limits=big)
    assert [j.point for j in tiny.unfit] == ["drf d768_n80_L8"]
    assert "0.5 GB allowed by ws.max_memory_gb" in tiny.left_out_message()


def test_cluster_jobs_plan_with_the_planners_limits(monkeypatch):
    monkeypatch.setenv(compute.PLANNED_LIMITS, "")  # restored (removed) after the test
    monkeypatch.delenv(compute.PLANNED_LIMITS)
    config = _demo({"limits": {"memory_gb": 3, "gpu_memory_gb": 40}})
    planned = compute.planned_limits(config, planner=True)
    assert planned == compute.Limits(
        cpu=3 * GB, gpu=40 * GB, hours=compute.LOCAL_MAX_JOB_HOURS
    )  # max_job_hours: auto, here
    # a job's process on another node, with other settings visible, takes the planner's limits
    assert compute.planned_limits(_demo(), planner=False) == planned
    assert compute.planned_limits(_demo(), planner=True) != planned  # the planner measures again
    # under a cluster profile each GPU job gets a GPU of its own: its jobs plan that way too
    cluster = compute.planned_limits(_demo({"limits": {"cluster_memory_gb": 250, "gpu_memory_gb": 40}}), planner=True)
    assert not cluster.shared_gpu and compute.planned_limits(_demo(), planner=False) == cluster


def test_gpu_budget_problem_names_every_job_and_step_over_the_budget():
    """Jobs and steps declaring more GPU memory than --resources gpu_mem_mb are named together, with
    the way out; within the budget there is no problem."""

    class _Job:
        def __init__(self, point: str, mb: int) -> None:
            self.point, self.gpu_mem_mb = point, mb

    steps = {"embed": 3000, "fig3_probes": 0}
    jobs = [_Job("rf d8_n4", 1037), _Job("drf d32_n48_L2", 2500)]
    text = pipeline.gpu_budget_problem(jobs, steps, 2083)
    assert text is not None and text.startswith("2 job(s) declare more GPU memory than --resources gpu_mem_mb=2083")
    assert "drf d32_n48_L2: 2500 MB" in text and "embed: 3000 MB" in text and "rf d8_n4" not in text
    assert "limits.gpu_memory_gb to at most 2.0 (GB)" in text
    assert pipeline.gpu_budget_problem(jobs, steps, 3000) is None


def test_penalised_searches_are_priced_at_the_step_cap_from_the_papers_widths():
    """Figure 5's penalised searches by the ascent (kinked maps: ReLU-RAF) ran to the step cap at
    d = 384 and 768 (2.2-4.1 x a Figure 4 search), those by Levenberg-Marquardt steps (smooth maps:
    RAF) stop by their rule at 1.2-2.1 x, and both stopped like Figure 4's at the demo's d = 16: the
    plan prices them so."""
    fig4 = gen_plan.gen_searches("fig4", {"trainings": ["fine_tune", "retrain"], "losses": ["surrogate", "direct"]})
    fig5 = gen_plan.gen_searches("fig5", {"trainings": ["fine_tune", "retrain"], "penalties": [1, 0.1, 0.01]})
    weight = gen_plan.PENALISED_SEARCH_WEIGHT
    lsq = gen_plan.LEAST_SQUARES_SEARCH_WEIGHT
    assert 1 < lsq < weight
    assert gen_plan.search_load(fig4, 768, 500) == 4 == gen_plan.search_load(fig4, 768, 500, True)
    assert gen_plan.search_load(fig5, 16, 500) == 6 == gen_plan.search_load(fig5, 16, 500, True)
    assert gen_plan.search_load(fig5, 768, 500) == pytest.approx(6 * weight)
    assert gen_plan.search_load(fig5, 768, 1000) == pytest.approx(12 * weight)
    assert gen_plan.search_load(fig5, 768, None) == gen_plan.search_load(fig5, 768, 500)
    assert gen_plan.search_load(fig5, 768, 500, True) == gen_plan.search_load(fig5, 768, 1000, True) == 6 * lsq
    wide = _demo({"gen": {"d": 128, "data": ["synthetic"]}})
    fig5_jobs = [
        j for j in pipeline.Grid(wide, limits=SMALL).jobs if isinstance(j, gen_plan.GenJob) and j.figure == "fig5"
    ]
    by_map = {j.map: j for j in fig5_jobs}
    assert {"raf", "relu_raf"} <= set(by_map)
    for map_name, per_search in (("relu_raf", weight * wide["gen"]["search"]["max_steps"] / 500), ("raf", lsq)):
        job = by_map[map_name]
        spec = registry.get(map_name)
        assert spec.settings.least_squares == (map_name == "raf")
        load = len(job.searches) * per_search  # the demo's cap: 200
        assert job.cost.seconds == pytest.approx(
            spec.gen_seconds(job.n, 128, job.N, {}, searches=load) * len(job.simulations)
        )
        plain = spec.gen_seconds(job.n, 128, job.N, {}, searches=len(job.searches)) * len(job.simulations)
        assert job.cost.seconds > plain
