"""wordsens.compute.placement: the CPU or the GPU by the cost model, with the GPU's sharing and start-up
counted; the working dtype of ws.dtype; DRF's trials split to run side by side; the GPU rates as fitted
(benchmarks/gpu_replay.py) on the H200 run (tests/data/gpu/h200_run.csv) and its single jobs."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from wordsens import compute, pipeline, studies
from wordsens.compute import placement
from wordsens.compute.placement import GPU_RATES, GPU_STARTUP, gpu_pays, working_dtype
from wordsens.compute.timing import BUILTIN, Calibration
from wordsens.maps import registry

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the fit of the GPU rates (a developer's tool)
from gpu_replay import GpuSample, fit_rates, gpu_samples, read_jobs  # noqa: E402

GB = 1024**3
RUN = ROOT / "tests" / "data" / "gpu" / "h200_run.csv"
STOP = 468.0  # the run was stopped 474 s after Snakemake started, 6 s before the log's first stamp


@pytest.fixture(autouse=True)
def _studies_registered() -> None:
    """The built-in times of the WS families (``BUILTIN["ws:drf"]``) are the WS rule's
    (``wordsens.studies.sensitivity``): they join ``BUILTIN`` when the studies are registered, as the plan
    registers them before it places a job."""
    studies.names()


def _cpu_model(map_name: str, n: int, d: int, options: dict | None = None, positions: int = 1) -> float:
    """One trial's CPU cost-model seconds (what the GPU rates are relative to)."""
    return registry.get(map_name).ws_seconds(n, d, options or {}, positions=positions)


def _by_hand(family: str, model: float, searches: int, slots: int, cores: int, dtype: str | None = None) -> bool:
    """gpu_pays written out: (start-up + slots x (latency x searches + ratio x model)) x cores / slots
    against the built-in CPU time fixed + scale x model."""
    rate = GPU_RATES.get(f"{family}:{dtype}", GPU_RATES[family])
    gpu = GPU_STARTUP + slots * (rate.per_search * searches + rate.ratio * model)
    cpu = BUILTIN[family].fixed + BUILTIN[family].scale * model
    return gpu * cores / slots < cpu


def test_drf_at_the_largest_point_goes_to_the_gpu_and_small_searches_stay_on_the_cpu():
    """On a 16-core node with a GPU shared by 2 jobs: DRF d = 768, n = 80, L = 8 (10 trials: hours on a
    core, a minute on the GPU) goes there; every position of RF and RAF at d = 64, n = 128 (hundreds of
    small searches, slower on a GPU even alone) and a small RAF point stay on the CPU."""
    drf = 10 * _cpu_model("drf", 80, 768, {"L": 8})
    assert gpu_pays("ws:drf", drf, 10, slots=2, cores=16, dtype="bfloat16") is True
    assert _by_hand("ws:drf", drf, 10, 2, 16, "bfloat16") is True
    for name, n, d, positions, trials in (("rf", 128, 64, 128, 3), ("raf", 128, 64, 128, 3), ("raf", 10, 192, 1, 10)):
        model = trials * _cpu_model(name, n, d, positions=positions)
        searches = trials * positions
        assert gpu_pays(f"ws:{name}", model, searches, slots=2, cores=16) is False, (name, n, d)
        assert _by_hand(f"ws:{name}", model, searches, 2, 16) is False
    # the rule weighs a slot against the cores beside it: alone on a 2-slot GPU beside 2 cores, the RF
    # block at d = 768, n = 150 pays (its Gram matrices), beside 16 cores it does not
    rf = 10 * _cpu_model("rf", 150, 768)
    assert gpu_pays("ws:rf", rf, 10, slots=2, cores=2) and not gpu_pays("ws:rf", rf, 10, slots=2, cores=16)


