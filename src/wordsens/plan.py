"""The experiment grid of a configuration: jobs, their resource estimates, what fits this machine.

Used by the Snakefile (job list, per-job resources, refusal of jobs that cannot fit) and by
``wordsens plan`` (job count, CPU-hours, peak memory) before anything runs.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import resources

__all__ = [
    "GenJob",
    "WSJob",
    "describe",
    "gen_jobs",
    "load_config",
    "memory_limit_bytes",
    "merge",
    "parse_setting",
    "setting_name",
    "split_fit",
    "unfit_message",
    "ws_jobs",
]

_SETTING = re.compile(r"^d(\d+)_n(\d+)(?:_L(\d+))?$")


def setting_name(map_name: str, d: int, n: int, L: int | None = None) -> str:
    """The path component of one grid point: ``d768_n50`` or, for DRF, ``d768_n50_L2``."""
    return f"d{d}_n{n}_L{L}" if map_name == "drf" else f"d{d}_n{n}"


def parse_setting(setting: str) -> tuple[int, int, int | None]:
    match = _SETTING.match(setting)
    if not match:
        raise ValueError(f"not a grid setting: {setting!r} (expected d<d>_n<n>[_L<L>])")
    d, n, L = match.groups()
    return int(d), int(n), (int(L) if L else None)


@dataclass(frozen=True)
class WSJob:
    """One word-sensitivity job: a grid point and a chunk of its trials."""

    map: str
    d: int
    n: int
    L: int | None
    chunk: int
    trials: tuple[int, ...]
    memory_bytes: int  # what the job needs: arrays, its Python process and the Snakemake job process
    seconds: float  # estimated wall time of the whole chunk

    @property
    def setting(self) -> str:
        return setting_name(self.map, self.d, self.n, self.L)


@dataclass(frozen=True)
class GenJob:
    """One generalisation job: a figure's grid point and a chunk of its simulations, each serving
    every (training, loss, penalty) search of the figure."""

    figure: str
    data: str
    map: str
    n: int
    N: int
    d: int
    chunk: int
    simulations: tuple[int, ...]
    searches: tuple[tuple[str, str, float], ...]
    memory_bytes: int
    seconds: float

    @property
    def setting(self) -> str:
        return gen_setting(self.map, self.n, self.N, self.d)


def gen_setting(map_name: str, n: int, N: int, d: int) -> str:
    return f"{map_name}_n{n}_N{N}_d{d}"


def gen_searches(figure_config: dict, figure: str) -> tuple[tuple[str, str, float], ...]:
    trainings = figure_config.get("trainings", ["fine_tune", "retrain"])
    if figure == "fig5":
        return tuple((t, "penalised", float(p)) for t in trainings for p in figure_config.get("penalties", []))
    return tuple((t, loss, 0.0) for t in trainings for loss in figure_config.get("losses", []))


def gen_jobs(config: dict) -> list[GenJob]:
    """Every generalisation job of ``config["gen"]`` (Figures 4 and 5), with estimates."""
    gen = config.get("gen") or {}
    sims, per_job = int(gen.get("simulations", 10)), int(gen.get("simulations_per_job", 5))
    jobs: list[GenJob] = []
    for figure in ("fig4", "fig5"):
        fig = gen.get(figure)
        if not fig:
            continue
        searches = gen_searches(fig, figure)
        for data in gen.get("data", ["synthetic"]):
            for map_name, ns in (fig.get("maps") or {}).items():
                for n in ns or []:
                    for N in fig.get("N", []):
                        d = int(gen.get("d", 768))
                        mem = resources.gen_memory(map_name, n, d, N).bytes + resources.PROCESS_OVERHEAD \
                            + resources.JOBSTEP_OVERHEAD
                        secs = resources.gen_seconds(map_name, n, d, N, searches=len(searches))
                        for chunk in range(math.ceil(sims / per_job)):
                            chunk_sims = tuple(range(chunk * per_job, min(sims, (chunk + 1) * per_job)))
                            jobs.append(GenJob(figure, data, map_name, int(n), int(N), d, chunk, chunk_sims, searches,
                                               mem, secs * len(chunk_sims)))
    return jobs


def merge(base: dict, override: dict) -> dict:
    """Recursive dict merge (what Snakemake does with a --configfile over config.yaml)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_config(*paths: str | Path) -> dict:
    """``config.yaml`` merged with further config files, in order."""
    import yaml

    config: dict = {}
    for path in paths:
        with open(path) as fh:
            config = merge(config, yaml.safe_load(fh) or {})
    return config


