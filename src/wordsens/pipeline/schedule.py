"""When a run ends: the jobs of a configuration as the workflow chains them (``run_tasks``), each with its
calibrated wall time (``Grid.estimate``), list-scheduled the way Snakemake schedules them (``simulate``),
and what ``wordsens plan`` prints of it (``finish_lines``, ``plan_text``).

Snakemake starts the ready jobs of highest priority first: the data steps (``DATA_PRIORITY``), then the jobs
by the longest chain of work left through them (``job_priorities``: the rules ``ws``, ``gen``, ``swaps`` and
``trained`` take their ``priority:`` from it), spread over ``[0, JOB_PRIORITY_SPAN]``; the tables and
figures keep Snakemake's default, 0. A task that does not fit its cores or the GPU leaves its turn to the
next (the greedy scheduler of profiles/gpu-node, whose ``--resources gpu_mem_mb=... gpu=...`` the GPU tasks
share). Torch-free.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..compute.costs import GB, MB
from ..compute.limits import Limits
from ..compute.timing import DOWNLOAD_SECONDS, REFERENCE_SECONDS, Calibration, speed_factor
from ..data.models import DEMO_MODEL, PACKAGED_MODELS
from ..studies import Step, Store
from ..studies import registry as studies
from .calibrate import calibration_table, measure, save_calibration, stored_calibration
from .configuration import load_config
from .grid import Grid, describe, embed_step

DATA_PRIORITY = 50  # the data rules' priority (workflow/rules/data.smk, embed.smk, pretrained.smk)
JOB_PRIORITY_SPAN = DATA_PRIORITY - 1  # the jobs' priorities lie in [0, JOB_PRIORITY_SPAN]
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Task:
    """One job of the run: ``group`` (``data``, a study or a part of one: ``ws``, ``fig4``, ...,
    ``figures``), wall ``seconds`` with its ``threads``, the GPU memory it takes (``gpu_mem_mb``, 0:
    none), ``priority`` and the names of the tasks it waits for (``after``)."""

    name: str
    group: str
    seconds: float
    threads: int = 1
    gpu_mem_mb: int = 0
    priority: float = 0
    after: tuple[str, ...] = ()


def chain_seconds(tasks: Sequence[Task]) -> dict[str, float]:
    """The seconds of the longest chain of tasks starting with each task: its own and the longest chain
    of the tasks that wait for it. Raises ValueError on a circle."""
    after: dict[str, list[str]] = {t.name: [] for t in tasks}
    for task in tasks:
        for before in task.after:
            after.setdefault(before, []).append(task.name)
    # the tasks, each after every task that waits for it (a reversed topological order)
    waiting = {t.name: len(after.get(t.name, ())) for t in tasks}
    prior = {t.name: t.after for t in tasks}
    order = [name for name, count in waiting.items() if count == 0]
    for name in order:
        for previous in prior.get(name, ()):
            waiting[previous] -= 1
            if waiting[previous] == 0:
                order.append(previous)
    if len(order) < len(tasks):
        raise ValueError("the tasks wait for each other in a circle")
    seconds = {t.name: t.seconds for t in tasks}
    chain: dict[str, float] = {}
    for name in order:
        chain[name] = seconds.get(name, 0.0) + max((chain[n] for n in after.get(name, ())), default=0.0)
    return chain


def job_priorities(tasks: Sequence[Task], jobs: Iterable[str], gpu_slots: int | None = None) -> dict[str, float]:
    """The priority of each task named in ``jobs``: its ``chain_seconds`` over the longest of theirs, times
    ``JOB_PRIORITY_SPAN``, to 3 decimals. A task on a GPU shared by ``gpu_slots`` tasks (None: a GPU each)
    also waits for the GPU's queue: its chain counts every GPU task's seconds over the slots."""
    chain = chain_seconds(tasks)
    queue = sum(t.seconds for t in tasks if t.gpu_mem_mb) / gpu_slots if gpu_slots else 0.0
    chain = {t.name: chain[t.name] + (queue if t.gpu_mem_mb else 0.0) for t in tasks}
    names = [name for name in jobs if name in chain]
    longest = max((chain[name] for name in names), default=0.0)
    if longest <= 0:
        return dict.fromkeys(names, 0.0)
    return {name: round(JOB_PRIORITY_SPAN * chain[name] / longest, 3) for name in names}


def with_priorities(tasks: Sequence[Task], jobs: Iterable[str], gpu_slots: int | None = None) -> list[Task]:
    """``tasks`` with the ``job_priorities`` of ``jobs`` (the other tasks keep theirs)."""
    priority = job_priorities(tasks, jobs, gpu_slots)
    return [replace(t, priority=priority[t.name]) if t.name in priority else t for t in tasks]


def critical_path(times: Mapping[K, tuple[float, float]], before: Callable[[K], Iterable[K]]) -> list[tuple[K, float]]:
    """The chain that ended a schedule of (start, end) ``times``, first item first: from the item that ended
    last, each step to the item it waited for (of ``before(item)``, the one that ended last; the later start
    on a tie), each with the seconds it waited after that one ended (for cores, the GPU, its turn)."""

    def last(names: Iterable[K]) -> K | None:
        return max(names, key=lambda n: (times[n][1], times[n][0]), default=None)

    item, path = last(times), list[tuple[K, float]]()
    while item is not None and item not in (done for done, _ in path):
        prior = last(before(item))
        path.append((item, max(0.0, times[item][0] - (times[prior][1] if prior is not None else 0.0))))
        item = prior
    return path[::-1]


def simulate(
    tasks: Sequence[Task], cores: int, gpu_mem_mb: int = 0, gpu_slots: int | None = None
) -> dict[str, tuple[float, float]]:
    """(start, end) seconds of every task on ``cores`` cores (a task's threads capped at ``cores``, as
    Snakemake caps them) and one GPU of ``gpu_mem_mb`` MB shared by at most ``gpu_slots`` tasks (None: no
    bound). Raises ValueError on a task that waits for an unknown or circular one, or that needs more GPU
    memory than there is (as Snakemake refuses it)."""
    if cores < 1:
        raise ValueError(f"cores must be at least 1, got {cores}")
    names = {task.name for task in tasks}
    for task in tasks:
        missing = [name for name in task.after if name not in names]
        if missing:
            raise ValueError(f"task {task.name} waits for unknown tasks {missing}")
        if task.gpu_mem_mb > gpu_mem_mb:
            raise ValueError(
                f"task {task.name} needs {task.gpu_mem_mb} MB of GPU memory, {gpu_mem_mb} MB planned: "
                "plan with --gpu GB (a larger GPU) or send it to the CPU"
            )
    order = {task.name: i for i, task in enumerate(tasks)}
    waiting = {task.name: set(task.after) for task in tasks}
    ready = [task for task in tasks if not task.after]
    running: list[tuple[float, int, str]] = []
    times: dict[str, tuple[float, float]] = {}
    by_name = {task.name: task for task in tasks}
    free_cores, free_gpu, now = cores, gpu_mem_mb, 0.0
    free_slots = len(tasks) if gpu_slots is None else gpu_slots
    while ready or running:
        ready.sort(key=lambda t: (-t.priority, order[t.name]))
        for task in list(ready):
            threads, slot = min(task.threads, cores), int(task.gpu_mem_mb > 0)
            if threads <= free_cores and task.gpu_mem_mb <= free_gpu and slot <= free_slots:
                ready.remove(task)
                free_cores -= threads
                free_gpu -= task.gpu_mem_mb
                free_slots -= slot
                times[task.name] = (now, now + task.seconds)
                heapq.heappush(running, (now + task.seconds, order[task.name], task.name))
        if not running:
            raise ValueError("the tasks wait for each other in a circle: " + ", ".join(t.name for t in ready))
        now, _, name = heapq.heappop(running)
        done = by_name[name]
        free_cores += min(done.threads, cores)
        free_gpu += done.gpu_mem_mb
        free_slots += int(done.gpu_mem_mb > 0)
        for other, deps in waiting.items():
            if name in deps:
                deps.discard(name)
                if not deps and other not in times:
                    ready.append(by_name[other])
    return times


class _Tasks:
    """The run's tasks in the order they are added (``simulate`` breaks ties by that order)."""

    def __init__(self, calibration: Calibration) -> None:
        self.calibration = calibration
        self.tasks: list[Task] = []

    def add(self, name: str, group: str, family: str, after: Sequence[str] = (), extra: float = 0.0, **kw: int) -> str:
        """Add a step of ``family`` (plus ``extra`` seconds: a download) after the named tasks (empty
        names: steps this run has not); returns its name."""
        seconds = self.calibration.seconds(family) + extra
        self.tasks.append(Task(name, group, seconds, after=tuple(a for a in after if a), **kw))
        return name


