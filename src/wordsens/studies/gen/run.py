"""The body of a generalisation job (Figures 4 and 5): its simulations as tidy rows with their provenance
(``gen_rows``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from ... import generalisation as G
from ...compute.devices import workflow_device
from ...seeds import canonical_json, derive_seed
from ..jobs import memory_columns

if TYPE_CHECKING:
    from . import GenJob


def gen_rows(job: GenJob, source: Any) -> pd.DataFrame:
    """The rows of one generalisation job (``source``: ``"synthetic"`` or an ``EmbeddingStore``), one per
    simulation and search. A simulation's seeds derive from (seed, map, n, N, d, data, simulation), so that
    Figures 4 and 5 share the simulations of one setting; its searches share its features and Gram matrix
    (``wordsens.generalisation.search_many``)."""
    threads = torch.get_num_threads()
    head = {
        "experiment": "gen",
        "figure": job.figure,
        "map": job.map,
        "data": job.data_label,
        "d": job.d,
        "n": job.n,
        "N": job.N,
    }
    tail = {"threads": threads, **job.stamp()}
    device = workflow_device(job.device)
    rows = []
    for sim in job.simulations:
        print(
            f"started simulation {sim} of {job.figure} {job.map} n={job.n} N={job.N} d={job.d}"
            f" slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
            flush=True,
        )
        sim_seed = derive_seed(job.seed, "gen", job.map, job.n, job.N, job.d, job.data_label, sim)
        Xt, yt, X, y, info = G.draw_task(source, job.N, job.n, job.d, sim_seed, min_tokens=bool(job.min_tokens))
        setup = G.prepare(
            job.map,
            Xt,
            yt,
            X,
            y,
            seed=sim_seed,
            position=job.position,
            device=device,
            options=dict(job.options) or None,
        )
        for res in G.search_many(setup, [(t, loss, p) for t, loss, p in job.searches], seed=sim_seed, **job.search):
            rows.append(_gen_row(res, setup, head=head, simulation=sim, seed=sim_seed, info=info, tail=tail))
    frame = pd.DataFrame(rows)
    frame["job_peak_memory_mb"] = frame["job_peak_memory_mb"].astype("float64")
    return frame


def _gen_row(
    res: G.GenResult, setup: G.Setup, *, head: dict, simulation: int, seed: int, info: dict[str, Any], tail: dict
) -> dict[str, Any]:
    """One search's row, its columns in this order: ``head`` (the job's setting), the simulation, its search
    result and setup, the memory, then ``tail`` (threads, config hash, provenance)."""
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
        **memory_columns(),
        **tail,
    }
