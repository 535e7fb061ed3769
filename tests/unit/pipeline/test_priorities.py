"""wordsens.pipeline.schedule: each job's priority from the longest chain of work left through it
(with the GPU's queue for the jobs on a shared GPU), and the critical path of a simulated schedule."""

from __future__ import annotations

import pytest

from wordsens import pipeline
from wordsens.pipeline import Task, simulate
from wordsens.pipeline.schedule import (
    DATA_PRIORITY,
    JOB_PRIORITY_SPAN,
    chain_seconds,
    critical_path,
    job_priorities,
    with_priorities,
)

GB = 1024**3
# data -> {short, long -> table, alone}: the long job's chain is the longest of the jobs
TASKS = [
    Task("data", "data", 5.0, priority=DATA_PRIORITY),
    Task("short", "ws", 2.0, after=("data",)),
    Task("long", "ws", 10.0, after=("data",)),
    Task("table", "figures", 1.0, after=("short", "long")),
    Task("alone", "ws", 4.0),
]


def test_the_chain_of_a_task_is_its_seconds_and_the_longest_chain_after_it():
    chain = chain_seconds(TASKS)
    assert chain == {"data": 16.0, "short": 3.0, "long": 11.0, "table": 1.0, "alone": 4.0}
    with pytest.raises(ValueError, match="circle"):
        chain_seconds([Task("a", "ws", 1.0, after=("b",)), Task("b", "ws", 1.0, after=("a",))])


def test_jobs_are_ranked_by_their_chains_below_the_data_steps():
    priority = job_priorities(TASKS, ["short", "long", "alone"])
    assert priority == {"long": JOB_PRIORITY_SPAN, "alone": round(JOB_PRIORITY_SPAN * 4 / 11, 3), "short": 13.364}
    assert max(priority.values()) < DATA_PRIORITY
    ranked = with_priorities(TASKS, ["short", "long", "alone"])
    assert [t.priority for t in ranked] == [DATA_PRIORITY, 13.364, JOB_PRIORITY_SPAN, 0, priority["alone"]]
    # on one core, the longest chain first: the data, then long, then alone, then short
    times = simulate(ranked, 1)
    assert sorted(times, key=lambda name: times[name][0]) == ["data", "long", "alone", "short", "table"]
    # in the order given (no priorities), short would have started before long
    plain = simulate([Task(t.name, t.group, t.seconds, after=t.after) for t in TASKS], 1)
    assert plain["short"][0] < plain["long"][0]


def test_a_job_on_a_shared_gpu_counts_the_gpus_queue():
    """Two 8-second GPU jobs on one slot keep the GPU busy 16 s: the short GPU job (chain 8 + 16) goes
    before a 20-second CPU job; with a GPU each (no slots) it does not."""
    tasks = [Task("cpu", "ws", 20.0), Task("gpu1", "ws", 8.0, gpu_mem_mb=1), Task("gpu2", "ws", 8.0, gpu_mem_mb=1)]
    queued = job_priorities(tasks, ["cpu", "gpu1", "gpu2"], gpu_slots=1)
    assert queued["gpu1"] == queued["gpu2"] == JOB_PRIORITY_SPAN > queued["cpu"] == round(49 * 20 / 24, 3)
    apart = job_priorities(tasks, ["cpu", "gpu1", "gpu2"])
    assert apart["cpu"] == JOB_PRIORITY_SPAN > apart["gpu1"]


def test_the_critical_path_follows_the_inputs_that_ended_last():
    ranked = with_priorities(TASKS, ["short", "long", "alone"])
    times = simulate(ranked, 2)
    after = {t.name: t.after for t in ranked}
    path = critical_path(times, after.__getitem__)
    assert path == [("data", 0.0), ("long", 0.0), ("table", 0.0)]
    # on one core short runs last (19-21): the table waited for it, and it waited 14 s for the core
    slow = simulate(ranked, 1)
    assert critical_path(slow, after.__getitem__) == [
        ("data", 0.0),
        ("short", 14.0),
        ("table", 0.0),
    ]


def test_the_plan_of_the_default_config_on_a_gpu_node_ends_within_9_minutes():
    """`wordsens plan --gpu 140 --cores 16` for config.yaml: every job fits, the run ends within 9
    minutes in the plan (the target of one GPU node), and the plan names its critical path."""
    text = pipeline.plan_text(["config.yaml"], {"limits": {"memory_gb": 125}}, cores=16, gpu_gb=140)
    assert "every job fits" in text
    line = next(line for line in text.splitlines() if line.startswith("expected wall time"))
    h, m, s = (int(x) for x in line.split(": ")[1].split()[0].split(":"))
    assert 3600 * h + 60 * m + s <= 9 * 60, line
    path = text.split("critical path (")[1].splitlines()
    assert "ws/drf/" in text.split("critical path (")[1] and len(path) > 2
