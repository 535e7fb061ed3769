"""A registered feature map, as data: ``MapSpec`` and the ``SearchSettings`` of its default search.
Everything else (CLI, config schema, costs, searches, tables, figures, claims) reads the spec; torch is
not imported, so the planner reads specs without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..compute.costs import CostModel, DenseCost, MemoryEstimate, Work


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` unless every value is a positive integer (named by its keyword)."""
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class SearchSettings:
    """Defaults of the default word-sensitivity search of a map (see ``wordsens.search.engine.ascend``)."""

    restarts: int  # starts searched as one batch
    keep: int  # restarts left after successive halvings
    patience: int  # steps over which the best value must gain ``tol``
    tol: float
    momentum: float  # weight of the previous unit step in the step direction
    polish: bool  # converge the leader tightly at the end
    dtype: str = "float64"  # working dtype of the search (the final value is always float64)
    # where the authors' whole schedule fits the step budget (their steps <= max_steps), also run their
    # algorithm and keep its best point (polished) among the candidates: the estimate is then never
    # below theirs on the same instance
    follow_authors: bool = False
    # the map is smooth in Delta (no ReLU kinks): the generalisation search of the penalised loss
    # (Figure 5) takes Levenberg-Marquardt steps (wordsens.generalisation.batched.least_squares_groups),
    # which converge there where the ascent creeps. Kinked maps keep the ascent: the ReLU's kinks break the
    # steps' linear model, and on ReLU-RAF they stop at worse local minima than the ascent's (docs/benchmarks.md,
    # "Figure 5's penalised searches by Levenberg-Marquardt steps").
    least_squares: bool = False
    # reduced-precision working dtypes the search supports (products in them, the estimate re-evaluated on
    # the float32 map): DRF's bfloat16 (wordsens.search.drf), for a GPU's tensor cores
    reduced: tuple[str, ...] = ()


# How a checkpoint map and its random counterparts are compared (wordsens.studies.trained.run): the
# samples and the perturbation ball, per convention
CONVENTIONS = {
    "paper": "rows rescaled to norm sqrt(d), a ball of radius sqrt(d) (the paper's setting)",
    "model": "the model's own rows, a ball of radius ||x_i|| around the moved row (the paper's relative radius)",
}


@dataclass(frozen=True)
class Counterpart:
    """A random map that a checkpoint map is compared with on the same samples, in one of the
    ``CONVENTIONS``; ``matches``: what it shares with the trained map (the tables' notes say it)."""

    map: str
    convention: str
    matches: str

    def __post_init__(self) -> None:
        if self.convention not in CONVENTIONS:
            known = ", ".join(CONVENTIONS)
            raise ValueError(f"counterpart {self.map!r}: unknown convention {self.convention!r} (known: {known})")


