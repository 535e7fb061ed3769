"""The longest chain first: each job's priority from the plan's estimate of the work left on the longest
chain of tasks through it (``chain_seconds``: its own seconds and the longest chain after it), and the
critical path of a simulated schedule (``planned_path``, what ``wordsens plan`` prints).

Snakemake starts the ready jobs of highest priority first: its greedy scheduler (profiles/gpu-node's
``scheduler: greedy``) takes them in that order, each that fits its cores and resources, and skips
the ones that do not; the rules ``ws``, ``gen``, ``swaps`` and ``trained`` take their job's priority
from ``job_priorities`` (``priority:`` as a function of the wildcards; Snakemake 9 accepts one). The
priorities lie below ``DATA_PRIORITY``, the data steps' (``reviews``, ``pool``, ``embed``, ...: every
job waits for them, and their rules declare it), spread over ``[0, JOB_PRIORITY_SPAN]`` in proportion
to the chain; the tables and figures keep Snakemake's default, 0. ``schedule.simulate`` schedules with
the same numbers. Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

__all__ = [
    "DATA_PRIORITY",
    "JOB_PRIORITY_SPAN",
    "chain_seconds",
    "gpu_queue",
    "job_priorities",
    "planned_path",
    "with_priorities",
]

DATA_PRIORITY = 50  # the data rules' priority (workflow/rules/data.smk, embed.smk, pretrained.smk)
# The jobs' priorities lie in [0, JOB_PRIORITY_SPAN], below the data steps' DATA_PRIORITY
JOB_PRIORITY_SPAN = DATA_PRIORITY - 1


class Task(Protocol):
    """What this module reads of a task (``schedule.Task``, a frozen dataclass: it imports this module)."""

    @property
    def name(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def gpu_mem_mb(self) -> int: ...
    @property
    def after(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=Task)


def chain_seconds(tasks: Sequence[Task]) -> dict[str, float]:
    """The seconds of the longest chain of tasks starting with each task: its own and the longest chain
    of the tasks that wait for it (``Task.after``). Raises ValueError on a circle."""
    after: dict[str, list[str]] = {t.name: [] for t in tasks}
    for task in tasks:
        for before in task.after:
            after.setdefault(before, []).append(task.name)
    seconds = {t.name: t.seconds for t in tasks}
    chain: dict[str, float] = {}
    for name in _latest_first(tasks, after):
        chain[name] = seconds.get(name, 0.0) + max((chain[n] for n in after.get(name, ())), default=0.0)
    return chain


def _latest_first(tasks: Sequence[Task], after: Mapping[str, list[str]]) -> list[str]:
    """The tasks' names, each after every task that waits for it (a reversed topological order)."""
    waiting = {t.name: len(after.get(t.name, ())) for t in tasks}
    before = {t.name: t.after for t in tasks}
    order = [name for name, count in waiting.items() if count == 0]
    for name in order:
        for previous in before.get(name, ()):
            waiting[previous] -= 1
            if waiting[previous] == 0:
                order.append(previous)
    if len(order) < len(tasks):
        raise ValueError("the tasks wait for each other in a circle")
    return order


def job_priorities(tasks: Sequence[Task], jobs: Iterable[str], gpu_slots: int | None = None) -> dict[str, float]:
    """The priority of each task named in ``jobs`` (the grid's jobs, by ``Job.key``): its
    ``chain_seconds`` over the longest of theirs, times ``JOB_PRIORITY_SPAN``, to 3 decimals. A job on
    the GPU shared by ``gpu_slots`` tasks (None: a GPU each, no queue) waits for the GPU's queue too:
    its chain counts the seconds of every GPU task over the slots (``gpu_queue``), which puts the GPU's
    jobs first where the GPU is the longer queue, and orders them by their own chains."""
    chain = chain_seconds(tasks)
    queue = gpu_queue(tasks, gpu_slots)
    chain = {t.name: chain[t.name] + (queue if t.gpu_mem_mb else 0.0) for t in tasks}
    names = [name for name in jobs if name in chain]
    longest = max((chain[name] for name in names), default=0.0)
    if longest <= 0:
        return dict.fromkeys(names, 0.0)
    return {name: round(JOB_PRIORITY_SPAN * chain[name] / longest, 3) for name in names}


def gpu_queue(tasks: Sequence[Task], gpu_slots: int | None) -> float:
    """Seconds the GPU's tasks keep a GPU of ``gpu_slots`` slots busy (0 without a bound)."""
    return sum(t.seconds for t in tasks if t.gpu_mem_mb) / gpu_slots if gpu_slots else 0.0


def with_priorities(tasks: Sequence[T], jobs: Iterable[str], gpu_slots: int | None = None) -> list[T]:
    """``tasks`` with the ``job_priorities`` of ``jobs`` (the other tasks keep theirs)."""
    priority = job_priorities(tasks, jobs, gpu_slots)
    # the tasks are frozen dataclasses (schedule.Task), which the protocol cannot say
    return [replace(t, priority=priority[t.name]) if t.name in priority else t for t in tasks]  # type: ignore[type-var]


def planned_path(tasks: Sequence[T], times: Mapping[str, tuple[float, float]]) -> list[tuple[T, float]]:
    """The chain of tasks that ends the simulated schedule ``times``, first task first, each with the
    seconds it waited after the task before it on the chain ended (for cores, the GPU, its turn)."""
    by_name = {t.name: t for t in tasks}
    if not times:
        return []
    name: str | None = max(times, key=lambda n: (times[n][1], times[n][0]))
    path: list[tuple[T, float]] = []
    while name is not None:
        task = by_name[name]
        before = max(task.after, key=lambda n: times[n][1], default=None)
        ready = times[before][1] if before is not None else 0.0
        path.append((task, max(0.0, times[name][0] - ready)))
        name = before
    return path[::-1]
