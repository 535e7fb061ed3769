"""The word-sensitivity job every WS study shares (the paper's grids, the variants, long contexts, per-position
profiles): its record (``WSJob``: one chunk of a grid point's trials), how a study's grid points become jobs
with their estimates (``ws_jobs``), and its body (``WSJob.run``: one row per trial, from the searches of
``wordsens.search``). The settings of the configuration's ``ws`` section (method, device, search, memory,
threads) apply to every WS study. Torch-free at import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ..compute import costs, placement
from ..compute.limits import Limits
from ..compute.placement import GpuRate, Placement, placed
from ..maps import registry
from .jobs import Job, JobFiles, chunks

# The numerics of word-sensitivity estimates (wordsens.search): bump the version when a change of the
# searches changes their results (docs/changelog.md lists what each version changed).
WS_NUMERICS = ("ws", "ws-3")


def setting_name(d: int, n: int, swept: Mapping[str, int] | None = None) -> str:
    """The path component of one WS grid point: ``d768_n50``, and each swept option of its map
    (``MapSpec.sweep``) after it: ``d768_n50_L2`` for DRF's depth."""
    return f"d{d}_n{n}" + "".join(f"_{key}{value}" for key, value in (swept or {}).items())


def options_of(map_name: str, options: Mapping[str, Any] | None) -> tuple[dict, dict]:
    """A study's map options without the swept ones (``MapSpec.sweep``), and the swept ones' values
    (defaults where absent): they name the jobs and are columns of the tables."""
    spec = registry.get(map_name)
    opts = dict(options or {})
    return {k: v for k, v in opts.items() if k not in spec.sweep}, spec.swept(opts)


def sweeps(map_name: str, grid: Mapping[str, Any]) -> list[dict]:
    """Every combination of a grid's swept options (``MapSpec.sweep``: the grid lists each one's values;
    one not listed runs its default), in the order of the job names."""
    spec = registry.get(map_name)
    combos: list[dict] = [{}]
    for key in spec.sweep:
        values = grid.get(key) or [spec.swept()[key]]
        combos = [{**combo, key: int(v)} for combo in combos for v in values]
    return combos


def capped_ns(ns: Iterable[int], map_name: str, max_n: Mapping[str, int]) -> list[int]:
    """The grid's n up to the map's entry in a section's ``max_n`` (all of them without one)."""
    cap = max_n.get(map_name)
    return [n for n in ns if cap is None or n <= cap]


_FIXED_WS = 2.33


@dataclass(frozen=True, kw_only=True)
class WSJob(Job):
    """A chunk of the trials of one WS grid point: ``map`` at ``d`` and ``n`` (and the values of its swept
    options, ``swept``: DRF's depth L), moving the row at ``position`` (or every row: ``all``), written below
    the results ``folder`` into ``table``. Trial t draws its review (or Gaussian sample) and its weights from
    seeds of (seed, map, d, n, the swept values, t). ``profile``: one row per position; ``shared_samples``:
    trial t draws the same review for every map. The rest are the ``ws`` section's settings: the method, the
    search's working ``dtype`` where it is not the map's own, whether reviews need n tokens, DRF's memory
    budget, where RF/DRF weights are drawn, the search's settings."""

    rule = "ws"
    output = "{folder}/{map}/{setting}/chunk{chunk}"
    summary = ("trial", "lower", "upper", "steps", "search_seconds")
    coefficients: ClassVar = {
        "ws:*": (_FIXED_WS, 1.9),
        "ws:rf": (_FIXED_WS, 0.58),
        "ws:drf": (_FIXED_WS, 1.9),
        "ws:raf": (_FIXED_WS, 0.73),
        "ws:relu_raf": (_FIXED_WS, 1.14),
        "ws:block": (_FIXED_WS, 0.45),
        "ws:linear_raf": (_FIXED_WS, 0.28),
        "ws:mh_raf": (_FIXED_WS, 0.34),
        "ws:sigmoid_raf": (_FIXED_WS, 0.59),
    }
    gpu_rates: ClassVar = {  # fitted on the H200 run (docs/gpu.md); DRF's are its single jobs' in each dtype
        "ws:rf": GpuRate(0.306, 0.00316),
        "ws:drf": GpuRate(0.0, 0.00946),
        "ws:drf:bfloat16": GpuRate(0.0, 0.00129),
        "ws:raf": GpuRate(0.186, 0.0355),
        "ws:relu_raf": GpuRate(0.0503, 0.0282),
        "ws:block": GpuRate(0.174, 0.0),
        "ws:linear_raf": GpuRate(0.15, 0.0),
        "ws:mh_raf": GpuRate(0.119, 0.0078),
        "ws:sigmoid_raf": GpuRate(0.119, 0.0),
    }

    map: str
    folder: str
    d: int
    n: int
    swept: Mapping[str, int] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    position: int | str = 0
    trials: tuple[int, ...] = ()
    data_label: str = "synthetic"
    profile: bool = False
    shared_samples: bool = False
    method: str = "default"
    dtype: str | None = None
    min_tokens: bool = False
    max_memory_gb: float | None = None
    draw_on: str = "device"
    search: Mapping[str, Any] = field(default_factory=dict)

    @property
    def setting(self) -> str:
        return setting_name(self.d, self.n, self.swept)

    @property
    def group(self) -> str:
        return self.folder

    @property
    def point(self) -> str:
        return f"{self.map} {self.setting}" if self.folder == "ws" else f"{self.folder} {self.map} {self.setting}"

    @property
    def rows(self) -> int:
        """One row per trial, or per trial and position where every position is searched with a profile."""
        return len(self.trials) * (self.n if self.profile else 1)

    def values(self) -> dict[str, Any]:
        return {"study": self.folder, "data": self.data, "d": self.d, "n": self.n, **self.swept}

    def run(self, files: JobFiles) -> Any:
        from ..data.store import load_embeddings

        meta = files.store()
        return ws_rows(self, load_embeddings(meta) if meta else "synthetic")


