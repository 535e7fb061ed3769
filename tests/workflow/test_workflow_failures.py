"""The Snakemake workflow where something is wrong (slow: ``pytest -m "not slow"`` skips it): a bad
configuration refused before any job (no network: tests/workflow/test_offline_first_run.py), a
failed job listed with its log at the end of a run that kept going."""

from __future__ import annotations

import pytest
from workflow_utils import copy_workflow, snakemake, write_config

pytestmark = pytest.mark.slow

DEMO = "config/demo.yaml"


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"colour": "blue"}, "colour"),
        ({"ws": {"trials": "ten"}}, "trials"),
        ({"ws": {"maps": {"raf": {"d": [16], "n": [64]}}}}, "max_length"),
        ({"ws": {"maps": {"raf": {"d": [128], "n": [8]}}}}, "model width"),
        (
            {
                "ws": {"maps": {"rf": None, "drf": None, "raf": None, "relu_raf": None}},
                "gen": {"fig4": None, "fig5": None},
                "variants": None,
                "long_context": None,
                "positions": None,
                "trained": None,
                "gen_words": None,
                "swaps": None,
            },
            "no study runs a job",
        ),
        ({"ws": {"maps": {"toy": {"d": [8], "n": [4]}}}}, "unknown map 'toy'"),
        ({"variants": {"options": {"mh_raf": {"heads": 3}}}}, "heads = 3"),
        ({"gen": {"fig5": {"maps": {"raf": [8]}, "N": [50], "penalties": [1]}}}, "data.pool_size"),
        ({"gen": {"fig4": {"maps": {"raf": [60]}, "N": [6]}}}, "max_length"),
        ({"gen": {"d": 128}}, "model width"),
        ({"probes": {"fig3": {"token": 99}}}, "probes.fig3.token"),
        ({"probes": {"lm": {"model": "no-such-org/no-such-lm"}}}, "probes.lm"),
        ({"ws": {"position": 9}}, "ws.position"),
        ({"data": {"pool_size": 41}}, "pool_size"),
        ({"data": {"source": "parquet", "path": None}}, "data.path"),
        ({"ws": {"position": "middle"}}, "ws.position"),
        ({"data": {"source": "aclimdb"}}, "data.path"),
        ({"limits": {"memory_gb": 0.1, "unfit": "fail"}}, "cannot fit"),
    ],
)
def test_bad_config_is_refused_before_any_job(demo_run, changes, message):
    cf = write_config(demo_run, "bad.yaml", DEMO, changes)
    out = snakemake(demo_run, "-n", "--configfile", cf, check=False)
    assert out.returncode != 0
    assert message in out.stdout + out.stderr


def test_a_failed_job_is_listed_with_its_log_at_the_end(tmp_path):
    """The default profile keeps going past a failed job (the synthetic variants study, which needs
    no reviews, still completes); the end of the run lists the failed jobs (their outputs are
    missing) with their logs."""
    workdir = copy_workflow(tmp_path / "wf")
    empty = tmp_path / "empty-aclImdb"  # there (planning checks that), but holds no reviews: the job fails
    empty.mkdir()
    cf = write_config(
        workdir,
        "missing.yaml",
        DEMO,
        {
            "results": "results/missing",
            "resources": "resources/missing",
            "data": {"source": "aclimdb", "path": str(empty)},
            "gen": {"fig4": None, "fig5": None},
            "probes": {"enabled": False, "lm": {"enabled": False}},
            "variants": {"maps": ["raf"], "n": [4]},
            "long_context": None,
            "positions": None,
            "trained": None,
            "gen_words": None,
        },
    )
    out = snakemake(workdir, "--cores", "1", "--configfile", cf, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert (workdir / "results" / "missing" / "tables" / "variants.parquet").exists()  # kept going
    block = text[text.index("1 job(s) failed") :]
    assert "reviews: resources/missing/imdb/reviews.parquet  log: results/missing/logs/reviews/reviews.log" in block
    assert "empty-aclImdb" in (workdir / "results" / "missing" / "logs" / "reviews" / "reviews.log").read_text()
