"""What every study's jobs share (``wordsens.studies``: the registry's job rules, ``Job`` and its typed
``Settings``): each job rule's body resolves where the workflow's job script (scripts/job.py) looks it up,
every planned job's params read back into the very settings it was planned with (and params with a
missing or an unknown key are refused, naming it), and a WS job run the way the job script runs it writes
the rows the plan counts.

The plan of every study: tests/unit/pipeline/test_plan.py and test_plan_studies.py; each study's own
modules: the other files of this folder."""

from __future__ import annotations

import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline, studies
from wordsens.compute import costs
from wordsens.experiments import ws_job
from wordsens.studies import JobFiles, job_rule
from wordsens.studies.sensitivity import WSSettings

SMALL = compute.Limits(cpu=16 * costs.GB, gpu=None)  # a machine like the CI one, whatever this one has


def test_every_job_rule_resolves_its_body():
    """A rule's body is a callable or ``"module:attribute"`` (the WS rule's lives above the module that
    defines the rule): ``JobRule.body`` gives the callable either way, as the job script calls it."""
    rules = studies.job_rules()
    assert {"ws", "gen", "trained", "swaps"} <= set(rules)
    for name, rule in rules.items():
        assert job_rule(name) is rule and callable(rule.body()), name
    assert isinstance(rules["ws"].run, str) and rules["ws"].body() is ws_job
    with pytest.raises(ValueError, match="no registered study runs jobs of a rule 'nope'; known: ws"):
        job_rule("nope")


def test_every_jobs_params_read_back_into_its_settings():
    """The params Snakemake compares (plain data) are the job's settings: ``Settings.of`` gives back an
    equal dataclass for every job of the demo's plan, of every rule."""
    grid = pipeline.Grid(demo_config(), limits=SMALL)
    assert {job.rule for job in grid.jobs} == {"ws", "gen", "trained", "swaps", "gen_words"}
    for job in grid.jobs:
        assert type(job.settings).of(job.params) == job.settings, job.key
    params = next(job for job in grid.jobs if job.rule == "ws").params
    with pytest.raises(ValueError, match=r"^WSSettings: params with unknown keys \['chunk'\] or without \[\]$"):
        WSSettings.of({**params, "chunk": 0})
    with pytest.raises(ValueError, match=r"^WSSettings: params with unknown keys \[\] or without \['seed'\]$"):
        WSSettings.of({key: value for key, value in params.items() if key != "seed"})


def test_a_ws_job_run_as_the_job_script_runs_it_writes_the_rows_the_plan_counts(one_thread):
    """The demo's RF point d = 16, n = 8 on synthetic rows: its rule's body on its params and files
    (none: synthetic) writes one row per trial of the job, with the job's map, size, data and numerics
    version."""
    config = demo_config({"ws": {"data": "synthetic"}})
    grid = pipeline.Grid(config, limits=SMALL)
    job = grid.job({"study": "ws", "map": "rf", "setting": "d16_n8", "chunk": "0"}, rule="ws")
    frame = job_rule(job.rule).body()(job.params, JobFiles({}, config), **job.extras)
    assert len(frame) == job.rows == 3 and frame["trial"].tolist() == list(job.settings.trials)
    assert set(frame["map"]) == {"rf"} and set(frame["d"]) == {16} and set(frame["n"]) == {8}
    assert set(frame["data"]) == {"synthetic"} and set(frame["numerics_version"]) == {studies.numerics_versions()["ws"]}