def _study_steps(config: dict, limits: Limits) -> dict[str, list[Step]]:
    """The steps of the own rules of each study the configuration runs, by study."""
    return {spec.name: spec.steps(config, limits) for spec in studies.specs() if spec.runs(config)}


def run_tasks(config: dict, grid: Grid) -> list[Task]:
    """Every task of the run of ``config``: the data steps, the jobs of ``grid`` that fit, the steps of the
    studies' own rules, the tables, figures and claims, with calibrated seconds and priorities."""
    run = _Tasks(grid.calibration)
    steps = _study_steps(config, grid.limits)
    stores = {name: store for name, store in grid.stores().items() if any(job.store == name for job in grid.fit)}
    wanted = {need for job in grid.fit for need in job.needs}
    wanted |= {need for mine in steps.values() for step in mine for need in step.after}
    models = _model_tasks(run, config, {need.partition(":")[2] for need in wanted if need.startswith("model:")})
    pool, embeds = "", dict[str, str]()
    if stores or "pool" in wanted:
        pool, embeds = _data_tasks(run, config, grid, models[config["model"]["name"]], stores)
    names = {"pool": pool, **{f"model:{name}": task for name, task in models.items()}}
    tables = _job_tasks(run, grid, embeds, names)
    _figure_tasks(run, grid, tables)
    for study, mine in steps.items():
        for step in mine:
            after = [names.get(name, name) for name in step.after]
            run.add(step.name, "figures" if step.figure else study, step.family, after, gpu_mem_mb=step.gpu_mem_mb)
    # the rules' priorities (workflow/rules/common.smk, get_priority): the grid's jobs and the studies'
    # compute steps, by the longest chain of work left through them
    ranked = [job.key for job in grid.fit]
    ranked += [step.name for mine in steps.values() for step in mine if step.benchmarked]
    return with_priorities(run.tasks, ranked, gpu_slots(run.tasks, grid.limits))


