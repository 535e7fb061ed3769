"""A registered feature map, as data: ``MapSpec`` and the ``SearchSettings`` of its default search.

Torch is not imported: the planner reads specs (names, options, shapes, cost models) without it.
Implementations are named as ``"module:attribute"`` strings (``wordsens.maps.registry.resolve``
imports them when used) or given as callables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MapSpec", "SearchSettings"]


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


@dataclass(frozen=True)
class MapSpec:
    """One registered feature map.

    ``forward(X, weights)``: the map on ``X`` of shape ``(..., n, d)`` (leading batch dimensions
    allowed), without input checks. ``sample(seed, n, d, *, dtype, device, draw_on, **options)``: its
    i.i.d. Gaussian weights, seeded (a tensor, a list, or a dict of named tensors). ``shapes(n, d,
    **options)``: the shape of every named weight (maps whose weights are a dict; ``check`` then
    follows from it), or ``check(weights, n, d)`` for other formats. ``fast``: a ``prepare(X64, seed,
    weights, ctx)`` returning, per position, the problem of the fast search (``wordsens.search``); None
    searches the full map with autograd (``wordsens.search.full_map``). ``cost``: the resource model
    (``"rf"``, ``"drf"``, ``"attention"``, or ``"dense"``: a few copies of every weight and of
    (n, n) and (n, d) arrays per restart); ``cost_scale`` multiplies its time. ``reference``: the
    authors' schedule for this map: step size and number of steps (an int, or ``"50n"``).
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
    cost: str = "dense"
    cost_scale: float = 1.0
    reference: tuple[float, int | str] = (10.0, "50n")
    options: Mapping[str, Any] = field(default_factory=dict)
    output: str = "(n, d)"

    def option_values(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The map's options: its defaults updated with ``options`` (unknown keys refused)."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"map {self.name!r} has no option {', '.join(unknown)} (its options: {known})")
        return {**self.options, **given}

    def reference_steps(self, n: int) -> int:
        """Steps of the authors' schedule at context length ``n``."""
        steps = self.reference[1]
        return 50 * n if steps == "50n" else int(steps)

    def weight_count(self, n: int, d: int, options: Mapping[str, Any] | None = None) -> int:
        """Number of weights (for memory estimates); dense maps with ``shapes`` only."""
        if self.shapes is None:
            return d * d
        return sum(math.prod(shape) for shape in self.shapes(n, d, **self.option_values(options)).values())
