"""Incremental runs of the Snakemake workflow on the demo run (slow: ``pytest -m "not slow"`` skips it):
nothing to do after a run; a new grid value, a search, thread, plot, variants, penalty or layer change and a
numerics version bump re-run only what they change; a killed run resumes without recomputing finished jobs."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import yaml
from workflow_utils import ROOT, env, planned_jobs, snakemake, write_config

pytestmark = pytest.mark.slow

DEMO = "config/demo.yaml"


# the demo's four generalisation figures (Figures 4 and 5, on IMDb and synthetic rows)
GEN_FIGURES = {
    f"{stem}_{data}": 1 for stem in ("fig4_generalisation", "fig5_penalised") for data in ("imdb", "synthetic")
}


def _demo_config() -> dict:
    return yaml.safe_load((ROOT / DEMO).read_text())


def test_nothing_to_do_after_a_run(demo_run):
    assert planned_jobs(demo_run, DEMO) == {}


def test_adding_a_grid_value_runs_only_the_new_jobs(demo_run):
    config = _demo_config()
    raf = dict(config["ws"]["maps"]["raf"], n=config["ws"]["maps"]["raf"]["n"] + [12])
    cf = write_config(demo_run, "more_n.yaml", DEMO, {"ws": {"maps": {"raf": raf}}})
    jobs = planned_jobs(demo_run, cf)
    assert jobs == {"ws": len(raf["d"]), "table": 1, "fig3_raf_relu_raf": 1, "claims": 1, "all": 1}


# every WS table and figure of the demo: the paper's (4 maps, 2 figures), the studies' (4 tables, 3 figures)
WS_DEPENDENTS = {
    "table": 8,
    "fig2_rf_drf": 1,
    "fig3_raf_relu_raf": 1,
    "variants_figure": 1,
    "long_context_figure": 1,
    "positions_figure": 1,
    "claims": 1,
    "all": 1,
}


def _ws_jobs_of_the_demo() -> int:
    """The demo's WS jobs as the workflow plans them: in a fresh interpreter without plugins, since a
    map registered by an earlier test of this process would count in ``variants.maps: all``."""
    code = (
        "from wordsens import compute, pipeline; "
        f"config = pipeline.load_config({str(ROOT / 'config.yaml')!r}, {str(ROOT / DEMO)!r}); "
        "grid = pipeline.Grid(config, limits=compute.Limits(cpu=2**40, gpu=None)); "
        "print(len([job for job in grid.jobs if job.rule == 'ws']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**env(), "WORDSENS_PLUGINS": ""}
    )
    return int(out.stdout)


def test_changing_a_search_setting_reruns_ws_jobs_and_dependents_only(demo_run):
    """ws.search applies to the paper's grids and to every study (variants, long contexts, positions)."""
    cf = write_config(demo_run, "search.yaml", DEMO, {"ws": {"search": {"max_steps": 299}}})
    assert planned_jobs(demo_run, cf) == {"ws": _ws_jobs_of_the_demo(), **WS_DEPENDENTS}


def test_changing_threads_reruns_nothing(demo_run):
    """Threads are resources, not params: another thread count re-runs no job (each job sets
    torch's threads from snakemake.threads, and its rows record the count)."""
    cf = write_config(demo_run, "threads.yaml", DEMO, {"ws": {"threads": 2}, "gen": {"threads": 2}})
    assert planned_jobs(demo_run, cf) == {}
    out = snakemake(demo_run, "-n", "--configfile", DEMO, "--set-threads", "ws=2", "gen=2")
    assert "Nothing to be done" in out.stdout + out.stderr


def test_changing_a_plot_setting_reruns_only_plots(demo_run):
    cf = write_config(demo_run, "dpi.yaml", DEMO, {"plots": {"dpi": 100}})
    assert planned_jobs(demo_run, cf) == {
        "fig2_rf_drf": 1,
        "fig3_raf_relu_raf": 1,
        **GEN_FIGURES,
        "fig1_attention_figure": 1,  # the probes draw again; their encoder and LM do not run
        "fig3_figures": 1,
        "fig1_lm_figure": 1,
        "variants_figure": 1,
        "long_context_figure": 1,
        "positions_figure": 1,
        "trained_figure": 1,
        "swaps_figure": 1,
        "gen_words_figure": 1,
        "all": 1,
    }