def ws_jobs(config: dict, limits: Limits, version: str, points: Iterable[WSJob], per_job: int) -> list[WSJob]:
    """The jobs of a study's grid ``points`` (each a ``WSJob`` holding every trial of its point): the ``ws``
    section's settings filled in, its device and estimates (memory and seconds from the map's cost model:
    ``MapSpec.ws_memory``, ``ws_seconds``) planned under ``limits``, its trials split into jobs of
    ``per_job`` (on a shared GPU, DRF's into as many jobs as run there side by side); ``version``: the
    numerics version, part of every job's params."""
    ws = config["ws"]
    method = ws["method"]
    # ws.max_memory_gb lets DRF stream the layers that do not fit (None: every layer resident)
    budget = None if ws["max_memory_gb"] is None else int(ws["max_memory_gb"] * costs.GB)
    search = {key: value for key, value in ws["search"].items() if value is not None}
    jobs: list[WSJob] = []
    for pt in points:
        spec = registry.get(pt.map)
        sampler = spec.choose_sampler(position=pt.position, method=method)
        options = {**pt.options, **pt.swept}
        positions = pt.n if pt.position == "all" else 1
        model = spec.ws_seconds(  # one trial on the CPU: the cost model
            pt.n,
            pt.d,
            options,
            method=method,
            sampler=sampler,
            device="cpu",
            positions=positions,
            budget=budget,
            max_steps=ws["search"]["max_steps"],
        )
        dtypes = {
            f"{where}_dtype": placement.working_dtype(ws["dtype"], device, spec.settings.dtype, spec.settings.reduced)
            for where, device in (("cpu", "cpu"), ("gpu", "cuda"))
        }
        unit = Placement.on(limits, f"ws:{pt.map}", model, positions, **dtypes)
        device = unit.device(ws["device"], limits, per_job, spec.cost.prefers_gpu)
        dtype = unit.dtype(device)
        typed = {"dtype": dtype} if dtype else {}
        estimate = spec.ws_memory(pt.n, pt.d, options, method=method, sampler=sampler, budget=budget, **typed)
        cost = placed(estimate.bytes, device, unit.seconds(device), threads=ws["threads"], cap=budget)
        per = per_job
        if device == "cuda" and spec.cost.prefers_gpu and limits.shared_gpu and limits.gpu is not None:
            per = placement.gpu_trials_per_job(len(pt.trials), per_job, cost.device_bytes, limits.gpu, limits.gpu_slots)
        point = replace(
            pt,
            device=device,
            seed=config["seed"],
            method=method,
            dtype=dtype,
            min_tokens=ws["min_tokens"],
            max_memory_gb=ws["max_memory_gb"],
            draw_on=ws["draw_on"],
            search=search,
            numerics_version=version,
        )
        for chunk, trials in enumerate(chunks(len(pt.trials), per)):
            seconds = cost.seconds * len(trials)
            jobs.append(
                replace(
                    point, chunk=chunk, trials=tuple(pt.trials[t] for t in trials), cost=replace(cost, seconds=seconds)
                )
            )
    return jobs


# ----------------------------------------------------------------------------- the body


