"""Wall time of a workflow job on this machine: the cost model's seconds, calibrated.

A ``Calibration`` holds, per job family (``ws:<map>``, ``gen:<map>``, a rule name such as ``embed``),
``wall seconds = fixed + scale * model seconds``, fitted (``fit``) on measured jobs (``Sample``) by least
squares on relative errors: one start-up time per kind of job, one scale per family. Families without
samples take the built-in coefficients (``BUILTIN``) stretched by this machine's speed, and families
unknown to both (a plugin's map) their kind's pooled fit (``ws:*``, ``gen:*``, ``rule:*``). The fit's
choices and runs: docs/benchmarks.md. Torch-free, nothing of wordsens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Generic, TypeVar


@dataclass(frozen=True)
class Sample:
    """One measured job: its family, its cost-model seconds (0 for rules without a model) and its
    measured wall seconds; ``source``: the file it was read from."""

    family: str
    model: float
    measured: float
    source: str = ""


# Below this many model seconds a family's jobs are all start-up: their scale is not measured
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

    def times(self, factor: float) -> Coefficients:
        """These coefficients on a machine ``factor`` times as slow (both parts stretched)."""
        return Coefficients(self.fixed * factor, None if self.scale is None else self.scale * factor, self.count)


def pooled(family: str) -> str:
    """The pooled family a family falls back on: ``ws:*``, ``gen:*`` or ``rule:*``."""
    kind, sep, _ = family.partition(":")
    return f"{kind}:*" if sep else "rule:*"


def _fit_kind(samples: list[Sample]) -> dict[str, Coefficients]:
    """One kind's families: a start-up time shared by the kind and a non-negative scale per family, jointly
    by least squares on relative errors (a negative scale is set to 0 and the rest fitted again); a family
    below ``MIN_MODEL_SECONDS`` only informs the start-up (its scale: None)."""
    import numpy as np

    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(sample.family, []).append(sample)
    scaled = [f for f, g in groups.items() if max(s.model for s in g) >= MIN_MODEL_SECONDS]
    zero: list[str] = []  # families whose fitted scale came out negative: their time is start-up
    t = np.array([s.measured for s in samples])
    weight = 1.0 / t  # relative errors: a job twice as long does not count four times as much
    intercept = 1.0  # 0: the start-up time came out negative, fitted again without one
    while True:
        A = np.zeros((len(samples), 1 + len(scaled)))
        A[:, 0] = intercept
        for i, s in enumerate(samples):
            if s.family in scaled:
                A[i, 1 + scaled.index(s.family)] = s.model
        x = np.linalg.lstsq(A * weight[:, None], t * weight, rcond=None)[0]
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
    mm = sum((s.model / s.measured) ** 2 for s in rest)
    pooled_scale = sum(s.model * (s.measured - fixed) / s.measured**2 for s in rest) / mm if mm else None
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


V = TypeVar("V")


class Registered(dict[str, V], Generic[V]):
    """Values per job family that the studies join as they register (``BUILTIN``, ``placement.GPU_RATES``):
    ``join`` adds one (the same again is a no-op, another an error)."""

    def __init__(self, what: str, values: Mapping[str, V] | None = None) -> None:
        super().__init__(values or {})
        self.what = what

    def join(self, family: str, value: V) -> None:
        if self.setdefault(family, value) != value:
            raise ValueError(f"{self.what} of {family!r} is {self[family]}, not {value}")

    def snapshot(self) -> dict[str, V]:
        return dict(self)

    def restore(self, saved: Mapping[str, V]) -> None:
        self.clear()
        self.update(saved)


# The built-in coefficients, fitted on three runs of this project's 2-core machine (docs/benchmarks.md, "The
# built-in coefficients"); here the steps without a cost model (their mean wall seconds), the studies'
# families join as the studies register (``StudySpec.coefficients``, ``JobRule.coefficients``)
BUILTIN: Registered[Coefficients] = Registered(
    "the built-in time",
    {
        "rule:*": Coefficients(4.9, None),
        "reviews": Coefficients(1.7, None),
        "demo_corpus": Coefficients(1.0, None),
        "demo_model": Coefficients(10.0, None),
        "packaged_model": Coefficients(2.0, None),
        "pool": Coefficients(5.0, None),
        "embed": Coefficients(11.8, None),
        "table": Coefficients(1.0, None),
        "claims": Coefficients(1.3, None),
    },
)
builtin_snapshot, restore_builtin = BUILTIN.snapshot, BUILTIN.restore


def add_builtin(family: str, fixed: float, scale: float | None) -> None:
    """Add a family's built-in coefficients (a registered study's: ``Registered.join``)."""
    BUILTIN.join(family, Coefficients(fixed, scale))


# Downloads from the Hugging Face Hub at about 10 MB/s: IMDb (84 MB) and BERT-Base (440 MB); not measured
DOWNLOAD_SECONDS = {"reviews": 30.0, "model": 60.0}


@dataclass(frozen=True)
class Calibration:
    """Coefficients per family (``fit``) over the built-in ones; ``sources``: what they were fitted on;
    ``speed``: how many times slower than the built-in machine this one runs, which stretches only the
    built-in coefficients."""

    coefficients: Mapping[str, Coefficients] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    speed: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ValueError(f"a calibration's speed factor must be a positive number, got {self.speed}")

    @classmethod
    def from_samples(
        cls, samples: Iterable[Sample], sources: Iterable[str] = (), speed: float | None = None
    ) -> Calibration:
        """The fit of ``samples``; ``speed`` None: ``measured_speed`` of the samples."""
        samples = list(samples)
        return cls(fit(samples), tuple(sources), measured_speed(samples) if speed is None else speed)

    def of(self, family: str) -> Coefficients:
        """The coefficients of ``family``: its own fit, else the built-in ones (times ``speed``) with its
        kind's fitted start-up, else its kind's pooled fit, else the built-in pooled ones; a scale not
        measured is taken from the next that has one. A step without a cost model (``rule:*``): its own
        mean time, else its built-in one, else the mean of the steps measured."""
        kind = pooled(family)
        own, fitted_kind = self.coefficients.get(family), self.coefficients.get(kind)
        built = BUILTIN[family].times(self.speed) if family in BUILTIN else None
        built_kind = BUILTIN[kind].times(self.speed) if kind in BUILTIN else None
        if own is None and built is None and fitted_kind is None and built_kind is None:
            raise LookupError(
                f"no time model for the job family {family!r} (nor its kind {kind!r}): a study's families "
                "join the built-in ones when it registers (wordsens.studies.registry.specs() loads them), "
                "a plugin study's with its StudySpec.coefficients or JobRule.coefficients"
            )
        if kind == "rule:*":
            first = next(c for c in (own, built, fitted_kind, built_kind) if c is not None)
            return Coefficients(first.fixed, None, first.count)
        start = next(c for c in (own, fitted_kind, built, built_kind) if c is not None)
        scale = next((c.scale for c in (own, built, fitted_kind, built_kind) if c and c.scale is not None), None)
        return Coefficients(start.fixed, scale, start.count)

    def seconds(self, family: str, model: float = 0.0) -> float:
        """Predicted wall seconds of one job of ``family`` with ``model`` cost-model seconds."""
        return self.of(family).predict(model)

    def to_dict(self) -> dict:
        coefficients = {k: asdict(c) for k, c in self.coefficients.items()}
        return {"sources": list(self.sources), "speed": self.speed, "coefficients": coefficients}

    @classmethod
    def from_dict(cls, data: Mapping) -> Calibration:
        coefficients = {
            str(k): Coefficients(
                float(v["fixed"]), None if v["scale"] is None else float(v["scale"]), int(v.get("count", 0))
            )
            for k, v in dict(data.get("coefficients") or {}).items()
        }
        return cls(coefficients, tuple(data.get("sources") or ()), float(data.get("speed", 1.0)))


def measured_speed(samples: Iterable[Sample]) -> float:
    """How many times slower than the built-in coefficients predict the measured jobs ran: the median
    of measured over built-in seconds (1.0 without samples)."""
    import statistics

    builtin = Calibration()
    ratios = [
        s.measured / predicted
        for s in samples
        if s.measured > 0 and math.isfinite(s.measured) and (predicted := builtin.seconds(s.family, s.model)) > 0
    ]
    return statistics.median(ratios) if ratios else 1.0


# ``wordsens.search.probe.probe_seconds()`` on the machine of ``BUILTIN``, quiet (docs/benchmarks.md), and
# the factors outside which a probe has gone wrong (a busy machine, a throttled CPU, a broken BLAS)
REFERENCE_SECONDS = 0.40
MIN_FACTOR = 0.1
MAX_FACTOR = 10.0


def speed_factor(seconds: float) -> float:
    """This machine's speed probe ``seconds`` over the built-in machine's (2: twice as slow)."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"the speed probe took {seconds} s: expected a positive time")
    factor = seconds / REFERENCE_SECONDS
    if not MIN_FACTOR <= factor <= MAX_FACTOR:
        raise ValueError(
            f"the speed probe took {seconds:.3g} s, {factor:.3g} x the built-in machine's {REFERENCE_SECONDS} s: "
            f"outside the {MIN_FACTOR}-{MAX_FACTOR} x a machine's speed can plausibly differ by (was it busy?); "
            "run it again on a quiet machine, or calibrate on a finished run (wordsens plan --calibrate RESULTS_DIR)"
        )
    return factor