def test_adding_a_variants_n_runs_only_its_jobs(demo_run):
    """A new n in variants runs one job per registered map with random weights, then the variants table, its figure and
    the claims (which read the variant maps' slopes); nothing of the paper's grids."""
    from wordsens.maps import registry

    config = _demo_config()
    cf = write_config(demo_run, "variants_n.yaml", DEMO, {"variants": {"n": config["variants"]["n"] + [8]}})
    assert planned_jobs(demo_run, cf) == {
        "ws": len([name for name in registry.names() if not registry.get(name).checkpoint]),
        "table": 1,
        "variants_figure": 1,
        "claims": 1,
        "all": 1,
    }


def test_adding_a_penalty_reruns_only_figure_5(demo_run):
    config = _demo_config()
    fig5 = dict(config["gen"]["fig5"], penalties=config["gen"]["fig5"]["penalties"] + [0.01])
    cf = write_config(demo_run, "penalty.yaml", DEMO, {"gen": {"fig5": fig5}})
    jobs = planned_jobs(demo_run, cf)
    points = sum(len(ns) for ns in fig5["maps"].values()) * len(fig5["N"]) * len(config["gen"]["data"])
    fig5_figures = {"fig5_penalised_imdb": 1, "fig5_penalised_synthetic": 1}
    assert jobs == {"gen": points, "table": 2, **fig5_figures, "claims": 1, "all": 1}


def test_changing_the_layer_makes_new_embeddings(demo_run):
    cf = write_config(demo_run, "layer.yaml", DEMO, {"model": {"layer": 1}})
    jobs = planned_jobs(demo_run, cf)
    assert jobs.get("embed") == 1 and "pool" not in jobs and "reviews" not in jobs


def test_a_killed_run_resumes_without_recomputing_finished_jobs(demo_run, tmp_path):
    """A run killed while one WS job was running leaves no output for it (outputs are renamed into
    place atomically) and none of what depends on it: the resumed run does that job and its
    consumers, nothing else."""
    config = _demo_config()
    results = demo_run / config["results"]
    lost = [
        results / "ws" / "rf" / "d16_n8" / "chunk0.parquet",
        results / "tables" / "ws_rf.parquet",
        results / "tables" / "ws_rf.csv",
        *(results / "figures").glob("fig2_*"),
    ]
    saved = tmp_path / "saved"
    saved.mkdir()
    for i, path in enumerate(lost):
        shutil.copy2(path, saved / str(i))
        path.unlink()
    try:
        assert planned_jobs(demo_run, DEMO) == {"ws": 1, "table": 1, "fig2_rf_drf": 1, "claims": 1, "all": 1}
    finally:
        for i, path in enumerate(lost):
            shutil.copy2(saved / str(i), path)


@pytest.mark.parametrize("experiment", ["ws", "gen", "trained"])
def test_numerics_version_bump_reruns_its_experiment_only(demo_run, experiment):
    """Each study's numerics version (StudySpec.numerics) is part of the params of its jobs (the grid of
    common.smk takes every study's): a bump re-runs those jobs and what depends on them, and nothing of
    the other experiments."""
    common = demo_run / "workflow" / "rules" / "common.smk"
    text = common.read_text()
    line = "GRID = wsplan.Grid(config, limits=LIMITS)"
    assert line in text
    common.write_text(
        text.replace(line, f"GRID = wsplan.Grid(config, limits=LIMITS, numerics_versions={{{experiment!r}: 'bumped'}})")
    )
    try:
        jobs = planned_jobs(demo_run, DEMO)
    finally:
        common.write_text(text)
    if experiment == "ws":
        assert jobs == {"ws": _ws_jobs_of_the_demo(), **WS_DEPENDENTS}
    elif experiment == "trained":
        assert jobs == {"trained": 2, "table": 1, "trained_figure": 1, "claims": 1, "all": 1}
    else:
        assert jobs == {"gen": 24, "table": 4, **GEN_FIGURES, "claims": 1, "all": 1}