@dataclass(frozen=True)
class MapSpec:
    """One registered feature map (adding one: docs/studies.md).

    ``forward(X, weights)``: the map on ``X`` (..., n, d), without input checks. ``sample(seed, n, d, *,
    dtype, device, draw_on, **options)``: its seeded weights (a tensor, a list, or a dict of named tensors).
    ``shapes(n, d, **options)``: every named weight's shape (dict weights), or ``check(weights, n, d)``.
    ``infer_options(weights)``: the options explicit weights imply (RF's ``k``, DRF's ``L``). ``fast``: a
    ``prepare(X64, seed, weights, ctx)`` giving the fast search's problem per position (None: the full map
    with autograd, ``wordsens.search.full_map``); ``gen``: the generalisation setup (None:
    ``full_map_setup``). ``reference``, ``gen_reference``: the authors' step size and steps (an int or
    ``"50n"``). ``upper(X64, weights, position)``: a certified upper bound for the authors' method (RF).
    ``checkpoint``: weights read from (or drawn to match) a pre-trained checkpoint, with the random
    ``counterparts`` it is compared with. ``sweep``: the integer options a grid may sweep, in the order of
    the job names (``d768_n50_L2``), each a table column, the first the figures' hue. ``law(n)``: the word
    sensitivity expected at context length n (RF: ``wordsens.theory.rf_law``), drawn as ``law_label``.
    """

    name: str
    label: str
    formula: str
    weight_law: str
    forward: str | Callable[..., Any]
    sample: str | Callable[..., Any]
    settings: SearchSettings
    shapes: Callable[..., Mapping[str, tuple[int, ...]]] | None = None
    check: str | Callable[..., None] | None = None
    fast: str | Callable[..., Any] | None = None
    cost: CostModel = field(default_factory=DenseCost)
    reference: tuple[float, int | str] = (10.0, "50n")
    options: Mapping[str, Any] = field(default_factory=dict)
    output: str = "(n, d)"
    infer_options: str | Callable[..., Mapping[str, Any]] | None = None
    gen: str | Callable[..., Any] | None = None
    gen_reference: tuple[float, int | str] = (1.0, "50n")
    upper: str | Callable[..., float] | None = None
    # weights read from a pre-trained checkpoint (``sample`` loads them; the seed is unused), or drawn to
    # match one (the trained study's counterparts): ``maps: all`` of the studies leaves the map out
    checkpoint: bool = False
    counterparts: tuple[Counterpart, ...] = ()
    sweep: tuple[str, ...] = ()
    law: str | Callable[..., Any] | None = None
    law_label: str = ""  # the law's legend text (default: "<label> law")

    def __post_init__(self) -> None:
        bad = [key for key in self.sweep if not _integral_default(self.options.get(key, 0.5))]
        if bad:
            raise ValueError(
                f"map {self.name!r}: sweep names {bad}, which are not integer options of the map (its options: "
                f"{', '.join(sorted(self.options)) or 'none'}); a grid sweeps integer options only"
            )

    def swept(self, options: Mapping[str, Any] | None = None) -> dict[str, int]:
        """The values of the swept options (``sweep``) in ``options``, the defaults where absent."""
        given = options or {}
        return {key: int(given.get(key) or self.options[key]) for key in self.sweep}

    def option_values(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The map's options: its defaults updated with ``options``. Unknown keys are refused, and so
        is a value that is not a positive integer where the default is an integer (a depth, a width, a
        number of heads) or None (an integer option whose default depends on n and d, such as RF's
        width ``k``)."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"map {self.name!r} has no option {', '.join(unknown)} (its options: {known})")
        for key, value in given.items():
            default = self.options[key]
            integral = default is None or (isinstance(default, int) and not isinstance(default, bool))
            if integral and not (value is None and default is None) and not _positive_int(value):
                raise ValueError(f"map {self.name!r}: the option {key} must be a positive integer, got {value!r}")
        return {**self.options, **given}

    def reference_steps(self, n: int) -> int:
        """Steps of the authors' word-sensitivity schedule at context length ``n``."""
        return _steps(self.reference[1], n)

    def gen_reference_steps(self, n: int) -> int:
        """Steps of the authors' generalisation schedule at context length ``n``."""
        return _steps(self.gen_reference[1], n)

    # the cost model, asked with this map's options (resolved against its defaults)
    def work(self, n: int, d: int, options: Mapping[str, Any] | None = None, **kwargs: Any) -> Work:
        """A question to the map's cost model (``wordsens.compute.costs.Work``) with its options resolved."""
        return Work(n, d, self.option_values(options), **kwargs)

    def ws_memory(self, n: int, d: int, options: Mapping[str, Any] | None = None, **kwargs: Any) -> MemoryEstimate:
        """Peak array memory of one word-sensitivity estimate (``CostModel.ws_memory``)."""
        return self.cost.ws_memory(self, self.work(n, d, options, **kwargs))

    def ws_seconds(
        self, n: int, d: int, options: Mapping[str, Any] | None = None, *, positions: int = 1, **kwargs: Any
    ) -> float:
        """Rough wall time of one estimate searching ``positions`` positions (``CostModel.ws_seconds``)."""
        return self.cost.ws_seconds(self, self.work(n, d, options, **kwargs)) * positions

    def gen_memory(
        self, n: int, d: int, N: int, options: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> MemoryEstimate:
        """Peak array memory of one generalisation simulation (``CostModel.gen_memory``)."""
        return self.cost.gen_memory(self, self.work(n, d, options, N=N, **kwargs))

    def gen_seconds(self, n: int, d: int, N: int, options: Mapping[str, Any] | None = None, **kwargs: Any) -> float:
        """Rough CPU wall time of one generalisation simulation (``CostModel.gen_seconds``)."""
        return self.cost.gen_seconds(self, self.work(n, d, options, N=N, **kwargs))

    def choose_sampler(self, **kwargs: Any) -> str:
        """How the weights of one word-sensitivity estimate are drawn (``CostModel.choose_sampler``)."""
        return self.cost.choose_sampler(**kwargs)

    def weight_count(self, n: int, d: int, options: Mapping[str, Any] | None = None) -> int:
        """Number of weights (for memory estimates); dense maps with ``shapes`` only."""
        if self.shapes is None:
            return d * d
        return sum(math.prod(shape) for shape in self.shapes(n, d, **self.option_values(options)).values())


def _steps(steps: int | str, n: int) -> int:
    return 50 * n if steps == "50n" else int(steps)


def _integral_default(value: Any) -> bool:
    """An option whose default is a whole number (a depth, a width): one a grid may sweep."""
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
