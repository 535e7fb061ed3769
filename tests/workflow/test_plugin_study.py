"""A study from a plugin runs with no package change (issue 43): ``plugins: [tests/plugins/toy_study.py]``
and its configuration section are all a run needs for the study's jobs, its table, its figure (with the
caption beside the plugin), its claim in the claims table and its re-runs: a change of its section re-runs
its jobs and nothing else."""

from __future__ import annotations

import pandas as pd
import pytest
from workflow_utils import DEMO_CONFIG, ROOT, WS_ONLY, copy_workflow, planned_jobs, snakemake, write_config

pytestmark = pytest.mark.slow  # a Snakemake run (about a minute)

TOY = ROOT / "tests" / "plugins" / "toy_study.py"


def _changes(samples: int) -> dict:
    return {
        "results": "results/toy_study",
        "plugins": [str(TOY)],
        "toy_norms": {"maps": ["raf", "rf"], "d": 8, "n": [4, 8], "samples": samples},
        "ws": {
            "data": "synthetic",
            "trials": 2,
            "trials_per_job": 2,
            "maps": {"rf": None, "drf": None, "relu_raf": None, "raf": {"d": [8], "n": [4]}},
        },
        **WS_ONLY,
    }


def test_a_plugin_study_runs_through_the_workflow(tmp_path):
    workdir = copy_workflow(tmp_path / "wf")
    base = str(DEMO_CONFIG.relative_to(ROOT))
    cf = write_config(workdir, "toy_study.yaml", base, _changes(3))
    planned = planned_jobs(workdir, cf)
    assert planned["toy_norms"] == 4 and planned["toy_figure"] == 1, planned
    snakemake(workdir, "--cores", "2", "--configfile", cf)
    results = workdir / "results" / "toy_study"
    table = pd.read_parquet(results / "tables" / "toy_norms.parquet")
    assert len(table) == 2 * 2 * 3 and set(table["map"]) == {"raf", "rf"}
    assert (table["norm"] > 0).all() and set(table["numerics_version"]) == {"toy-1"}
    assert (results / "figures" / "fig_toy_norms.png").stat().st_size > 5000
    claims = pd.read_csv(results / "tables" / "claims.csv")
    toy = claims[claims["claim"] == "toy_norm"].set_index(["map", "scope"])
    means = table.groupby(["map", "n"])["norm"].mean()
    assert len(toy) == 4 and set(toy["verdict"]) == {"no claim"}
    for (m, n), mean in means.items():
        assert toy.loc[(m, f"n={n}"), "value"] == pytest.approx(mean, rel=1e-5)  # the CSV keeps 6 digits
    assert "norm" in (results / "logs" / "toy_norms" / "raf" / "n4.log").read_text()  # the job's summary
    # a change of the study's section re-runs its jobs (and what reads them), nothing else
    more = write_config(workdir, "toy_study_more.yaml", base, _changes(4))
    again = planned_jobs(workdir, more)
    assert again.get("toy_norms") == 4 and "ws" not in again, again
