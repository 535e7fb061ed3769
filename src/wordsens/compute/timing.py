"""Wall time of a workflow job on this machine: the cost model's seconds, calibrated.

The cost models (``wordsens.compute.costs``, ``wordsens.compute.map_costs``) give the work of a
job in model seconds of a reference 2-core CPU; a job's measured wall time adds a fixed part (the
process that imports torch, reads its inputs and writes its rows) and runs at this machine's speed.
A ``Calibration`` holds, per job family (``ws:<map>``, ``gen:<map>``, a rule name such as
``embed`` or ``gen_figure``), the two coefficients of

    wall seconds = fixed + scale * model seconds

fitted (``fit``) on measured jobs (``Sample``: Snakemake benchmark files and logs, read by
``wordsens.io``) by least squares on seconds: one start-up time (``fixed``) per kind of job
(word sensitivity, generalisation) and one ``scale`` per family; a family whose jobs are all start-up
(less than ``MIN_MODEL_SECONDS`` of model time) gets no scale of its own, a rule without a cost
model (data steps, tables, figures, probes) its mean time. Families without their own samples take
the pooled fit of their kind (``ws:*``, ``gen:*``, ``rule:*``), then the built-in coefficients
(``BUILTIN``, measured on this project's 2-core machine). Torch-free, and nothing of wordsens is imported.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["BUILTIN", "DOWNLOAD_SECONDS", "Calibration", "Coefficients", "Sample", "fit", "pooled"]


@dataclass(frozen=True)
class Sample:
    """One measured job: its family, its cost-model seconds (0 for rules without a model) and its
    measured wall seconds; ``source``: the file it was read from."""

    family: str
    model: float
    measured: float
    source: str = ""


# Below this many model seconds a family's jobs are all start-up: their scale is not measured, and
# the pooled or built-in one applies.
MIN_MODEL_SECONDS = 1.0


@dataclass(frozen=True)
class Coefficients:
    """``fixed + scale * model`` seconds; ``count``: the samples it was fitted on (0: built in);
    ``scale`` None: not measured (``Calibration.of`` takes the pooled or built-in one)."""

    fixed: float
    scale: float | None
    count: int = 0

    def predict(self, model: float) -> float:
        return self.fixed + (self.scale or 0.0) * model


def pooled(family: str) -> str:
    """The pooled family a family falls back on: ``ws:*``, ``gen:*`` or ``rule:*``."""
    kind, sep, _ = family.partition(":")
    return f"{kind}:*" if sep else "rule:*"


def _fit_kind(samples: list[Sample]) -> dict[str, Coefficients]:
    """One kind's families (``ws:<map>`` or ``gen:<map>``): a start-up time shared by the kind and a
    non-negative scale per family, jointly by least squares on seconds (a scale that comes out
    negative is set to 0 and the rest fitted again); a family whose jobs all stay below
    ``MIN_MODEL_SECONDS`` only informs the start-up (its scale: None, the pooled one applies)."""
    import numpy as np

    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.family, []).append(sample)
    scaled = [f for f, g in groups.items() if max(s.model for s in g) >= MIN_MODEL_SECONDS]
    zero: list[str] = []  # families whose fitted scale came out negative: their time is start-up
    t = np.array([s.measured for s in samples])
    intercept = 1.0  # 0: the start-up time came out negative, fitted again without one
    while True:
        A = np.zeros((len(samples), 1 + len(scaled)))
        A[:, 0] = intercept
        for i, s in enumerate(samples):
            if s.family in scaled:
                A[i, 1 + scaled.index(s.family)] = s.model
        x = np.linalg.lstsq(A, t, rcond=None)[0]
        if intercept and x[0] < 0:
            intercept = 0.0
            continue
        negative = [f for f, b in zip(scaled, x[1:], strict=True) if b < 0]
        if not negative:
            break
        zero += negative
        scaled = [f for f in scaled if f not in negative]
    fixed = float(x[0]) * intercept
    scales = {f: float(b) for f, b in zip(scaled, x[1:], strict=True)} | dict.fromkeys(zero, 0.0)
    out = {f: Coefficients(fixed, scales.get(f), len(g)) for f, g in groups.items()}
    rest = [s for s in samples if s.model >= MIN_MODEL_SECONDS]
    mm = sum(s.model**2 for s in rest)
    pooled_scale = sum(s.model * (s.measured - fixed) for s in rest) / mm if mm else None
    out[pooled(samples[0].family)] = Coefficients(
        fixed, None if pooled_scale is None else max(pooled_scale, 0.0), len(samples)
    )
    return out


def fit(samples: Iterable[Sample]) -> dict[str, Coefficients]:
    """The coefficients of every family with samples and of the pooled families (``pooled``): for
    ``ws:*`` and ``gen:*``, ``_fit_kind``; for a rule, its mean time (``rule:*``: the mean of all)."""
    kinds: dict[str, list[Sample]] = {}
    for sample in samples:
        if sample.measured > 0 and math.isfinite(sample.measured):
            kinds.setdefault(pooled(sample.family), []).append(sample)
    out: dict[str, Coefficients] = {}
    for kind, group in sorted(kinds.items()):
        if kind != "rule:*":
            out.update(_fit_kind(group))
            continue
        by_rule: dict[str, list[float]] = {}
        for sample in group:
            by_rule.setdefault(sample.family, []).append(sample.measured)
        for rule, times in by_rule.items():
            out[rule] = Coefficients(sum(times) / len(times), None, len(times))
        out[kind] = Coefficients(sum(s.measured for s in group) / len(group), None, len(group))
    return dict(sorted(out.items()))


# Measured on this project's 2-core machine. The start-up of a job (``fixed``): the wall times of a
# quiet demo run (config/demo.yaml on 2 cores, where jobs are all start-up; ``wordsens plan
# --calibrate`` of it fitted 4.2 s per WS job, 4.8 s per generalisation job, 1-15 s per other step,
# 5.6 s on average; a second one, 2026-11-27, 3.9 s and 4.4 s). The scales per map: the CPU seconds of
# one trial (generalisation: one simulation with its four searches) of the default config.yaml's own
# jobs (d = 64-768, n = 10-4096; each map at its smallest, middle and largest grid point) over the
# model's seconds, one thread, with benchmarks/bench_model.py (the median per map; CPU seconds do not
# stretch with other work on the machine, wall seconds do). Within a map the ratio still varies with
# the grid point (an attention search at n = 10 takes 3-10 x the model's steps). The pooled ``ws:*``
# scale, for maps not measured here (plugins), stays the generous one of the first measurement.
# ``wordsens plan --calibrate`` replaces them all.
FIXED_WS = 4.2
FIXED_GEN = 4.8
BUILTIN: dict[str, Coefficients] = {
    "ws:*": Coefficients(FIXED_WS, 4.5),
    "ws:rf": Coefficients(FIXED_WS, 1.1),  # RF's subspace search as of 2026-11-27 (6 jobs: 1.01-1.30)
    "ws:drf": Coefficients(FIXED_WS, 3.9),
    "ws:raf": Coefficients(FIXED_WS, 2.3),
    "ws:relu_raf": Coefficients(FIXED_WS, 2.9),
    "ws:block": Coefficients(FIXED_WS, 0.8),
    "ws:linear_raf": Coefficients(FIXED_WS, 0.75),
    "ws:mh_raf": Coefficients(FIXED_WS, 1.3),
    "ws:sigmoid_raf": Coefficients(FIXED_WS, 1.2),
    # the trained study's jobs (one per encoder layer): its MiniLM run (config/pretrained.yaml) took
    # 0.40 of the 0.95 job-hours the pooled scale 4.5 planned
    "ws:trained": Coefficients(FIXED_WS, 1.9),
    "gen:*": Coefficients(FIXED_GEN, 1.4),
    "gen:rf": Coefficients(FIXED_GEN, 0.94),  # with FirstLayer.forward as B D^T (3 jobs: 0.94-0.97)
    # RAF maps with the searches' loop at 2.5e-4 s per step (AttentionCost.gen_seconds), 2026-11-27
    "gen:raf": Coefficients(FIXED_GEN, 1.29),
    "gen:relu_raf": Coefficients(FIXED_GEN, 1.4),
    "rule:*": Coefficients(6.0, None),
    # steps measured apart from the pooled 6 s (a quiet demo run on 2 cores, 2026-11-27, wall seconds per
    # job): the tables merge chunks (1 s each; 13 of them in the demo were priced at 6 s), the claims
    # read them (2 s), a generalisation figure draws every simulation's points (16 s)
    "ws_table": Coefficients(1.0, None),
    "gen_table": Coefficients(1.0, None),
    "study_table": Coefficients(1.0, None),
    "trained_table": Coefficients(1.0, None),
    "claims": Coefficients(2.0, None),
    "gen_figure": Coefficients(16.0, None),
}

# Downloads from the Hugging Face Hub, not measured here (the development machine has no Hub):
# at about 10 MB/s, IMDb (84 MB) and BERT-Base (440 MB), plus start-up.
DOWNLOAD_SECONDS = {"reviews": 30.0, "model": 60.0}


@dataclass(frozen=True)
class Calibration:
    """Coefficients per family (``fit``), with the built-in ones beneath them; ``sources``: the
    results folders and logs they were fitted on."""

    coefficients: Mapping[str, Coefficients] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @classmethod
    def from_samples(cls, samples: Iterable[Sample], sources: Iterable[str] = ()) -> Calibration:
        return cls(fit(samples), tuple(sources))

    def of(self, family: str) -> Coefficients:
        """The coefficients of ``family``: its own, else its pooled family's, else the built-in
        ones; a scale not measured (None) is taken from the next of these that has one."""
        found = [t[k] for t in (self.coefficients, BUILTIN) for k in (family, pooled(family)) if k in t]
        scale = next((c.scale for c in found if c.scale is not None), None)  # rules have none
        return Coefficients(found[0].fixed, scale, found[0].count)

    def seconds(self, family: str, model: float = 0.0) -> float:
        """Predicted wall seconds of one job of ``family`` with ``model`` cost-model seconds."""
        return self.of(family).predict(model)

    def to_dict(self) -> dict:
        return {
            "sources": list(self.sources),
            "coefficients": {
                k: {"fixed": c.fixed, "scale": c.scale, "count": c.count} for k, c in self.coefficients.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Calibration:
        coefficients = {
            str(k): Coefficients(
                float(v["fixed"]), None if v["scale"] is None else float(v["scale"]), int(v.get("count", 0))
            )
            for k, v in dict(data.get("coefficients") or {}).items()
        }
        return cls(coefficients, tuple(data.get("sources") or ()))
