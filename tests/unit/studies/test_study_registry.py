"""What every study's jobs share (``wordsens.studies``: the registry's kinds of job, ``Job``): the workflow's
job script (scripts/job.py) finds each kind by its rule's name, every planned job's params read back into the
very job it was planned as (and params with a missing or an unknown key are refused, naming it), and a WS job
run the way the job script runs it writes the rows the plan counts.

The plan of every study: tests/unit/pipeline/test_plan.py and test_plan_studies.py; each study's own
modules: the other files of this folder."""

from __future__ import annotations

import dataclasses

import pytest
from workflow_utils import demo_config

from wordsens import compute, pipeline, studies
from wordsens.compute import costs
from wordsens.studies import JobFiles, job_kind
from wordsens.studies.sensitivity import WSJob

SMALL = compute.Limits(cpu=16 * costs.GB, gpu=None)  # a machine like the CI one, whatever this one has


def test_every_kind_of_job_is_found_by_its_rule():
    """The job script finds a job's kind by its rule's name; an unknown rule names the known ones."""
    kinds = studies.job_kinds()
    assert {"ws", "gen", "trained", "swaps", "gen_words"} <= set(kinds)
    for rule, kind in kinds.items():
        assert job_kind(rule) is kind and kind.rule == rule and callable(kind.run), rule
    assert kinds["ws"] is WSJob
    with pytest.raises(ValueError, match="no registered study runs jobs of a rule 'nope'; known: ws"):
        job_kind("nope")


def test_every_jobs_params_read_back_into_the_job():
    """The params Snakemake compares (plain data) and the extras are the job: ``Job.of`` gives back an equal
    record (its cost aside: the plan's, no param) for every job of the demo's plan, of every rule; a field at
    its default is left out of the params."""
    grid = pipeline.Grid(demo_config(), limits=SMALL)
    assert {job.rule for job in grid.jobs} == {"ws", "gen", "trained", "swaps", "gen_words"}
    for job in grid.jobs:
        again = type(job).of(job.params, job.extras)
        assert again == job and again.params == job.params and "cost" not in job.params, job.key
        assert all(name not in job.params for name in job.extras), job.key
    ws = next(job for job in grid.jobs if job.rule == "ws")
    assert "device" not in ws.params and ws.device == "cpu"  # at its default
    with pytest.raises(ValueError, match=r"^WSJob: params with unknown keys \['nope'\] or without \[\]$"):
        WSJob.of({**ws.params, "nope": 0})
    with pytest.raises(ValueError, match=r"^WSJob: params with unknown keys \[\] or without \['study'\]$"):
        WSJob.of({key: value for key, value in ws.params.items() if key != "study"})
    assert dataclasses.replace(ws, device="cuda").params["device"] == "cuda"


def test_a_ws_job_run_as_the_job_script_runs_it_writes_the_rows_the_plan_counts(one_thread):
    """The demo's RF point d = 16, n = 8 on synthetic rows: its kind's body on the job read back from its
    params and files (none: synthetic) writes one row per trial of the job, with the job's map, size, data and
    numerics version, then its stamp."""
    config = demo_config({"ws": {"data": "synthetic"}})
    grid = pipeline.Grid(config, limits=SMALL)
    planned = grid.job({"folder": "ws", "map": "rf", "setting": "d16_n8", "chunk": "0"}, rule="ws")
    job = job_kind(planned.rule).of(planned.params, planned.extras)
    frame = job.run(JobFiles({}, config))
    assert len(frame) == job.rows == 3 and frame["trial"].tolist() == list(job.trials)
    assert set(frame["map"]) == {"rf"} and set(frame["d"]) == {16} and set(frame["n"]) == {8}
    assert set(frame["data"]) == {"synthetic"} and set(frame["numerics_version"]) == {studies.numerics_versions()["ws"]}
    stamp = job.stamp()  # every row ends with the job's config_hash and provenance
    assert list(frame.columns[-len(stamp) :]) == list(stamp) and frame.iloc[0][list(stamp)].to_dict() == stamp
    assert stamp["config_hash"] == studies.jobs.config_hash(job.params)


def test_a_kind_of_job_without_a_body_or_a_rule_is_refused_when_its_study_is_made():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoBody(studies.Job):
        rule = "no_body"
        output = "no_body/{map}"

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoRule(studies.Job):
        def run(self, files):
            return None

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Whole(NoRule):
        rule = "whole"
        output = "whole/{map}"

    def jobs(config, limits, version):
        return []

    for kind, missing in ((NoBody, "run(self, files)"), (NoRule, "['rule', 'output']")):
        with pytest.raises(ValueError, match=kind.__name__) as refused:
            studies.StudySpec(name="bodiless", title="t", jobs=jobs, kinds=(kind,))
        assert missing in str(refused.value)
    assert studies.StudySpec(name="whole", title="t", jobs=jobs, kinds=(Whole,)).kinds == (Whole,)
    with pytest.raises(TypeError, match="NoBody has no body: define its run"):
        NoBody(study="s").run(JobFiles({}, {}))