def test_the_default_config_on_a_gpu_node():
    """The grid of config.yaml on an H200-like node: DRF on the GPU in bfloat16, its 10 trials in two
    jobs that fit the GPU side by side; the positions and small attention jobs on the CPU, their params
    without a dtype (results computed on the CPU are not re-run); cuda and cpu force every job."""
    config = pipeline.load_config(str(ROOT / "config.yaml"))
    node = compute.Limits(cpu=125 * GB, gpu=140 * GB, cores=16)
    grid = pipeline.Grid(config, limits=node, calibration=Calibration())
    largest = grid.select(folder="ws", map="drf", setting="d768_n80_L8")
    assert [job.device for job in largest] == ["cuda", "cuda"] and [len(job.trials) for job in largest] == [5, 5]
    assert {job.params["dtype"] for job in largest} == {"bfloat16"}
    assert 2 * largest[0].cost.device_bytes <= node.gpu < 3 * largest[0].cost.device_bytes
    stays = grid.select(study="positions") + grid.select(folder="ws", map="raf")
    assert {job.device for job in stays} == {"cpu"} and not any("dtype" in job.params for job in stays)
    assert all(job.gpu_mem_mb == 0 and job.gpu == 0 for job in stays)
    for device in ("cpu", "cuda"):
        forced = pipeline.Grid(pipeline.merge(config, {"ws": {"device": device}}), limits=node)
        assert {job.device for job in forced.jobs if job.rule == "ws"} == {device}
    # float32 on the GPU: DRF's layers take twice the memory, its trials stay together where two do not fit
    wide = pipeline.Grid(pipeline.merge(config, {"ws": {"dtype": "float32"}}), limits=node)
    largest32 = wide.select(folder="ws", map="drf", setting="d768_n80_L8")
    assert len(largest32) == 1 and "dtype" not in largest32[0].params


@pytest.mark.parametrize(
    "setting, device, map_name, expected",
    [
        ("auto", "cuda", "drf", "bfloat16"),
        ("auto", "cpu", "drf", None),
        ("auto", "cuda", "raf", None),
        ("bfloat16", "cpu", "drf", "bfloat16"),
        ("bfloat16", "cuda", "rf", None),
        ("float32", "cuda", "drf", None),
        ("float32", "cpu", "raf", "float32"),
        ("float64", "cpu", "rf", "float64"),
    ],
)
def test_the_working_dtype_of_ws_dtype(setting, device, map_name, expected):
    settings = registry.get(map_name).settings
    assert working_dtype(setting, device, settings.dtype, settings.reduced) == expected


def test_a_bad_dtype_or_slot_count_is_refused():
    with pytest.raises(ValueError, match="unknown dtype 'half'"):
        working_dtype("half", "cpu", "float32")
    with pytest.raises(ValueError, match="slots must be at least 1"):
        gpu_pays("ws:rf", 1.0, 1, slots=0)


def test_trials_split_into_as_many_jobs_as_the_gpu_holds_side_by_side():
    assert placement.gpu_trials_per_job(10, 10, 55 * GB, 140 * GB, slots=2) == 5  # two fit, two slots
    assert placement.gpu_trials_per_job(10, 10, 55 * GB, 100 * GB, slots=2) == 10  # one fits
    assert placement.gpu_trials_per_job(10, 10, 5 * GB, 140 * GB, slots=4) == 3  # four slots: 3, 3, 3, 1
    assert placement.gpu_trials_per_job(10, 2, 5 * GB, 140 * GB, slots=2) == 2  # never above the configured


def test_the_fit_recovers_known_rates_and_start_up():
    """Samples made by the model itself (two families, sharing 1 to 16) give back its coefficients."""
    rng = np.random.default_rng(0)
    truth = {"ws:a": placement.GpuRate(0.2, 0.01), "ws:b": placement.GpuRate(0.05, 0.3)}
    samples = []
    for family, rate in truth.items():
        for _ in range(12):
            searches, model, sharing = int(rng.integers(1, 400)), float(rng.uniform(1, 500)), float(rng.uniform(1, 16))
            measured = 4.0 + sharing * (rate.per_search * searches + rate.ratio * model)
            samples.append(GpuSample(family, searches, model, measured, sharing))
    start, rates = fit_rates(samples)
    assert start == pytest.approx(4.0, rel=1e-9)
    for family, rate in truth.items():
        assert rates[family].per_search == pytest.approx(rate.per_search, rel=1e-9)
        assert rates[family].ratio == pytest.approx(rate.ratio, rel=1e-9)


# the single jobs of the H200 run's README (2026-11-28; DRF float32 2026-11-26): one trial each
ALONE = {"ws:rf": (45.0, 128), "ws:raf": (30.0, 128)}  # not done after (s), searches (every position of n = 128)
DRF_SEARCH = {"ws:drf:bfloat16": 4.7, "ws:drf": 34.5}  # seconds searching, d = 768, n = 80, L = 8