def _model_tasks(run: _Tasks, config: dict, others: set[str]) -> dict[str, str]:
    """The task that provides each encoder of the run, by name (empty: none, a local folder or the Hub
    model that the pool's task downloads); another encoder a study reads (``model:<name>``) is built,
    unpacked or downloaded first."""
    model = config["model"]["name"]
    tasks = {}
    for name in [model, *sorted(others - {model})]:
        if name == DEMO_MODEL:
            tasks[name] = run.add("demo_model", "data", "demo_model", priority=DATA_PRIORITY)
        elif name in PACKAGED_MODELS:
            step = "packaged_model" if name == model else f"packaged_model {name}"
            tasks[name] = run.add(step, "data", "packaged_model", priority=DATA_PRIORITY)
        elif name != model and not Path(name).expanduser().exists():  # a Hub name: its download
            tasks[name] = run.add(f"download {name}", "data", "rule:*", extra=DOWNLOAD_SECONDS["model"])
        else:
            tasks[name] = ""
    return tasks


def _data_tasks(
    run: _Tasks, config: dict, grid: Grid, model_task: str, stores: dict[str, Store]
) -> tuple[str, dict[str, str]]:
    """The data steps: the reviews, the pool and the embedding stores the jobs read (another store's
    pool of its own first). Returns the pool's task and the embedding task of each store, by name."""
    model = config["model"]["name"]
    hub_model = model not in (DEMO_MODEL, *PACKAGED_MODELS) and not Path(model).expanduser().exists()
    source = config["data"]["source"]
    corpus = run.add("demo_corpus", "data", "demo_corpus", priority=DATA_PRIORITY) if source == "demo" else ""
    hub = DOWNLOAD_SECONDS["reviews"] if source == "hub" else 0.0
    reviews = run.add("reviews", "data", "reviews", [corpus], hub, priority=DATA_PRIORITY)
    download = DOWNLOAD_SECONDS["model"] if hub_model else 0.0
    pool = run.add("pool", "data", "pool", [reviews, model_task], download, priority=DATA_PRIORITY)
    embeds = {}
    for name, store in stores.items():
        on_gpu = embed_step(config, grid.limits, store).gpu_mem_mb
        rule, before = ("embed", [pool, model_task]) if name == "main" else (store.rule, [])
        if not before:  # another store's pool of its own
            before = [run.add(store.pool_rule, "data", "pool", [reviews, model_task], priority=DATA_PRIORITY)]
        embeds[name] = run.add(rule, "data", "embed", before, priority=DATA_PRIORITY, gpu_mem_mb=on_gpu)
    return pool, embeds


