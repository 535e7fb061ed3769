"""The Snakemake workflow, run for real on the offline demo configuration."""

from __future__ import annotations

import itertools
import math
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from workflow_utils import ROOT, planned_jobs, snakemake, write_config

DEMO = "config/demo.yaml"


def _demo_config() -> dict:
    return yaml.safe_load((ROOT / DEMO).read_text())


def test_demo_produces_every_table_and_figure(demo_run):
    config = _demo_config()
    results = demo_run / config["results"]
    for map_name, grid in config["ws"]["maps"].items():
        table = pd.read_parquet(results / "tables" / f"ws_{map_name}.parquet")
        points = list(itertools.product(*[grid[key] for key in ("d", "n", "L") if key in grid]))
        assert len(table) == len(points) * config["ws"]["trials"], map_name
        assert np.isfinite(table[["lower", "phi_norm", "delta_norm", "search_seconds"]].to_numpy()).all()
        assert (table["delta_norm"] <= np.sqrt(table["d"]) * (1 + 1e-12)).all()
        assert (table["lower"] > 0).all()
        if map_name == "rf":
            assert (table["lower"] <= table["upper"]).all()
            assert set(table["sampler"]) == {"exact"}
        # provenance on every row
        for column in ("review_id", "seed", "config_hash", "version", "git_commit", "device", "sampler",
                       "numerics_version"):
            assert table[column].notna().all(), column
        assert (table["review_id"] >= 0).all()
        assert (results / "tables" / f"ws_{map_name}.csv").stat().st_size > 0
    gen = config["gen"]
    for data in gen["data"]:
        for figure, per_sim in (("fig4", len(gen["fig4"]["trainings"]) * len(gen["fig4"]["losses"])),
                                ("fig5", len(gen["fig5"]["trainings"]) * len(gen["fig5"]["penalties"]))):
            table = pd.read_parquet(results / "tables" / f"gen_{figure}_{data}.parquet")
            points = sum(len(ns) for ns in gen[figure]["maps"].values()) * len(gen[figure]["N"])
            assert len(table) == points * gen["simulations"] * per_sim, (figure, data)
            assert np.isfinite(table[["t0", "t1", "D0", "D1", "err", "gamma_min"]].to_numpy()).all()
            np.testing.assert_allclose(table["t1"], table["y"])
            np.testing.assert_allclose(table["err"], (table["D1"] + table["y"]) ** 2, rtol=1e-9, atol=1e-12)
            assert (table["delta_norm"] <= np.sqrt(table["d"]) * (1 + 1e-12)).all()
            if data == "imdb":
                assert (table["review_id"] >= 0).all()
        for stem in ("fig4_generalisation", "fig5_penalised"):
            for ext in config["plots"]["formats"]:
                assert (results / "figures" / f"{stem}_{data}.{ext}").stat().st_size > 5000
    # probes: Figure 1 (attention maps, the optional LM table) and Figure 3 panels 3-4
    layers = pd.read_csv(results / "tables" / "fig3_layer_changes.csv")
    attract = layers[layers["kind"] == "attract"]
    assert attract["attention_after"].iloc[0] >= 2 * attract["attention_before"].iloc[0]
    assert layers["kind"].value_counts()["gaussian"] == 10 * attract["layer"].nunique()
    answers = pd.read_csv(results / "tables" / "fig1_lm_answers.csv")
    assert len(answers) == 2 and answers["answer"].notna().all()
    assert len(pd.read_csv(results / "tables" / "fig1_attention.csv")) == 2 * 4 * 4
    for stem in ("fig1_attention", "fig1_lm_answers", "fig3_panel3_layer_changes", "fig3_panel4_scores",
                 "fig2_rf_drf", "fig2_rf_drf_scaled", "fig3_raf_relu_raf", "fig3_raf_relu_raf_scaled"):
        for ext in config["plots"]["formats"]:
            path = results / "figures" / f"{stem}.{ext}"
            assert path.stat().st_size > 5000, path
    # the demo wrote nothing outside its own folders
    assert not (demo_run / "results" / "paper").exists()
    assert not (demo_run / "resources" / "imdb").exists()


def test_demo_embeddings_store_is_checksummed(demo_run):
    from wordsens.io import load_embeddings

    config = _demo_config()
    stores = list((demo_run / config["resources"] / "embeddings").rglob("meta.json"))
    assert len(stores) == 1
    store = load_embeddings(stores[0].parent)
    assert store.hidden.shape == (config["data"]["pool_size"], config["model"]["max_length"], 64)
    assert set(store.index["label"]) == {0, 1}
    assert (store.index["length"] <= config["model"]["max_length"]).all()


def test_nothing_to_do_after_a_run(demo_run):
    assert planned_jobs(demo_run, DEMO) == {}


def test_adding_a_grid_value_runs_only_the_new_jobs(demo_run):
    config = _demo_config()
    raf = dict(config["ws"]["maps"]["raf"], n=config["ws"]["maps"]["raf"]["n"] + [12])
    cf = write_config(demo_run, "more_n.yaml", DEMO, {"ws": {"maps": {"raf": raf}}})
    jobs = planned_jobs(demo_run, cf)
    assert jobs == {"ws": len(raf["d"]), "ws_table": 1, "fig3": 1, "all": 1}


def test_changing_a_search_setting_reruns_ws_jobs_and_dependents_only(demo_run):
    cf = write_config(demo_run, "search.yaml", DEMO, {"ws": {"search": {"max_steps": 299}}})
    jobs = planned_jobs(demo_run, cf)
    assert jobs.get("ws") == 26
    assert set(jobs) == {"ws", "ws_table", "fig2", "fig3", "all"}