def test_the_gpu_rates_are_the_fit_of_the_h200_run_and_its_single_jobs():
    """GPU_RATES as fitted on the run's finished GPU jobs (the CPU cost models of config.yaml's grid),
    RF's and RAF's latencies raised to their single jobs' lower bounds, DRF's from its single jobs."""
    config = pipeline.load_config(str(ROOT / "config.yaml"))
    planned = pipeline.Grid(config, limits=compute.Limits(125 * GB, None, None), calibration=Calibration()).jobs
    _, fitted = fit_rates(gpu_samples(read_jobs(RUN), planned, STOP, config["results"]))
    for family, rate in GPU_RATES.items():
        if family.startswith("ws:drf"):
            assert rate.per_search == 0 and rate.ratio == pytest.approx(
                DRF_SEARCH[family] / _cpu_model("drf", 80, 768, {"L": 8}), rel=5e-3
            )
            continue
        assert rate.ratio == pytest.approx(fitted[family].ratio, rel=5e-3, abs=1e-6), family
        if family in ALONE:
            seconds, searches = ALONE[family]
            floor = (seconds - GPU_STARTUP - rate.ratio * _cpu_model(family[3:], 128, 64, positions=128)) / searches
            assert rate.per_search == pytest.approx(max(floor, fitted[family].per_search), rel=5e-3), family
        else:
            assert rate.per_search == pytest.approx(fitted[family].per_search, rel=5e-3), family
    # the run's four float32 DRF jobs fit a rate ten times below DRF's alone: time-slicing is not even,
    # their neighbours' small kernels left them most of the GPU
    assert fitted["ws:drf"].ratio < GPU_RATES["ws:drf"].ratio / 10


def test_the_profile_and_the_plan_count_the_same_slots():
    profile = yaml.safe_load((ROOT / "profiles" / "gpu-node" / "config.yaml").read_text())
    assert profile["resources"]["gpu"] == placement.GPU_SLOTS and profile["scheduler"] == "greedy"
    assert math.isclose(compute.Limits(0, None).gpu_slots, placement.GPU_SLOTS)


def test_the_rates_are_the_job_rules_and_an_unmeasured_family_is_priced_as_the_slowest():
    """Each kind of job gives its families' GPU rates (``Job.gpu_rates``), joined as its study registers;
    a family without one is priced as the slowest of its kind, a kind without any as the slowest of all,
    and with none registered the lookup says so instead of guessing."""
    from wordsens.studies import registry as studies_registry

    kinds = studies_registry.job_kinds()
    joined = {f: r for kind in kinds.values() for f, r in kind.gpu_rates.items()}
    assert joined == GPU_RATES and {f.split(":")[0] for f in joined} == {"ws", "gen", "swaps"}
    ws = [r for f, r in GPU_RATES.items() if f.startswith("ws:")]
    slowest_ws = placement.gpu_rate("ws:a_plugin_map")
    assert slowest_ws.per_search == max(r.per_search for r in ws) and slowest_ws.ratio == max(r.ratio for r in ws)
    assert placement.gpu_rate("gen:rf") == GPU_RATES["gen:rf"]
    assert placement.gpu_rate("ws:drf", "bfloat16") == GPU_RATES["ws:drf:bfloat16"]
    assert placement.gpu_rate("ws:rf", "bfloat16") == GPU_RATES["ws:rf"]  # no bfloat16 rate of its own
    anything = placement.gpu_rate("a_plugin_kind:x")
    assert anything.per_search == max(r.per_search for r in GPU_RATES.values())
    assert anything.ratio == max(r.ratio for r in GPU_RATES.values())
    saved = placement.rates_snapshot()
    try:
        placement.restore_rates({})
        with pytest.raises(LookupError, match=r"no GPU rate for 'ws:rf'.*studies"):
            placement.gpu_rate("ws:rf")
    finally:
        placement.restore_rates(saved)
    with pytest.raises(ValueError, match="the GPU rate of 'ws:rf' is"):
        placement.add_rates({"ws:rf": placement.GpuRate(1.0, 1.0)})
    assert placement.gpu_rate("ws:rf") == saved["ws:rf"]
