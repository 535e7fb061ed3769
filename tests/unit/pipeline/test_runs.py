"""What a finished run took: the Snakemake log parser, wall time per rule, the critical path, and
benchmarks/bench_pipeline.py on the demo run."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

from wordsens.pipeline import critical_path, snakemake_log_jobs

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the per-rule table and a logged run's critical path

from bench_pipeline import log_path, rule_times  # noqa: E402


def _log(tmp_path: Path, b_ends: int) -> Path:
    """A log of three jobs: a (0-10 s) and b (0-``b_ends`` s) feed c, which starts at 30 s; the run
    ends with the target rule all. Shaped as Snakemake 9 writes it."""
    text = f"""Building DAG of jobs...
Provided cores: 2
Job stats:
job      count
-----  -------
a            1
b            1
c            1
all          1
total        4

[Thu Nov 26 23:39:00 2026]
rule a:
    output: out/a.txt
    log: logs/a.log
    jobid: 2
    reason: Missing output files: out/a.txt
    resources: tmpdir=/tmp

[Thu Nov 26 23:39:00 2026]
localrule b:
    input: in/raw.txt
    output: out/b.txt, out/b.csv
    jobid: 3
    resources: tmpdir=/tmp
[Thu Nov 26 23:39:10 2026]
Finished jobid: 2 (Rule: a)
1 of 4 steps (25%) done
[Thu Nov 26 23:39:{b_ends:02d} 2026]
Finished jobid: 3 (Rule: b)
2 of 4 steps (50%) done

[Thu Nov 26 23:39:30 2026]
rule c:
    input: out/a.txt, out/b.csv
    output: out/c.txt
    jobid: 1
    wildcards: x=1
[Thu Nov 26 23:39:50 2026]
Finished jobid: 1 (Rule: c)
3 of 4 steps (75%) done

[Thu Nov 26 23:39:50 2026]
localrule all:
    input: out/c.txt
    jobid: 0
[Thu Nov 26 23:39:50 2026]
Finished jobid: 0 (Rule: all)
4 of 4 steps (100%) done
Complete log(s): /x/.snakemake/log/2026-11-26T233900.snakemake.log
Elapsed time: 0:00:50.5
"""
    path = tmp_path / "run.snakemake.log"
    path.write_text(text)
    return path


def test_the_log_gives_each_job_its_files_and_times(tmp_path):
    jobs, run = snakemake_log_jobs(_log(tmp_path, 20))
    assert run == {"elapsed": 50.5, "cores": 2.0}
    by_rule = {job.rule: job for job in jobs}
    assert set(by_rule) == {"a", "b", "c", "all"}
    assert by_rule["b"].inputs == ("in/raw.txt",) and by_rule["b"].outputs == ("out/b.txt", "out/b.csv")
    assert by_rule["c"].inputs == ("out/a.txt", "out/b.csv") and by_rule["a"].inputs == ()
    assert (by_rule["a"].start, by_rule["a"].end, by_rule["b"].seconds, by_rule["c"].seconds) == (0, 10, 20, 20)
    times = {r.rule: r for r in rule_times(jobs)}
    assert times["c"].total == 20 and times["b"].longest == 20 and times["all"].jobs == 1
    assert next(r.rule for r in rule_times(jobs)) in ("b", "c")  # the largest summed time first


@pytest.mark.parametrize(("b_ends", "waited_for"), [(20, "b"), (5, "a")])
def test_the_critical_path_follows_the_input_that_finished_last(tmp_path, b_ends, waited_for):
    jobs, _ = snakemake_log_jobs(_log(tmp_path, b_ends))
    path = log_path(jobs)
    assert [job.rule for job, _ in path] == [waited_for, "c", "all"]
    # c started at 30 s: it waited 10 s after b (ended at 20 s), or 20 s after a (ended at 10 s)
    assert path[1][1] == 30 - max(10, b_ends)
    assert path[0][1] == 0 and path[2][1] == 0


def test_a_job_that_never_finished_is_not_listed(tmp_path):
    text = _log(tmp_path, 20).read_text().replace("Finished jobid: 1 (Rule: c)", "Error in rule c:")
    (tmp_path / "failed.log").write_text(text)
    jobs, _ = snakemake_log_jobs(tmp_path / "failed.log")
    assert "c" not in {job.rule for job in jobs}
    assert log_path([]) == [] and critical_path({}, lambda item: ()) == []


def test_bench_pipeline_reads_the_demo_run(demo_run):
    """The benchmark's analysis of the shared demo run: every job of the run, the per-rule table,
    and a critical path whose every step reads an output of the step before."""
    logs = sorted((demo_run / ".snakemake" / "log").glob("*.snakemake.log"))
    jobs, run = snakemake_log_jobs(logs[0])  # the first run in the folder: the whole demo
    planned = int(next(line.split()[1] for line in logs[0].read_text().splitlines() if line.startswith("total ")))
    assert len(jobs) == planned and run["cores"] == 2
    path = [job for job, _ in log_path(jobs)]
    assert path[-1].rule == "all"
    for before, after in itertools.pairwise(path):
        assert set(before.outputs) & set(after.inputs), (before, after)
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--log", str(logs[0])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "critical path" in out and "total wall time" in out
    ws_line = next(line for line in out.splitlines() if line.startswith("ws "))
    assert ws_line.split()[-1] == "cpu"  # the devices column, read from the rows


def test_bench_pipeline_reports_where_each_job_ran_or_was_planned(tmp_path):
    """The devices column: a job's rows where they record it (a swaps job's ``device``), else the device its
    rule requested in the log (a probe or a trained layer: ``auto``, planned on the GPU or the CPU), and
    the CPU for a step that requests no GPU resource."""
    import pandas as pd

    (tmp_path / "res" / "swaps" / "raf").mkdir(parents=True)
    pd.DataFrame({"device": ["cuda", "cuda"], "s_words": [0.1, 0.2]}).to_parquet(
        tmp_path / "res" / "swaps" / "raf" / "d16_n8.parquet"
    )
    jobs = [
        ("swaps", "res/swaps/raf/d16_n8.parquet", "tmpdir=/tmp, gpu=1, gpu_mem_mb=1667, mem_mb=3087"),
        ("fig1_lm", "res/tables/fig1_lm.csv", "tmpdir=/tmp, gpu=1, gpu_mem_mb=9000, mem_mb=32000"),
        ("trained", "res/trained/layer1.parquet", "tmpdir=/tmp, gpu=0, gpu_mem_mb=0, mem_mb=900"),
        ("table", "res/tables/swaps.parquet", "tmpdir=/tmp"),
    ]
    text = "Provided cores: 2\n"
    for jobid, (rule, output, resources) in enumerate(jobs, start=1):
        text += f"[Thu Nov 26 23:39:0{jobid} 2026]\nlocalrule {rule}:\n    output: {output}\n    jobid: {jobid}\n"
        text += f"    resources: {resources}\n"
    for jobid, (rule, _, _) in enumerate(jobs, start=1):
        text += f"[Thu Nov 26 23:39:1{jobid} 2026]\nFinished jobid: {jobid} (Rule: {rule})\n"
    log = tmp_path / "run.snakemake.log"
    log.write_text(text)
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"), "--log", str(log), "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    table = {line.split()[0]: line.split("  ")[-1].strip() for line in out.splitlines() if line[:1].isalpha()}
    assert table["swaps"] == "cuda" and table["fig1_lm"] == "cuda (planned)", out
    assert table["trained"] == "cpu (planned)" and table["table"] == "cpu", out
