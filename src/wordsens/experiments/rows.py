"""Experiment runners: one workflow job's worth of trials as tidy result rows.

The Snakemake scripts are thin adapters around these functions; everything they need arrives as
plain values (the ``params`` slices of the configuration). These functions never change global
torch state: the scripts set torch's thread count from the job's ``threads``, and each row records
the count it ran with.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .. import NUMERICS_VERSIONS, __version__
from .. import generalisation as G
from ..compute.devices import job_peak_bytes, job_processes, peak_rss_bytes, workflow_device
from ..data.samples import draw_sample
from ..maps import registry
from ..search import WSResult, estimate
from ..seeds import canonical_json, derive_seed

__all__ = ["config_hash", "gen_rows", "provenance", "token_kinds", "ws_rows"]


def config_hash(params: Any) -> str:
    """Short stable hash of a job's parameters (recorded in every row)."""
    return hashlib.blake2b(canonical_json(params).encode(), digest_size=6).hexdigest()


def _git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def provenance(experiment: str) -> dict[str, str]:
    """Versions (the numerics version of ``experiment``: ``ws`` or ``gen``) and the machine, for every row."""
    return {
        "version": __version__,
        "numerics_version": NUMERICS_VERSIONS[experiment],
        "git_commit": _git_commit(),
        "torch": torch.__version__,
        "host": platform.node(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
    }


def _mb(value: int | None) -> float | None:
    return None if value is None else value / 1024**2


def token_kinds(n: int, length: int | None) -> list[str]:
    """What each of the first ``n`` rows of a review's embeddings holds: ``[CLS]`` (row 0), ``word``,
    ``[SEP]`` (row ``length - 1``; ``length`` counts ``[CLS]`` and ``[SEP]``, as the embedding
    store's index does) and ``[PAD]`` (rows ``>= length``). ``length`` None (synthetic rows): ``row``."""
    if length is None:
        return ["row"] * n
    return ["[CLS]" if i == 0 else "[SEP]" if i == length - 1 else "[PAD]" if i >= length else "word" for i in range(n)]


def ws_rows(
    *,
    map_name: str,
    d: int,
    n: int,
    swept: dict[str, int],
    trials: list[int],
    seed: int,
    source: Any,
    data_label: str,
    settings: dict[str, Any],
) -> pd.DataFrame:
    """Run the word-sensitivity trials of one job; one row per trial.

    ``source`` is ``"synthetic"`` or an ``EmbeddingStore``. ``settings`` holds ``position``,
    ``method``, ``device``, ``min_tokens``, ``max_memory_gb``, ``draw_on``, the ``search`` options and,
    where it is not the map's own, the search's working ``dtype`` (``ws.dtype``: DRF's bfloat16 on a GPU);
    rows record the device they ran on (``workflow_device``: a job planned for a GPU runs on the CPU
    where none is visible), where the weights were drawn and, for DRF, how many layers were streamed.
    ``swept``: the values of the map's swept options (``MapSpec.sweep``: DRF's depth ``L``), passed to the
    search with ``options`` and written as columns (every table has a column per option any registered
    map sweeps, empty where its map has none). Trial ``t`` draws its review (or Gaussian sample) and its
    weights from seeds derived from (seed, map, d, n, the swept values, t), so a trial's numbers do not
    depend on the chunking or the order of jobs.

    Optional settings: ``options`` (the map's options, passed to ``wordsens.search.estimate`` and recorded as
    JSON in the column ``options``); ``shared_samples`` (trial ``t`` draws the same review for
    every map: its sample seed leaves the map out); ``profile`` (with ``position`` "all": one row per
    trial and position, ``lower`` the estimate at that position, ``token`` what the row holds,
    ``sup_position``/``sup_lower`` the trial's sup).
    """
    threads = torch.get_num_threads()
    search = {k: v for k, v in (settings.get("search") or {}).items() if v is not None}
    chash = config_hash(
        {"map": map_name, "d": d, "n": n, "swept": swept, "seed": seed, "data": data_label, "settings": settings}
    )
    columns = registry.swept_options()
    # the seed key of the swept values: None without any, the value itself with one (as the depth always was)
    sweep_key = None if not swept else next(iter(swept.values())) if len(swept) == 1 else tuple(swept.values())
    head = {"experiment": "ws", "map": map_name, "data": data_label, "d": d, "n": n}
    head |= {key: swept.get(key) for key in columns}
    tail = {"threads": threads, "config_hash": chash, **provenance("ws")}
    device = workflow_device(settings.get("device", "auto"))
    rows = []
    for trial in trials:
        print(
            f"started trial {trial} of {map_name} d={d} n={n}"
            + "".join(f" {key}={value}" for key, value in swept.items())
            + f" slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
            flush=True,
        )
        key = (seed, "ws", map_name, d, n, sweep_key, trial)
        sample_key = (seed, "ws", "shared", d, n, trial) if settings.get("shared_samples") else key
        X, info = draw_sample(
            source, n, d, derive_seed(*sample_key, "sample"), min_tokens=bool(settings.get("min_tokens", False))
        )
        weight_seed = derive_seed(*key, "weights")
        started = time.perf_counter()
        res = estimate(
            map_name,
            X,
            seed=weight_seed,
            position=settings.get("position", 0),
            method=settings.get("method", "default"),
            device=device,
            max_memory_gb=settings.get("max_memory_gb"),
            draw_on=settings.get("draw_on", "device"),
            dtype=getattr(torch, settings["dtype"]) if settings.get("dtype") else None,
            options={**(settings.get("options") or {}), **swept},
            **search,
        )
        row = _ws_row(res, info, trial=trial, seed=weight_seed, started=started, head=head, tail=tail)
        profile = res.profile if settings.get("profile") else None
        rows += [row] if profile is None else _profile_rows(row, profile, info, n)
    for pid, name, hwm in job_processes():
        print(f"job process {pid} {name}: peak {hwm / 1024**2:.0f} MB", flush=True)
    return _ws_frame(rows, columns)


def _ws_row(
    res: WSResult, info: dict[str, Any], *, trial: int, seed: int, started: float, head: dict, tail: dict
) -> dict[str, Any]:
    """One trial's row: ``head`` (what the job is: experiment, map, data, d, n, the swept options),
    the trial's sample and search result (``res``), its wall time since
    ``started`` and memory, then ``tail`` (threads, config hash, provenance); the columns in this order."""
    return {
        **head,
        "trial": trial,
        "seed": seed,
        "review_id": info["review_id"],
        "label": info["label"],
        "review_tokens": info["length"],
        "position": res.position,
        "lower": res.lower,
        "upper": res.upper,
        "phi_norm": res.phi_norm,
        "delta_norm": res.delta_norm,
        "steps": res.steps,
        "search_seconds": res.seconds,
        "wall_seconds": time.perf_counter() - started,
        "peak_memory_mb": peak_rss_bytes() / 1024**2,
        "job_peak_memory_mb": _mb(job_peak_bytes()),
        "method": res.method,
        "sampler": res.sampler,
        "weights_drawn_on": res.weights_drawn_on,
        "streamed_layers": res.streamed_layers,
        "options": canonical_json(res.options),
        "device": res.device,
        "dtype": res.dtype,
        **tail,
    }


def _profile_rows(row: dict[str, Any], profile: list[float], info: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """A profiled trial's rows (``settings["profile"]``): one per position, ``lower`` the estimate at
    that position (``profile``), ``token`` what the row holds, ``sup_position``/``sup_lower`` the
    trial's sup (the ``position`` and ``lower`` of its ``row``)."""
    kinds = token_kinds(n, None if info["review_id"] == -1 else int(info["length"]))
    return [
        {
            **row,
            "position": i,
            "lower": value,
            "upper": None,
            "token": kind,
            "sup_position": row["position"],
            "sup_lower": row["lower"],
        }
        for i, (value, kind) in enumerate(zip(profile, kinds, strict=True))
    ]


def _ws_frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """The job's table: nullable integers for the swept options and the streamed layers (empty where
    a map has none), floats for the columns a row may leave empty."""
    frame = pd.DataFrame(rows)
    for column in columns:
        frame[column] = frame[column].astype("Int64")
    frame["streamed_layers"] = frame["streamed_layers"].astype("Int64")
    frame["upper"] = frame["upper"].astype("float64")
    frame["job_peak_memory_mb"] = frame["job_peak_memory_mb"].astype("float64")
    return frame


def gen_rows(
    *,
    figure: str,
    map_name: str,
    n: int,
    N: int,
    d: int,
    simulations: list[int],
    searches: list,
    seed: int,
    source: Any,
    data_label: str,
    settings: dict[str, Any],
) -> pd.DataFrame:
    """Run the generalisation simulations of one job; one row per (simulation, search).

    Simulation ``s`` draws its training set, new sample and weights from seeds derived from
    (seed, map, n, N, d, data, s), so Figure 4 and 5 points with the same settings share them, and
    one simulation serves every (training, loss, penalty) search: features and Gram matrix are
    computed once, and the searches run together (``wordsens.generalisation.search_many``).
    ``settings`` may hold the map's ``options`` and the ``device`` (``workflow_device``; rows record it).
    """
    threads = torch.get_num_threads()
    search_opts = {k: v for k, v in (settings.get("search") or {}).items() if v is not None}
    chash = config_hash(
        {
            "figure": figure,
            "map": map_name,
            "n": n,
            "N": N,
            "d": d,
            "seed": seed,
            "data": data_label,
            "settings": settings,
            "searches": searches,
        }
    )
    head = {"experiment": "gen", "figure": figure, "map": map_name, "data": data_label, "d": d, "n": n, "N": N}
    tail = {"threads": threads, "config_hash": chash, **provenance("gen")}
    device = workflow_device(settings.get("device", "cpu"))
    rows = []
    for sim in simulations:
        print(
            f"started simulation {sim} of {figure} {map_name} n={n} N={N} d={d}"
            f" slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
            flush=True,
        )
        sim_seed = derive_seed(seed, "gen", map_name, n, N, d, data_label, sim)
        Xt, yt, X, y, info = G.draw_task(source, N, n, d, sim_seed, min_tokens=bool(settings.get("min_tokens", False)))
        setup = G.prepare(
            map_name,
            Xt,
            yt,
            X,
            y,
            seed=sim_seed,
            position=settings.get("position", 0),
            device=device,
            options=settings.get("options"),
        )
        for res in G.search_many(setup, [(t, loss, p) for t, loss, p in searches], seed=sim_seed, **search_opts):
            rows.append(_gen_row(res, setup, head=head, simulation=sim, seed=sim_seed, info=info, tail=tail))
    frame = pd.DataFrame(rows)
    frame["job_peak_memory_mb"] = frame["job_peak_memory_mb"].astype("float64")
    return frame


def _gen_row(
    res: G.GenResult, setup: G.Setup, *, head: dict, simulation: int, seed: int, info: dict[str, Any], tail: dict
) -> dict[str, Any]:
    """One search's row: ``head`` (what the job is: experiment, figure, map, data, d, n, N), the
    simulation, its search result and setup, the memory, then ``tail`` (threads, config hash,
    provenance); the columns in this order."""
    return {
        **head,
        "simulation": simulation,
        "seed": seed,
        "review_id": info["review_id"],
        "position": setup.position,
        **{k: v for k, v in res.as_dict().items() if k not in ("map",)},
        "prepare_seconds": setup.seconds,
        "sampler": setup.sampler,
        "options": canonical_json(setup.options),
        "device": setup.device,
        "peak_memory_mb": peak_rss_bytes() / 1024**2,
        "job_peak_memory_mb": _mb(job_peak_bytes()),
        **tail,
    }