def ws_jobs(config: dict) -> list[WSJob]:
    """Every word-sensitivity job of ``config["ws"]``, with per-job memory and time estimates."""
    ws = config.get("ws", {})
    trials, per_job = int(ws.get("trials", 10)), int(ws.get("trials_per_job", 10))
    method = ws.get("method", "default")
    device = ws.get("device", "auto")
    device = "cuda" if device == "cuda" else "cpu"
    jobs: list[WSJob] = []
    for map_name, grid in (ws.get("maps") or {}).items():
        if not grid:
            continue
        Ls = grid.get("L", [2]) if map_name == "drf" else [None]
        for d in grid.get("d", []):
            for n in grid.get("n", []):
                for L in Ls:
                    sampler = "dense" if method == "reference" else "exact"
                    mem = resources.ws_memory(map_name, n, d, L=L or 2, method=method, sampler=sampler).job
                    secs = resources.ws_seconds(map_name, n, d, L=L or 2, method=method, sampler=sampler, device=device)
                    for chunk in range(math.ceil(trials / per_job)):
                        chunk_trials = tuple(range(chunk * per_job, min(trials, (chunk + 1) * per_job)))
                        jobs.append(WSJob(map_name, int(d), int(n), L, chunk, chunk_trials, mem,
                                          secs * len(chunk_trials)))
    return jobs


def memory_limit_bytes(config: dict) -> int:
    """``limits.memory_gb`` in bytes; ``auto`` = the memory available on this machine now."""
    limit = (config.get("limits") or {}).get("memory_gb", "auto")
    if limit in (None, "auto"):
        return resources.available_bytes("cpu")
    return int(float(limit) * resources.GB)


def split_fit(jobs: list, limit: int) -> tuple[list, list]:
    fit = [job for job in jobs if job.memory_bytes <= limit]
    unfit = [job for job in jobs if job.memory_bytes > limit]
    return fit, unfit


def unfit_message(unfit: list, limit: int) -> str:
    """One message listing the jobs that cannot fit, and the ways out."""
    seen: dict[str, Any] = {}
    for job in unfit:
        name = f"{job.map} {job.setting}" if isinstance(job, WSJob) else f"{job.figure} {job.data} {job.setting}"
        seen.setdefault(name, job)
    lines = [f"  {name}: needs about {job.memory_bytes / resources.GB:.1f} GB" for name, job in seen.items()]
    return (
        f"{len(unfit)} job(s) cannot fit the {limit / resources.GB:.1f} GB this machine offers "
        f"(limits.memory_gb):\n" + "\n".join(lines) + "\n"
        "Ways out: run them on a cluster (snakemake --profile profiles/slurm, whose nodes set limits.memory_gb), "
        "on a GPU (ws.device: cuda, limits.memory_gb: the GPU's memory), or with a smaller d; or leave them out "
        "and run the rest with --config \"limits={unfit: skip}\" (limits.unfit: skip)"
    )


def describe(config: dict) -> str:
    """Human summary: job counts, estimated CPU-hours, peak memory, what does not fit."""
    jobs: list = ws_jobs(config) + gen_jobs(config)
    limit = memory_limit_bytes(config)
    fit, unfit = split_fit(jobs, limit)
    lines = ["jobs (word sensitivity: per map, grid point and chunk of trials; generalisation: per figure, "
             "data, map, n, N and chunk of simulations):"]
    groups: dict[str, list] = {}
    for job in jobs:
        groups.setdefault(f"ws {job.map}" if isinstance(job, WSJob) else f"{job.figure} {job.map}", []).append(job)
    for name in sorted(groups):
        mine = groups[name]
        hours = sum(job.seconds for job in mine) / 3600
        peak = max(job.memory_bytes for job in mine) / resources.GB
        lines.append(f"  {name:14s} {len(mine):5d} jobs  {hours:8.2f} CPU-hours  peak {peak:6.1f} GB")
    total_h = sum(job.seconds for job in jobs) / 3600
    peak = max((job.memory_bytes for job in jobs), default=0) / resources.GB
    lines.append(f"  {'total':14s} {len(jobs):5d} jobs  {total_h:8.2f} CPU-hours  peak {peak:6.1f} GB")
    lines.append(f"memory per job allowed here: {limit / resources.GB:.1f} GB (limits.memory_gb)")
    if unfit:
        lines.append(unfit_message(unfit, limit))
    else:
        lines.append("every job fits")
    return "\n".join(lines)
