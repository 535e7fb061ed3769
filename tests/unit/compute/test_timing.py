"""When a run ends: the list-scheduling simulation of a run's jobs on N cores, the time calibration
fitted on measured jobs (Snakemake benchmark files and logs), limits.max_job_hours, and `wordsens plan
--config` read the way `snakemake --config` reads it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from workflow_utils import demo_config

from wordsens import cli, compute, pipeline, studies
from wordsens.compute import costs
from wordsens.compute.placement import CUDA_CONTEXT_BYTES
from wordsens.compute.timing import MIN_MODEL_SECONDS, Calibration, Coefficients, Sample, fit
from wordsens.pipeline import Task, simulate

ROOT = Path(__file__).resolve().parents[3]
GB = 1024**3


_demo = demo_config  # config.yaml + config/demo.yaml + changes, checked (workflow_utils)


# ----------------------------------------------------------------------------- the scheduler
def test_more_cores_finish_earlier_and_threads_are_respected():
    tasks = [Task(f"t{i}", "ws", 10.0) for i in range(4)]
    end = {c: max(e for _, e in simulate(tasks, c).values()) for c in (1, 2, 4)}
    assert end == {1: 40.0, 2: 20.0, 4: 10.0}
    # a 2-thread task never shares 2 cores with another task; on 1 core it is scaled down to 1
    wide = [Task("wide", "data", 10.0, threads=2), Task("a", "ws", 10.0), Task("b", "ws", 10.0)]
    times = simulate(wide, 2)
    assert times["wide"] == (0.0, 10.0) and times["a"] == (10.0, 20.0) and times["b"] == (10.0, 20.0)
    assert max(e for _, e in simulate(wide, 1).values()) == 30.0


def test_the_embedding_starts_at_the_first_free_core_after_its_pool():
    """As Snakemake's scheduler: the ready task of highest priority that fits starts first, and one that
    does not fit leaves its turn to the next (a 2-thread data step waits for two free cores while
    1-thread jobs take each core as it frees: docs/running.md); dependencies are respected."""
    tasks = [
        Task("pool", "data", 5.0, priority=50),
        Task("embed", "data", 10.0, priority=50, after=("pool",)),
        *[Task(f"syn{i}", "ws", 4.0) for i in range(6)],
        Task("imdb", "ws", 1.0, after=("embed",)),
    ]
    times = simulate(tasks, 2)
    # the pool ends at 5 while syn1 (4-8) runs: the embedding takes that core at once
    assert times["syn1"] == (4.0, 8.0) and times["embed"] == (5.0, 15.0)
    assert times["imdb"][0] >= times["embed"][1]
    wide = [replace(t, threads=2) if t.name == "embed" else t for t in tasks]
    times = simulate(wide, 2)
    # two free cores at once only when no 1-thread job is left to take one as it frees
    assert times["embed"][0] == max(times[f"syn{i}"][1] for i in range(6)) > 5.0
    with pytest.raises(ValueError, match="unknown tasks"):
        simulate([Task("x", "ws", 1.0, after=("nothing",))], 1)
    with pytest.raises(ValueError, match="needs 2000 MB of GPU memory, 0 MB planned"):
        simulate([Task("x", "ws", 1.0, gpu_mem_mb=2000)], 1)


def test_the_demo_plan_ends_later_on_one_core_than_on_two():
    config = _demo()
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    tasks = pipeline.run_tasks(config, grid)
    assert {t.name for t in tasks} >= {"reviews", "pool", "embed", "claims", "fig1_attention", "fig1_lm"}
    assert len([t for t in tasks if t.group not in ("data", "figures", "probes")]) == len(grid.fit)
    one, two = (max(e for _, e in simulate(tasks, c).values()) for c in (1, 2))
    assert two < one <= sum(t.seconds for t in tasks) + 1e-6
    text = "\n".join(pipeline.finish_lines(config, grid, 2))
    assert "expected wall time on 2 cores" in text and "fig4" in text and "probes" in text


def test_the_trained_study_runs_after_the_pool_and_its_encoder_then_its_table_figure_and_claims():
    """The trained jobs wait for the pool and the encoder they measure (model.name's task, or a task of
    their own for another trained.model), then its table, whose figure and the claims follow."""
    config = _demo()
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    by_name = {t.name: t for t in pipeline.run_tasks(config, grid)}
    assert (
        set(by_name["trained/layer1"].after) == {"pool", "demo_model"} and by_name["trained/layer2"].group == "trained"
    )
    assert set(by_name["table trained"].after) == {"trained/layer1", "trained/layer2"}
    assert by_name["trained_figure"].after == ("table trained",) and "table trained" in by_name["claims"].after
    other = _demo({"trained": {"model": "minilm"}})
    grid = pipeline.Grid(other, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    by_name = {t.name: t for t in pipeline.run_tasks(other, grid)}
    assert set(by_name["trained/layer6"].after) == {"pool", "packaged_model minilm"}
    assert "demo_model" in by_name["pool"].after  # the pool is still model.name's


# ----------------------------------------------------------------------------- the calibration
def test_the_fit_recovers_known_coefficients():
    samples = [Sample("ws:rf", m, 5.0 + 3.0 * m) for m in (1.0, 4.0, 9.0)]
    samples += [Sample("ws:raf", m, 5.0 + 0.5 * m) for m in (2.0, 8.0)]
    samples += [Sample("ws:mh_raf", 0.1, 5.0), Sample("gen_figure", 0.0, 20.0), Sample("gen_figure", 0.0, 30.0)]
    coefficients = fit(samples)
    assert coefficients["ws:rf"].fixed == pytest.approx(5.0) and coefficients["ws:rf"].scale == pytest.approx(3.0)
    assert coefficients["ws:raf"].scale == pytest.approx(0.5)
    assert coefficients["ws:mh_raf"].scale is None  # all start-up: the pooled scale applies
    assert coefficients["gen_figure"].fixed == pytest.approx(25.0)
    calibration = Calibration(coefficients, ("here",))
    # a family measured only at start-up: its fitted start-up, its built-in scale (x speed 1)
    assert calibration.of("ws:mh_raf").scale == Calibration().of("ws:mh_raf").scale
    assert calibration.of("ws:mh_raf").fixed == pytest.approx(5.0)
    assert calibration.of("ws:my_plugin").scale == coefficients["ws:*"].scale  # unknown: the kind's pooled fit
    assert calibration.seconds("ws:rf", 10.0) == pytest.approx(35.0)
    assert calibration.seconds("my_step") == pytest.approx(25.0)  # a step unknown to both: the steps' mean
    assert calibration.seconds("fig3_probes") == pytest.approx(Calibration().seconds("fig3_probes"))
    assert Calibration.from_dict(json.loads(json.dumps(calibration.to_dict()))) == calibration


def test_a_family_of_no_registered_study_is_a_clear_error_not_a_guess():
    """A job family whose kind nothing gives a time for (a plugin's kind before its study registers)
    is refused with what to do; a kind's unknown family takes the kind's pooled time."""
    from wordsens.compute import timing

    with pytest.raises(LookupError, match=r"'toy:norms' \(nor its kind 'toy:\*'\).*registers"):
        Calibration().of("toy:norms")
    saved = timing.builtin_snapshot()
    try:
        timing.add_builtin("toy:*", 3.0, 2.0)
        assert Calibration().seconds("toy:norms", 5.0) == pytest.approx(13.0)
    finally:
        timing.restore_builtin(saved)
    assert Calibration().seconds("my_step") == pytest.approx(Calibration().seconds("rule:*"))


def test_one_long_job_does_not_set_its_familys_scale():
    """The fit weighs relative errors: ten jobs at 1 x their model and one long job at 4 x (as a
    long-context search measured) give a scale near 1, which prices the ten within 15%; least
    squares on seconds would give 4 and price each of the ten about 4 x too long."""
    samples = [Sample("ws:relu_raf", m, 2.0 + 1.0 * m) for m in (2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0)]
    samples.append(Sample("ws:relu_raf", 50.0, 2.0 + 4.0 * 50.0))
    found = fit(samples)["ws:relu_raf"]
    assert found.scale is not None and 0.9 < found.scale < 1.4
    for sample in samples[:-1]:
        assert found.predict(sample.model) == pytest.approx(sample.measured, rel=0.15)
    assert fit(samples)["ws:*"].scale == pytest.approx(found.scale)  # one family: the pooled fit is its own


def _write_benchmarks(results: Path, grid: pipeline.Grid, fixed: float, scale: float) -> None:
    """Benchmark files of the model ``fixed + scale * model seconds``, where a family's model seconds
    matter (``MIN_MODEL_SECONDS``), else ``fixed`` (the fit takes such jobs as start-up)."""
    top: dict[str, float] = {}
    for job in grid.jobs:
        top[job.family] = max(top.get(job.family, 0.0), job.cost.seconds)
    for job in grid.jobs:
        path = results / "benchmarks" / f"{job.key}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        seconds = fixed + (scale * job.cost.seconds if top[job.family] >= MIN_MODEL_SECONDS else 0.0)
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds:.6f}\t0:00:01\t300\n")


def test_calibrate_from_benchmark_files_stores_and_prints(tmp_path, monkeypatch, capsys):
    """Benchmark files made with known coefficients give them back, stored where
    WORDSENS_CALIBRATION says; the plan prints predicted against measured per family."""
    # 6 simulations per job: the demo's RAF generalisation jobs cost more than MIN_MODEL_SECONDS (3: 0.9 s)
    gen = {"data": ["synthetic"], "simulations": 6, "simulations_per_job": 6}
    config = _demo({"results": str(tmp_path / "results"), "ws": {"data": "synthetic"}, "gen": gen})
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    _write_benchmarks(tmp_path / "results", grid, fixed=4.0, scale=50.0)
    measured = pipeline.measure(grid.jobs, [tmp_path / "results"])
    assert len(measured.samples) == len(grid.jobs) and measured.unmatched == 0
    found = fit(measured.samples)
    scaled = [f for f, c in found.items() if c.scale is not None and ":" in f]
    assert {"ws:*", "gen:*", "gen:raf", "ws:mh_raf"} <= set(scaled)  # families with model seconds > 1
    for family in scaled:
        assert found[family].fixed == pytest.approx(4.0) and found[family].scale == pytest.approx(50.0), family
    assert found["ws:drf"].fixed == pytest.approx(4.0) and found["ws:drf"].scale is None  # all start-up

    store = tmp_path / "cal.json"
    monkeypatch.setenv("WORDSENS_CALIBRATION", str(store))
    (tmp_path / "run.yaml").write_text(
        yaml.safe_dump(
            {"results": str(tmp_path / "results"), "ws": {"data": "synthetic"}, "gen": {"data": ["synthetic"]}}
        )
    )
    base = [
        "--base",
        str(ROOT / "config.yaml"),
        "--configfile",
        str(ROOT / "config/demo.yaml"),
        str(tmp_path / "run.yaml"),
    ]
    assert cli.main(["plan", *base, "--cores", "2", "--calibrate", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert f"stored in {store}" in out and "ws:raf" in out and "expected wall time on 2 cores" in out
    assert "to fit the times on this machine" not in out  # calibrated: no hint
    assert pipeline.stored_calibration().of("ws:raf").fixed == pytest.approx(4.0)
    monkeypatch.setenv("WORDSENS_CALIBRATION", "none")
    assert cli.main(["plan", *base, "--cores", "2"]) == 0
    assert f"--calibrate {tmp_path / 'results'}" in capsys.readouterr().out  # benchmarks there: a hint
    assert cli.main(["plan", *base, "--calibrate", str(tmp_path / "nothing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_snakemake_logs_give_each_jobs_time_and_the_runs(tmp_path):
    log = tmp_path / "run.snakemake.log"
    log.write_text(
        "Provided cores: 2 (use --cores to define parallelism)\n"
        "[Thu Nov 26 23:39:09 2026]\nlocalrule reviews:\n    output: r/imdb/reviews.parquet\n    jobid: 5\n"
        "[Thu Nov 26 23:39:09 2026]\nrule ws:\n    output: res/ws/rf/d16_n8/chunk0.parquet\n    jobid: 7\n"
        "[Thu Nov 26 23:39:13 2026]\nFinished jobid: 5 (Rule: reviews)\n"
        "[Thu Nov 26 23:39:21 2026]\nFinished jobid: 7 (Rule: ws)\n"
        "Elapsed time: 0:08:33.8\n"
    )
    jobs, run = pipeline.snakemake_log_jobs(log)
    assert [(j.rule, j.outputs[0], j.seconds) for j in jobs] == [
        ("reviews", "r/imdb/reviews.parquet", 4.0),
        ("ws", "res/ws/rf/d16_n8/chunk0.parquet", 12.0),
    ]
    assert run == {"elapsed": pytest.approx(513.8), "cores": 2.0}


def test_a_job_in_a_log_and_a_benchmark_file_counts_once_as_its_grid_job(tmp_path):
    """Every grid job of a log (a trained layer, a study's WS job) is matched by its output path, so a
    trained layer with a benchmark file is one ``ws:trained`` sample, not a second one of a rule."""
    config = _demo()
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    bench = tmp_path / "res" / "benchmarks" / "trained" / "layer1.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\n30.5\t0:00:30\t300\n")
    log = tmp_path / "run.snakemake.log"
    log.write_text(
        "[Thu Nov 26 23:39:09 2026]\nrule trained:\n    output: res/trained/layer1.parquet\n    jobid: 3\n"
        "[Thu Nov 26 23:39:09 2026]\nrule ws:\n    output: res/variants/rf/d16_n4/chunk0.parquet\n    jobid: 4\n"
        "[Thu Nov 26 23:39:11 2026]\nrule table:\n    output: res/tables/ws_rf.parquet\n    jobid: 5\n"
        "[Thu Nov 26 23:39:40 2026]\nFinished jobid: 3 (Rule: trained)\n"
        "[Thu Nov 26 23:39:41 2026]\nFinished jobid: 4 (Rule: ws)\n"
        "[Thu Nov 26 23:39:42 2026]\nFinished jobid: 5 (Rule: table)\n"
    )
    for sources in ([tmp_path / "res", log], [log, tmp_path / "res"]):  # the benchmark file wins either way
        measured = pipeline.measure(grid.jobs, sources)
        got = sorted((s.family, s.measured) for s in measured.samples)
        assert got == [("table", 31.0), ("ws:rf", 32.0), ("ws:trained", 30.5)] and measured.unmatched == 0
    # a trained layer of another configuration is not a step of its own
    other = tmp_path / "other.snakemake.log"
    other.write_text(
        "[Thu Nov 26 23:39:09 2026]\nrule trained:\n    output: res/trained/layer9.parquet\n    jobid: 3\n"
        "[Thu Nov 26 23:39:40 2026]\nFinished jobid: 3 (Rule: trained)\n"
    )
    measured = pipeline.measure(grid.jobs, [other])
    assert not measured.samples and measured.unmatched == 1


def test_a_step_in_a_log_and_a_benchmark_file_counts_once(tmp_path):
    """An embedding and a probe job in both the results folder's benchmark files and the run's log (which
    names each job's benchmark file) are one sample each, the benchmark file's, in either order; the
    probes' benchmarked steps are the probes study's (``Step.benchmarked``)."""
    config = _demo()
    limits = compute.Limits(16 * GB, None)
    grid = pipeline.Grid(config, limits=limits, calibration=Calibration())
    benchmarked = [step.name for step in studies.get("probes").steps(config, limits) if step.benchmarked]
    assert "fig1_attention" in benchmarked
    bench = tmp_path / "res" / "benchmarks"
    for key, seconds in (("embed/tiny_layer0", 12.5), ("fig1_attention/fig1_attention", 3.25)):
        (bench / key).parent.mkdir(parents=True, exist_ok=True)
        (bench / f"{key}.tsv").write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:12\t300\n")
    log = tmp_path / "run.snakemake.log"
    log.write_text(
        "[Thu Nov 26 23:39:09 2026]\nlocalrule embed:\n    output: r/embeddings/tiny/layer0/hidden.npy\n"
        "    jobid: 3\n    benchmark: res/benchmarks/embed/tiny_layer0.tsv\n"
        "    resources: tmpdir=/tmp, gpu=1, gpu_mem_mb=4512, mem_mb=4028\n"
        "[Thu Nov 26 23:39:09 2026]\nlocalrule fig1_attention:\n    output: res/tables/fig1_attention.csv\n"
        "    jobid: 4\n    benchmark: res/benchmarks/fig1_attention/fig1_attention.tsv\n"
        "[Thu Nov 26 23:39:23 2026]\nFinished jobid: 3 (Rule: embed)\n"
        "[Thu Nov 26 23:39:23 2026]\nFinished jobid: 4 (Rule: fig1_attention)\n"
    )
    for sources in ([tmp_path / "res", log], [log, tmp_path / "res"]):
        measured = pipeline.measure(grid.jobs, sources, benchmarked)
        got = sorted((s.family, s.measured) for s in measured.samples)
        assert got == [("embed", 12.5), ("fig1_attention", 3.25)], sources
    jobs, _ = pipeline.snakemake_log_jobs(log)
    assert [(j.benchmark_key, j.gpu) for j in jobs] == [
        ("embed/tiny_layer0", 1),
        ("fig1_attention/fig1_attention", None),
    ]
    # the log alone: its whole seconds, once each
    assert sorted(s.measured for s in pipeline.measure(grid.jobs, [log], benchmarked).samples) == [14.0, 14.0]


# ----------------------------------------------------------------------------- the time limit
def test_jobs_above_max_job_hours_are_left_out_with_the_ways_out():
    config = _demo({"variants": None, "long_context": None, "positions": None})
    slow = Calibration({"ws:*": Coefficients(0.0, 1.0), "ws:rf": Coefficients(7200.0, 0.0)})
    kept = pipeline.Grid(config, limits=compute.Limits(16 * GB, None, None), calibration=slow)
    limited = pipeline.Grid(config, limits=compute.Limits(16 * GB, None, 1.0), calibration=slow)
    assert not kept.unfit and {job.map for job in limited.unfit} == {"rf"}
    assert {job.map for job in limited.fit} >= {"raf", "drf"}
    text = limited.left_out_message()
    assert "rf d16_n8 (1 job): about 2 hours each, 1 allowed by limits.max_job_hours" in text
    assert "profiles/slurm" in text and "lifts limits.max_job_hours" in text
    assert limited.left_out(map="rf")[0]["needs_hours"] == 2.0
    assert compute.Limits.of(_demo({"limits": {"memory_gb": 4, "max_job_hours": "null"}})).hours is None
    assert compute.Limits.of(_demo({"limits": {"memory_gb": 4}})).hours == compute.LOCAL_MAX_JOB_HOURS == 0.2
    assert compute.Limits.from_text(limited.limits.to_text()) == limited.limits
    # a job just over the limit is printed above it (0.504 h, not "0.5 hours each, 0.5 allowed")
    just_over = Calibration({"ws:*": Coefficients(0.0, 1.0), "ws:rf": Coefficients(0.504 * 3600, 0.0)})
    near = pipeline.Grid(config, limits=compute.Limits(16 * GB, None, 0.5), calibration=just_over)
    assert "rf d16_n8 (1 job): about 0.504 hours each, 0.5 allowed by limits.max_job_hours" in near.left_out_message()


# ----------------------------------------------------------------------------- --config
def test_config_values_are_merged_over_the_files_as_snakemake_passes_them():
    """`--config 'limits={memory_gb: 8, max_job_hours: null}'` reaches the loader as text values."""
    overrides = {"limits": {"memory_gb": "8", "max_job_hours": "null"}, "seed": 3}
    config = pipeline.load_config(ROOT / "config.yaml", ROOT / "config/demo.yaml", overrides=overrides)
    assert config["seed"] == 3 and config["data"]["source"] == "demo"
    assert compute.Limits.of(config).cpu == 8 * GB and compute.Limits.of(config).hours is None


@pytest.mark.slow  # importing snakemake.cli asks the SLURM plugin about the cluster: ~10 s here
def test_plan_reads_config_values_as_snakemake_does(capsys):
    base = ["--base", str(ROOT / "config.yaml"), "--configfile", str(ROOT / "config/demo.yaml")]
    assert (
        cli.main(["plan", *base, "--cores", "1", "--config", "limits={memory_gb: 8, max_job_hours: null}", "seed=3"])
        == 0
    )
    out = capsys.readouterr().out
    assert "8.0 GB (limits.memory_gb)" in out and "expected wall time on 1 core:" in out
    assert cli.main(["plan", *base, "--config", "data.source=parquet"]) == 2  # snakemake refuses it too
    assert "valid identifier" in capsys.readouterr().err
    assert cli.main(["plan", *base, "--config", "limits={max_job_hours: -1}"]) == 2
    assert "limits.max_job_hours" in capsys.readouterr().err


def test_figures_name_points_left_out_for_time_in_hours():
    from wordsens.plots.common import not_run_note

    points = [{"n": 50, "L": 2, "needs_gb": 5.0, "needs_hours": 1.7}, {"n": 80, "L": 8, "needs_gb": 99.4}]
    assert not_run_note(points, ["L", "n"]) == "not run: L=2 n=50 (needs ~1.7 h)\nL=8 n=80 (needs 99.4 GB)"


def _gpu_memory_in_use(tasks, times) -> list[int]:
    """The GPU memory (MB) held at every task start, by the tasks running then."""
    return [sum(t.gpu_mem_mb for t in tasks if times[t.name][0] <= times[s.name][0] < times[t.name][1]) for s in tasks]


def test_gpu_tasks_share_the_gpu_while_their_memory_fits():
    """As Snakemake under --resources gpu_mem_mb=10000: the three small tasks run side by side (their
    sum fits), the large one alone (with any other it would not), CPU tasks beside them all."""
    tasks = [
        Task("big", "ws", 4.0, gpu_mem_mb=8000),
        *[Task(f"small{i}", "ws", 2.0, gpu_mem_mb=3000) for i in range(3)],
        Task("cpu", "ws", 10.0),
    ]
    times = simulate(tasks, 8, gpu_mem_mb=10_000)
    assert times["big"] == (0.0, 4.0) and times["cpu"] == (0.0, 10.0)
    assert {times[f"small{i}"] for i in range(3)} == {(4.0, 6.0)}
    assert max(_gpu_memory_in_use(tasks, times)) <= 10_000
    # one GPU's worth of budget per task: every task at once
    assert {start for start, _ in simulate(tasks, 8, gpu_mem_mb=17_000).values()} == {0.0}


def test_the_plan_shares_the_planned_gpu_among_its_jobs():
    config = _demo({"ws": {"device": "cuda"}, "gen": {"device": "cuda"}, "variants": None, "long_context": None})
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, 8 * GB), calibration=Calibration())
    tasks = pipeline.run_tasks(config, grid)
    on_gpu = [t for t in tasks if t.gpu_mem_mb]
    assert {t.group for t in on_gpu} >= {"ws", "fig4", "fig5", "positions"}  # every job kind of the grid
    assert all(t.gpu_mem_mb > CUDA_CONTEXT_BYTES // costs.MB for t in on_gpu)
    budget = pipeline.gpu_budget_mb(tasks, grid.limits)
    assert budget == 8 * 1024
    times = simulate(tasks, 16, budget)
    assert max(_gpu_memory_in_use(tasks, times)) <= budget
    assert max(_gpu_memory_in_use(on_gpu, times)) > max(t.gpu_mem_mb for t in on_gpu)  # side by side
    # the plan's GPU is held by at most its slots' tasks at once (Snakemake's --resources gpu=2)
    slots = pipeline.gpu_slots(tasks, grid.limits)
    assert slots == grid.limits.gpu_slots == 2
    times = simulate(tasks, 16, budget, slots)
    starts = sorted(times[t.name][0] for t in on_gpu)
    assert max(sum(times[t.name][0] <= at < times[t.name][1] for t in on_gpu) for at in starts) == 2
    assert "on 16 cores and a GPU (8 GB shared)" in pipeline.finish_lines(config, grid, 16)[0]
    # a cluster grants each GPU job a GPU of its own (only DRF there under auto)
    cluster = pipeline.Grid(config, limits=compute.Limits(16 * GB, 8 * GB, shared_gpu=False))
    assert "on 4 cores and a GPU per GPU job" in pipeline.finish_lines(config, cluster, 4)[0]


def test_runtime_requests_cover_the_calibrated_estimate():
    config = _demo({"variants": None, "long_context": None, "positions": None})
    slow = Calibration({"ws:*": Coefficients(600.0, 1.0)})
    grid = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=slow)
    job = grid.select(map="raf")[0]
    assert job.runtime < 10 and grid.runtime(job) == int(5 + 5 * grid.estimate(job) / 60) >= 55


@pytest.mark.slow  # one benchmark process and two worker processes
def test_bench_model_times_the_grids_own_jobs_against_the_plan():
    """benchmarks/bench_model.py on the demo: one job each of two families, run by the workflow's
    own functions, with their model, planned and measured seconds, the median scale per family and
    the run's wall time under the measured scales."""
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_model.py"),
            "--configfile",
            str(ROOT / "config" / "demo.yaml"),
            "--families",
            "ws:raf",
            "gen:raf",
            "--per-family",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith(("ws:raf ", "gen:raf "))]
    measured = [row for row in rows if len(row) > 5 and row[-1].replace(".", "").isdigit()]
    assert {row[0] for row in measured} == {"ws:raf", "gen:raf"}, out.stdout
    for row in measured[:2]:  # model s, planned s, measured s, measured / planned, scale
        model, planned, seconds, ratio, scale = map(float, row[-5:])
        # every number is printed to 0.01 (+-0.005): a quotient's rounding error grows as its divisor
        # shrinks, from the numerator's rounding (0.005 / divisor) and the divisor's (quotient x 0.005 /
        # divisor); on a fast machine the demo's jobs take 0.1 s, where both matter
        slack = 0.01 + 0.01 * ratio + (1 + ratio) * 0.006 / planned
        assert seconds > 0 and ratio == pytest.approx(seconds / planned, abs=slack)
        assert scale == pytest.approx(seconds / model, abs=0.01 + 0.01 * scale + (1 + scale) * 0.006 / model)
    assert "scale per family" in out.stdout and "with the measured scales" in out.stdout
    assert "expected wall time on 2 cores" in out.stdout


# ----------------------------------------------------------------------------- the speed probe
def test_the_speed_factor_stretches_the_built_in_times_not_the_measured_ones():
    slow = Calibration(speed=2.0)
    assert slow.seconds("ws:raf", 10.0) == pytest.approx(2.0 * Calibration().seconds("ws:raf", 10.0))
    assert slow.seconds("gen_figure") == pytest.approx(2.0 * Calibration().seconds("gen_figure"))
    # a family measured here keeps its own coefficients; a start-up-only fit borrows the built-in scale x 2
    fitted = {
        "ws:raf": Coefficients(3.0, 0.5, 4),
        "ws:rf": Coefficients(3.0, None, 2),
        "ws:*": Coefficients(3.0, 0.4, 6),
        "rule:*": Coefficients(20.0, None, 3),
    }
    measured = Calibration(fitted, ("run",), 2.0)
    assert measured.seconds("ws:raf", 10.0) == pytest.approx(8.0)
    assert measured.seconds("ws:rf", 10.0) == pytest.approx(3.0 + 2.0 * Calibration().of("ws:rf").scale * 10.0)
    # a map the run did not measure: its kind's start-up here, its built-in scale x 2; a step: built in x 2
    assert measured.seconds("ws:drf", 10.0) == pytest.approx(3.0 + 2.0 * Calibration().of("ws:drf").scale * 10.0)
    assert measured.seconds("gen_figure") == pytest.approx(2.0 * Calibration().seconds("gen_figure"))
    assert Calibration.from_dict(json.loads(json.dumps(measured.to_dict()))) == measured
    assert Calibration.from_dict({"coefficients": {}, "sources": ["x"]}).speed == 1.0  # a file from before
    with pytest.raises(ValueError, match="positive number"):
        Calibration(speed=0.0)


def test_a_run_measures_its_machines_speed_for_the_families_it_did_not_run():
    """Jobs that ran 3 x the built-in times (the start-ups too) give speed 3, which prices the maps
    the run did not have at 3 x built in; a run at the built-in times gives 1."""
    builtin = Calibration()
    jobs = [("ws:rf", 20.0), ("ws:raf", 5.0), ("ws:raf", 40.0), ("gen:raf", 30.0), ("gen_figure", 0.0)]
    slow = Calibration.from_samples([Sample(f, m, 3.0 * builtin.seconds(f, m)) for f, m in jobs])
    assert slow.speed == pytest.approx(3.0)
    assert slow.seconds("ws:relu_raf", 10.0) == pytest.approx(3.0 * builtin.seconds("ws:relu_raf", 10.0), rel=1e-6)
    assert slow.seconds("fig3_probes") == pytest.approx(3.0 * builtin.seconds("fig3_probes"))
    same = Calibration.from_samples([Sample(f, m, builtin.seconds(f, m)) for f, m in jobs])
    assert same.speed == pytest.approx(1.0) and Calibration.from_samples([]).speed == 1.0


def test_a_slower_machine_leaves_out_the_job_that_fits_here():
    """limits.max_job_hours judges the probe-scaled times: the demo's longest job fits at 1.5 x its
    built-in estimate, and is left out on a machine twice as slow (with the jobs above half the limit)."""
    config = _demo({"variants": None, "long_context": None, "positions": None})
    here = pipeline.Grid(config, limits=compute.Limits(16 * GB, None), calibration=Calibration())
    longest = max(here.fit, key=here.estimate)
    hours = 1.5 * here.estimate(longest) / 3600
    fits = pipeline.Grid(config, limits=compute.Limits(16 * GB, None, hours), calibration=Calibration())
    slow = pipeline.Grid(config, limits=compute.Limits(16 * GB, None, hours), calibration=Calibration(speed=2.0))
    twice_over = {job.key for job in here.fit if 2.0 * here.estimate(job) > hours * 3600}
    assert not fits.unfit and longest in slow.unfit and {job.key for job in slow.unfit} == twice_over


def test_plan_probe_stores_the_speed_and_later_plans_use_it(tmp_path, monkeypatch, capsys):
    from wordsens.compute import timing
    from wordsens.search import probe

    seconds = probe.probe_seconds(repeats=1)  # the real probe runs (its time depends on the machine)
    assert seconds > 0 and timing.speed_factor(seconds) > 0
    monkeypatch.setattr(probe, "probe_seconds", lambda: 2.0 * timing.REFERENCE_SECONDS)
    monkeypatch.chdir(tmp_path)  # no results/demo/benchmarks of a local run here (their hint would win)
    store = tmp_path / "cal.json"
    monkeypatch.setenv("WORDSENS_CALIBRATION", str(store))
    base = ["--base", str(ROOT / "config.yaml"), "--configfile", str(ROOT / "config/demo.yaml")]
    assert cli.main(["plan", *base, "--cores", "2"]) == 0
    assert "add --probe" in capsys.readouterr().out and not store.exists()  # built in: a hint, nothing stored
    assert cli.main(["plan", *base, "--cores", "2", "--probe"]) == 0
    out = capsys.readouterr().out
    assert "machine: built-in times x 2.00" in out and f"stored in {store}" in out
    assert pipeline.stored_calibration().speed == pytest.approx(2.0)
    assert cli.main(["plan", *base, "--cores", "2"]) == 0
    out = capsys.readouterr().out
    assert "built-in times x 2.00 (this machine's speed)" in out and "add --probe" not in out
    # a fit stored already keeps its coefficients and sources under a new probe
    store.write_text(json.dumps(Calibration({"ws:raf": Coefficients(1.0, 0.2, 3)}, ("run",), 1.5).to_dict()))
    assert cli.main(["plan", *base, "--cores", "2", "--probe"]) == 0
    kept = pipeline.stored_calibration()
    assert kept.speed == pytest.approx(2.0) and kept.sources == ("run",) and kept.of("ws:raf").scale == 0.2
    # a store that cannot be read does not block the command that replaces it
    store.write_text("{not json")
    assert cli.main(["plan", *base, "--cores", "2", "--probe"]) == 0
    assert "cannot be read" in capsys.readouterr().out and pipeline.stored_calibration().speed == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive time"):
        timing.speed_factor(0.0)
    with pytest.raises(ValueError, match="was it busy"):
        timing.speed_factor(50.0 * timing.REFERENCE_SECONDS)