def token_kinds(n: int, length: int | None) -> list[str]:
    """What each of the first ``n`` rows of a review's embeddings holds: ``[CLS]`` (row 0), ``word``,
    ``[SEP]`` (row ``length - 1``; ``length`` counts ``[CLS]`` and ``[SEP]``, as the embedding store's
    index does) and ``[PAD]`` (rows ``>= length``). ``length`` None (synthetic rows): ``row``."""
    if length is None:
        return ["row"] * n
    return ["[CLS]" if i == 0 else "[SEP]" if i == length - 1 else "[PAD]" if i >= length else "word" for i in range(n)]


def ws_rows(job: WSJob, source: Any) -> Any:
    """The rows of one WS job from ``source`` (``"synthetic"`` or an ``EmbeddingStore``): one per trial
    (``job.profile``: per trial and position, ``lower`` the estimate there, ``token`` what the row holds,
    ``sup_position``/``sup_lower`` the trial's sup), with the device it ran on (a GPU job runs on the CPU where
    none is visible), the search's dtype and a column per option any registered map sweeps. A trial's numbers
    do not depend on the chunking or the order of jobs."""
    import os
    import time

    import pandas as pd
    import torch

    from ..compute.devices import job_processes, workflow_device
    from ..data.samples import draw_sample
    from ..search import estimate
    from ..seeds import derive_seed

    swept = dict(job.swept)
    columns = registry.swept_options()
    # the seed key of the swept values: None without any, the value itself with one, a tuple with several
    sweep_key = None if not swept else next(iter(swept.values())) if len(swept) == 1 else tuple(swept.values())
    head = {"experiment": "ws", "map": job.map, "data": job.data_label, "d": job.d, "n": job.n}
    head |= {key: swept.get(key) for key in columns}
    tail = {"threads": torch.get_num_threads(), **job.stamp()}
    device = workflow_device(job.device)
    rows = []
    for trial in job.trials:
        print(
            f"started trial {trial} of {job.map} d={job.d} n={job.n}"
            + "".join(f" {key}={value}" for key, value in swept.items())
            + f" slurm_job_id={os.environ.get('SLURM_JOB_ID', '')}",
            flush=True,
        )
        key = (job.seed, "ws", job.map, job.d, job.n, sweep_key, trial)
        sample_key = (job.seed, "ws", "shared", job.d, job.n, trial) if job.shared_samples else key
        X, info = draw_sample(source, job.n, job.d, derive_seed(*sample_key, "sample"), min_tokens=job.min_tokens)
        weight_seed = derive_seed(*key, "weights")
        started = time.perf_counter()
        res = estimate(
            job.map,
            X,
            seed=weight_seed,
            position=job.position,
            method=job.method,
            device=device,
            max_memory_gb=job.max_memory_gb,
            draw_on=job.draw_on,
            dtype=getattr(torch, job.dtype) if job.dtype else None,
            options={**job.options, **swept},
            **job.search,
        )
        row = {**head, **_row(res, info, trial=trial, seed=weight_seed, started=started), **tail}
        if job.profile and res.profile is not None:
            length = info["length"]
            kinds = token_kinds(job.n, None if info["review_id"] == -1 else int(length))  # type: ignore[call-overload]
            rows += [
                {**row, "position": i, "lower": value, "upper": None, "token": kind}
                | {"sup_position": row["position"], "sup_lower": row["lower"]}
                for i, (value, kind) in enumerate(zip(res.profile, kinds, strict=True))
            ]
        else:
            rows.append(row)
    for pid, name, hwm in job_processes():
        print(f"job process {pid} {name}: peak {hwm / 1024**2:.0f} MB", flush=True)
    frame = pd.DataFrame(rows)
    for column in (*columns, "streamed_layers"):
        frame[column] = frame[column].astype("Int64")
    for column in ("upper", "job_peak_memory_mb"):
        frame[column] = frame[column].astype("float64")
    return frame


def _row(res: Any, info: dict[str, Any], *, trial: int, seed: int, started: float) -> dict[str, Any]:
    """A trial's columns between the job's (map, data, d, n, swept options) and the provenance: its sample,
    its search's result, wall time since ``started`` and memory."""
    import time

    from ..seeds import canonical_json
    from .jobs import memory_columns

    return {
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
        **memory_columns(),
        "method": res.method,
        "sampler": res.sampler,
        "weights_drawn_on": res.weights_drawn_on,
        "streamed_layers": res.streamed_layers,
        "options": canonical_json(res.options),
        "device": res.device,
        "dtype": res.dtype,
    }