def test_changing_a_plot_setting_reruns_only_plots(demo_run):
    cf = write_config(demo_run, "dpi.yaml", DEMO, {"plots": {"dpi": 100}})
    assert planned_jobs(demo_run, cf) == {"fig2": 1, "fig3": 1, "fig4": 2, "fig5": 2, "fig1_attention": 1,
                                          "fig3_probes": 1, "fig1_lm": 1, "all": 1}


def test_adding_a_penalty_reruns_only_figure_5(demo_run):
    config = _demo_config()
    fig5 = dict(config["gen"]["fig5"], penalties=config["gen"]["fig5"]["penalties"] + [0.01])
    cf = write_config(demo_run, "penalty.yaml", DEMO, {"gen": {"fig5": fig5}})
    jobs = planned_jobs(demo_run, cf)
    points = sum(len(ns) for ns in fig5["maps"].values()) * len(fig5["N"]) * len(config["gen"]["data"])
    assert jobs == {"gen": points, "gen_table": 2, "fig5": 2, "all": 1}


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
    lost = [results / "ws" / "rf" / "d16_n8" / "chunk0.parquet", results / "tables" / "ws_rf.parquet",
            results / "tables" / "ws_rf.csv", *(results / "figures").glob("fig2_*")]
    saved = tmp_path / "saved"
    saved.mkdir()
    for i, path in enumerate(lost):
        shutil.copy2(path, saved / str(i))
        path.unlink()
    try:
        assert planned_jobs(demo_run, DEMO) == {"ws": 1, "ws_table": 1, "fig2": 1, "all": 1}
    finally:
        for i, path in enumerate(lost):
            shutil.copy2(saved / str(i), path)


def test_numerics_version_bump_reruns_experiments(demo_run, monkeypatch):
    """The numerics version is part of every WS job's params: a bump re-runs them."""
    common = demo_run / "workflow" / "rules" / "common.smk"
    text = common.read_text()
    common.write_text(text.replace("from wordsens import NUMERICS_VERSION",
                                   "NUMERICS_VERSION = 'bumped-for-test'"))
    try:
        assert planned_jobs(demo_run, DEMO).get("ws") == 26
    finally:
        common.write_text(text)


def test_report(demo_run):
    snakemake(demo_run, "--configfile", DEMO, "--report", "report.html")
    html = (demo_run / "report.html").read_text(errors="replace")
    for figure in ("Figure 1", "Figure 2", "Figure 3", "Figure 4", "Figure 5"):
        assert figure in html


def test_lint_is_clean(demo_run):
    out = snakemake(demo_run, "--configfile", DEMO, "--lint", check=False)
    text = out.stdout + out.stderr
    assert "Congratulations" in text, text[-3000:]


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"colour": "blue"}, "colour"),
        ({"ws": {"trials": "ten"}}, "trials"),
        ({"ws": {"maps": {"raf": {"d": [16], "n": [64]}}}}, "max_length"),
        ({"ws": {"maps": {"raf": {"d": [128], "n": [8]}}}}, "model width"),
        ({"ws": {"maps": {"rf": None, "drf": None, "raf": None, "relu_raf": None}}, "gen": {"fig4": None, "fig5": None}},
         "ws.maps is empty"),
        ({"gen": {"fig5": {"maps": {"raf": [8]}, "N": [50], "penalties": [1]}}}, "data.pool_size"),
        ({"gen": {"fig4": {"maps": {"raf": [60]}, "N": [6]}}}, "max_length"),
        ({"gen": {"d": 128}}, "model width"),
        ({"probes": {"fig3": {"token": 99}}}, "probes.fig3.token"),
        ({"probes": {"lm": {"model": "no-such-org/no-such-lm"}}}, "probes.lm"),
        ({"ws": {"position": 9}}, "ws.position"),
        ({"data": {"pool_size": 41}}, "pool_size"),
        ({"data": {"source": "parquet", "path": None}}, "data.path"),
        ({"limits": {"memory_gb": 0.1}}, "cannot fit"),
    ],
)
def test_bad_config_is_refused_before_any_job(demo_run, changes, message):
    cf = write_config(demo_run, "bad.yaml", DEMO, changes)
    out = snakemake(demo_run, "-n", "--configfile", cf, check=False)
    assert out.returncode != 0
    assert message in out.stdout + out.stderr


def test_unfit_jobs_can_be_left_out(demo_run):
    cf = write_config(demo_run, "skip.yaml", DEMO, {"limits": {"memory_gb": 0.32, "unfit": "skip"}})
    out = snakemake(demo_run, "-n", "--configfile", cf)
    assert "leaving out" in out.stdout + out.stderr


def test_corrupt_cache_is_detected(demo_run, tmp_path):
    from wordsens.io import CorruptCache, load_embeddings

    config = _demo_config()
    store = next((demo_run / config["resources"] / "embeddings").rglob("meta.json")).parent
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    raw = bytearray((copy / "hidden.npy").read_bytes())
    raw[-7] ^= 0xFF
    (copy / "hidden.npy").write_bytes(bytes(raw))
    with pytest.raises(CorruptCache, match="checksum"):
        load_embeddings(copy)
    (copy / "hidden.npy").write_bytes(bytes(raw[: len(raw) // 2]))
    with pytest.raises(CorruptCache):
        load_embeddings(copy)
    assert math.isfinite(load_embeddings(store).hidden[0, 0, 0])
