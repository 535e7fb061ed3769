"""A first run on a machine that cannot reach the Hugging Face Hub (issue 45, item 6): the IMDb download
cannot run, so the workflow says so when it is parsed (a dry run goes on with the note) and a run stops
before its first job, naming the two local routes; a local copy, the demo or an earlier download need no
Hub. The decision: a user wants the message at once, not the synthetic parts running for minutes first."""

from __future__ import annotations

import pytest
import yaml
from workflow_utils import BASE_CONFIG, ROOT, copy_workflow, snakemake

from wordsens import pipeline


def _default(tmp_path, **changes):
    config = pipeline.validate(pipeline.merge(yaml.safe_load(BASE_CONFIG.read_text()), changes))
    config["resources"] = str(tmp_path / "resources")
    return config


def test_the_download_problem_names_the_local_routes(tmp_path, monkeypatch):
    config = _default(tmp_path)
    problem = pipeline.hub_download_problem(config)  # the tests run in Hugging Face's offline mode
    assert problem is not None and "cannot reach" in problem
    assert "data={source: parquet, path: /path/to/imdb/train.parquet}" in problem and "config/demo.yaml" in problem
    # an earlier download, a local copy, the demo: nothing to download
    (tmp_path / "resources" / "imdb").mkdir(parents=True)
    (tmp_path / "resources" / "imdb" / "reviews.parquet").write_bytes(b"")
    assert pipeline.hub_download_problem(config) is None
    local = _default(tmp_path / "other", data={"source": "parquet", "path": str(ROOT / "pyproject.toml")})
    assert pipeline.hub_download_problem(local) is None
    # the Hub in reach: the download can run
    from wordsens.data import hub

    monkeypatch.setattr(hub, "hub_reachable", lambda *a, **k: True)
    assert pipeline.hub_download_problem(_default(tmp_path / "third")) is None


@pytest.mark.slow
def test_an_offline_run_stops_before_its_first_job(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    where = ["--config", f"resources={tmp_path / 'res'}", f"results={tmp_path / 'results'}"]
    dry = snakemake(workdir, "-n", *where)
    assert "note: data.source: hub downloads IMDb" in dry.stderr
    run = snakemake(workdir, "--cores", "2", *where, check=False)
    assert run.returncode != 0 and "stopped before any job: data.source: hub downloads IMDb" in run.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "res" / "imdb").exists()