def _job_tasks(run: _Tasks, grid: Grid, embeds: dict[str, str], names: dict[str, str]) -> dict[str, list[str]]:
    """The jobs that fit, each after its embedding store and its ``Job.needs``. Returns the keys of the
    jobs of each table, in the order the jobs come."""
    for job in grid.fit:
        after = tuple(a for a in (embeds.get(job.store or "", ""), *(names.get(n, "") for n in job.needs)) if a)
        run.tasks.append(Task(job.key, job.group, grid.estimate(job), job.threads, job.gpu_mem_mb, after=after))
    return {stem: [job.key for job in jobs] for stem, jobs in grid.tables().items()}


def _figure_tasks(run: _Tasks, grid: Grid, tables: dict[str, list[str]]) -> None:
    """The tables, the figures (each after its tables) and the claims (after the tables they check)."""
    for stem, keys in tables.items():
        run.add(f"table {stem}", "figures", "table", keys)
    for figure in grid.figures():
        run.add(figure.name, "figures", figure.family, [f"table {stem}" for stem in figure.tables.values()])
    # the claims read a table whose study has claims, or lends its rows to the paper's
    claim_inputs = [f"table {stem}" for stem in tables if (spec := studies.owner(stem)) is not None and spec.checked()]
    if claim_inputs:
        run.add("claims", "figures", "claims", claim_inputs)


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def gpu_budget_mb(tasks: Sequence[Task], limits: Limits) -> int:
    """The GPU memory (MB) the run's GPU tasks share: the GPU's (``limits.gpu``) on one machine; their sum
    under a cluster profile (a GPU each); the largest task's where no GPU is known (a device set to cuda)."""
    need = [t.gpu_mem_mb for t in tasks]
    if limits.gpu is None:
        return max(need, default=0)
    if not limits.shared_gpu:
        return sum(need)
    return max(limits.gpu // MB, *need)


def gpu_slots(tasks: Sequence[Task], limits: Limits) -> int | None:
    """How many GPU tasks hold the shared GPU at once (``limits.gpu_slots``); None where each has its own."""
    return limits.gpu_slots if limits.shared_gpu and any(t.gpu_mem_mb for t in tasks) else None


def finish_lines(config: dict, grid: Grid, cores: int) -> list[str]:
    """The expected wall time of the run on ``cores`` cores (and the GPU of ``gpu_budget_mb``), when each
    experiment ends, and the critical path, from ``simulate`` of ``run_tasks``."""
    tasks = run_tasks(config, grid)
    budget = gpu_budget_mb(tasks, grid.limits)
    times = simulate(tasks, cores, budget, gpu_slots(tasks, grid.limits))
    end = max((e for _, e in times.values()), default=0.0)
    busy = sum(t.seconds * min(t.threads, cores) for t in tasks)
    sources = ", ".join(grid.calibration.sources) or "built in (this project's 2-core machine)"
    if grid.calibration.speed != 1.0:
        sources += f"; built-in times x {grid.calibration.speed:.2f} (this machine's speed)"
    gpu = f" and a GPU ({budget / 1024:.0f} GB shared)" if any(t.gpu_mem_mb for t in tasks) else ""
    if gpu and grid.limits.gpu is not None and not grid.limits.shared_gpu:
        gpu = " and a GPU per GPU job"
    lines = [
        f"expected wall time on {cores} core{'s' if cores > 1 else ''}{gpu}: "
        f"{_clock(end)} (h:mm:ss) for {len(tasks)} jobs, {busy / 3600:.2f} core-hours busy; calibration: {sources}",
        "  experiment      jobs  job-hours  ends at (h:mm:ss)",
    ]
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(task.group, []).append(task)
    for group, mine in sorted(groups.items(), key=lambda item: max(times[t.name][1] for t in item[1])):
        last = max(times[t.name][1] for t in mine)
        lines.append(f"  {group:14s} {len(mine):5d} {sum(t.seconds for t in mine) / 3600:10.2f}  {_clock(last):>8s}")
    by_name = {t.name: t for t in tasks}
    path = critical_path(times, lambda name: by_name[name].after)
    lines.append(f"critical path ({len(path)} jobs; wait: after the job before it on the path ended):")
    lines += [f"  {_clock(times[n][0])} -> {_clock(times[n][1])}  wait {wait:4.0f} s  {n}" for n, wait in path]
    return lines


def plan_text(
    paths: Sequence[str],
    overrides: dict | None = None,
    cores: int = 1,
    gpu_gb: float | None = None,
    calibrate: Sequence[str] | None = None,
    probe: Callable[[], float] | None = None,
) -> str:
    """What ``wordsens plan`` prints: the configuration of ``paths`` and ``overrides`` (``--config``)
    planned (``describe``, ``finish_lines``) on ``cores`` cores and, with ``gpu_gb``, a GPU of that many
    GB (where ``limits.gpu_memory_gb`` is ``auto``). ``calibrate``: results folders or Snakemake logs to fit
    the time model on first (stored, its table printed). ``probe``: the speed probe (the CLI passes
    ``wordsens.search.probe.probe_seconds``: planning does not import the searches), whose ``speed_factor``
    is stored with the fit, or with the calibration stored already."""
    config = load_config(*paths, overrides=overrides)
    limits = Limits.of(config)
    if gpu_gb is not None and config["limits"]["gpu_memory_gb"] == "auto":
        limits = replace(limits, gpu=int(gpu_gb * GB))
    limits = replace(limits, cores=cores)  # what a GPU slot is weighed against (compute.placement)
    lines: list[str] = []
    calibration = None
    speed = None
    if probe is not None:
        seconds = probe()
        speed = speed_factor(seconds)
        lines.append(
            f"speed probe: {seconds:.2f} s here, {REFERENCE_SECONDS:.2f} s on the built-in time model's "
            f"machine: built-in times x {speed:.2f}"
        )
    if calibrate:
        benchmarked = [step.name for mine in _study_steps(config, limits).values() for step in mine if step.benchmarked]
        measured = measure(Grid(config, limits=limits, calibration=Calibration()).jobs, calibrate, benchmarked)
        if not measured.samples:
            raise ValueError(f"no measured job of this configuration in {', '.join(calibrate)}")
        calibration = Calibration.from_samples(measured.samples, [str(Path(s).resolve()) for s in calibrate], speed)
        lines += [
            f"calibration from {len(measured.samples)} measured jobs ({measured.unmatched} not of this "
            f"configuration's grid); the families they do not measure: built-in times x {calibration.speed:.2f} "
            f"({'the speed probe' if probe else 'the median measured / built-in ratio of these jobs'}):",
            *calibration_table(calibration, measured.samples),
        ]
        for run in measured.runs:
            if "elapsed" in run:
                lines.append(
                    f"  a logged run took {_clock(run['elapsed'])} (h:mm:ss) on {run.get('cores', 0):.0f} cores"
                )
    elif speed is not None:  # the probe alone: the fit stored already stays, with this speed
        try:
            calibration = replace(stored_calibration(), speed=speed)
        except ValueError as err:  # an unreadable one is replaced
            lines.append(f"{err}: replaced")
            calibration = Calibration(speed=speed)
    if calibration is not None:
        stored = save_calibration(calibration)
        lines.append(f"  stored in {stored or 'nothing (WORDSENS_CALIBRATION=none)'}")
    grid = Grid(config, limits=limits, calibration=calibration)
    lines += [describe(config, grid=grid), *finish_lines(config, grid, cores)]
    bench = Path(config["results"]) / "benchmarks"
    if not grid.calibration.sources and bench.is_dir() and next(bench.rglob("*.tsv"), None):
        lines.append(
            f"{bench} holds benchmark files of a run of this configuration: add --calibrate {bench.parent} "
            "(and its .snakemake/log/*.snakemake.log) to fit the times on this machine"
        )
    elif not grid.calibration.sources and grid.calibration.speed == 1.0:
        lines.append(
            "the times are those of the machine the built-in time model was fitted on: add --probe (about "
            "5 s) to scale them to this one, or --calibrate RESULTS_DIR after a run"
        )
    return "\n".join(lines)
