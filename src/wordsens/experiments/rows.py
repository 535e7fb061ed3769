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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from .. import __version__
from ..compute.devices import job_peak_bytes, job_processes, peak_rss_bytes, workflow_device
from ..data.samples import draw_sample
from ..maps import registry
from ..search import WSResult, estimate
from ..seeds import canonical_json, derive_seed

if TYPE_CHECKING:
    from ..studies.jobs import JobFiles
    from ..studies.sensitivity import WSSettings

__all__ = ["config_hash", "job_peak_mb", "provenance", "token_kinds", "ws_job", "ws_rows"]


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


def provenance(numerics_version: str) -> dict[str, str]:
    """Versions (the package's, the job's numerics version) and the machine, for every row."""
    return {
        "version": __version__,
        "numerics_version": numerics_version,
        "git_commit": _git_commit(),
        "torch": torch.__version__,
        "host": platform.node(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
    }


def job_peak_mb() -> float | None:
    """The peak memory of the job's SLURM step or process group so far (MB), None where unknown."""
    value = job_peak_bytes()
    return None if value is None else value / 1024**2


def token_kinds(n: int, length: int | None) -> list[str]:
    """What each of the first ``n`` rows of a review's embeddings holds: ``[CLS]`` (row 0), ``word``,
    ``[SEP]`` (row ``length - 1``; ``length`` counts ``[CLS]`` and ``[SEP]``, as the embedding
    store's index does) and ``[PAD]`` (rows ``>= length``). ``length`` None (synthetic rows): ``row``."""
    if length is None:
        return ["row"] * n
    return ["[CLS]" if i == 0 else "[SEP]" if i == length - 1 else "[PAD]" if i >= length else "word" for i in range(n)]


def ws_job(params: Mapping[str, Any], files: JobFiles) -> pd.DataFrame:
    """The body of a word-sensitivity job (``wordsens.studies.sensitivity.WS_RULE``): its settings from its
    params, its rows from the embedding store it reads (or synthetic rows)."""
    from ..data.store import load_embeddings
    from ..studies.sensitivity import WSSettings

    meta = files.store()
    return ws_rows(WSSettings.of(params), load_embeddings(meta) if meta else "synthetic")


def ws_rows(job: WSSettings, source: Any) -> pd.DataFrame:
    """Run the word-sensitivity trials of one job (``job``: its settings,
    ``wordsens.studies.sensitivity.WSSettings``); one row per trial.

    ``source`` is ``"synthetic"`` or an ``EmbeddingStore``. Rows record the device they ran on
    (``workflow_device``: a job planned for a GPU runs on the CPU where none is visible), the search's working
    dtype (``job.settings.dtype`` where it is not the map's own: ``ws.dtype``, DRF's bfloat16 on a GPU), where
    the weights were drawn and, for DRF, how many layers were streamed. The values of the map's swept options
    (``job.swept``, ``MapSpec.sweep``: DRF's depth ``L``) are passed to the search with the map's options and
    written as columns (every table has a column per option any registered map sweeps, empty where its map has
    none). Trial ``t`` draws its review (or Gaussian sample) and its weights from seeds derived from (seed,
    map, d, n, the swept values, t), so a trial's numbers do not depend on the chunking or the order of jobs.

    ``job.settings.shared_samples``: trial ``t`` draws the same review for every map (its sample seed
    leaves the map out); ``job.settings.profile`` (with position "all"): one row per trial and position,
    ``lower`` the estimate at that position, ``token`` what the row holds, ``sup_position``/``sup_lower``
    the trial's sup.
    """
    map_name, d, n, swept, seed, run = job.map, job.d, job.n, dict(job.swept), job.seed, job.settings
    threads = torch.get_num_threads()
    search = run.search.given()
    chash = config_hash(
        {
            "map": map_name,
            "d": d,
            "n": n,
            "swept": swept,
            "seed": seed,
            "data": job.data_label,
            "settings": run.params(),
        }
    )
    columns = registry.swept_options()
    # the seed key of the swept values: None without any, the value itself with one, a tuple with several
    sweep_key = None if not swept else next(iter(swept.values())) if len(swept) == 1 else tuple(swept.values())
    head = {"experiment": "ws", "map": map_name, "data": job.data_label, "d": d, "n": n}
    head |= {key: swept.get(key) for key in columns}
    tail = {"threads": threads, "config_hash": chash, **provenance(job.numerics_version)}
    device = workflow_device(run.device)
    rows = []
    for trial in job.trials:
        print(
            f"started trial {trial} of {map_name} d={d} n={n}"
            + "".join(f" {key}={value}" for key, value in swept.items())
            + f" slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
            flush=True,
        )
        key = (seed, "ws", map_name, d, n, sweep_key, trial)
        sample_key = (seed, "ws", "shared", d, n, trial) if run.shared_samples else key
        X, info = draw_sample(source, n, d, derive_seed(*sample_key, "sample"), min_tokens=bool(run.min_tokens))
        weight_seed = derive_seed(*key, "weights")
        started = time.perf_counter()
        res = estimate(
            map_name,
            X,
            seed=weight_seed,
            position=run.position,
            method=run.method,
            device=device,
            max_memory_gb=run.max_memory_gb,
            draw_on=run.draw_on,
            dtype=getattr(torch, run.dtype) if run.dtype else None,
            options={**run.options, **swept},
            **search,
        )
        row = _ws_row(res, info, trial=trial, seed=weight_seed, started=started, head=head, tail=tail)
        profile = res.profile if run.profile else None
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
        "job_peak_memory_mb": job_peak_mb(),
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
