"""Word-sensitivity estimates (``estimate``, ``WSResult``): the largest relative change
``||phi(X^i(Delta)) - phi(X)|| / ||phi(X)||`` over moves ``||Delta|| <= sqrt(d)`` of one row, bounded below by
a search (``lower``) and, for RF, above by a certificate (``upper``). ``method="reference"`` runs the authors'
algorithm (``wordsens.search.reference``), ``"default"`` the batched ascent on each map's cheap equivalent form
(``MapSpec.fast``), its ``lower`` re-evaluated in float64 with the plain map (docs/methods.md, "Word
sensitivity: the default search").
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .. import maps
from ..compute.devices import check_fits, memory_budget, resolve_device
from ..maps import registry
from ..maps.api import spec_of
from ..maps.spec import MapSpec, check_positive
from ..seeds import derive_seed, generator
from . import full_map, reference
from .engine import Search, SearchContext, feasible

Tensor = torch.Tensor


METHODS = ("default", "reference")


@dataclass
class WSResult:
    """One word-sensitivity estimate; ``lower`` and ``upper`` are relative changes."""

    map: str
    method: str
    n: int
    d: int
    position: int
    lower: float
    upper: float | None
    delta: Tensor = field(repr=False)
    delta_norm: float
    phi_norm: float
    steps: int
    seconds: float
    sampler: str
    restarts: int
    device: str
    dtype: str
    options: dict[str, Any] = field(default_factory=dict)  # the map's options (depth L, width k, heads, ...)
    weights_drawn_on: str = "cpu"  # where large weight blocks were drawn ("cpu" or "cuda"; CostModel.draws_on_device)
    streamed_layers: int | None = None  # maps that stream layers (DRF): tail layers regenerated on every pass
    profile: list[float] | None = None  # position "all": the estimate at every position
    radius: float | None = None  # the ball's radius (sqrt(d) unless set)

    def as_dict(self) -> dict[str, Any]:
        """All fields but ``delta``, as plain JSON-able values."""
        out = asdict(self)
        out.pop("delta")
        return out


# --------------------------------------------------------------------------- entry point


def estimate(
    map_name: str,
    X: Tensor,
    *,
    seed: int,
    position: int | str = 0,
    weights: Any = None,
    method: str = "default",
    options: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "auto",
    sampler: str = "auto",
    restarts: int | None = None,
    max_steps: int = 1000,
    tol: float | None = None,
    patience: int | None = None,
    max_memory_gb: float | None = None,
    draw_on: str = "device",
    radius: float | None = None,
) -> WSResult:
    """Estimate the word sensitivity of ``map_name`` (a registered map: ``wordsens maps``) at ``X`` (n, d).

    Args:
        seed: seeds the weights (when ``weights`` is None) and the search.
        position: the moved row, or ``"all"`` (the sup over every position; ``profile`` holds each).
        weights: explicit weights in the map's format; they imply some options (``MapSpec.infer_options``).
        method: ``"default"`` (the fast search) or ``"reference"`` (the authors' algorithm).
        options: the map's options (e.g. ``{"L": 4}`` for DRF's depth, ``{"k": 1000}`` for RF's width).
        dtype: working dtype of the default search (None: the map's).
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
        sampler: how RF/DRF weights are drawn: ``"exact"`` (only the moved token's block, the rest of the
            first layer's pre-activation from its exact law; one position), ``"blockwise"`` (the numbers of
            ``"dense"``, one block at a time), ``"dense"``; ``"auto"``: exact for one position, blockwise for
            ``"all"``, dense for given ``weights``.
        restarts, max_steps, tol, patience: the default search's starts, step cap and stopping rule (a gain
            below ``tol``, relative, in ``patience`` steps); None: the map's ``SearchSettings``.
        max_memory_gb: peak array memory allowed (None: what the device has free); DRF streams the tail
            layers that do not fit (``wordsens.search.drf``), the other maps are only checked against it.
        draw_on: where RF/DRF blocks bound for a GPU are drawn: ``"device"`` (fast, equal in law to the CPU's)
            or ``"cpu"`` (the numbers of a CPU run).
        radius: of the ball of moves (None: ``sqrt(d)``); the default method only. RF's ``upper`` is at it.

    Raises:
        ValueError: bad map, shapes, NaN/Inf, position, method or options.
        InsufficientResources: the job cannot fit the device's memory.
    """
    spec = registry.get(map_name)  # resolved once: the spec travels down from here
    settings = spec.settings
    patience = settings.patience if patience is None else patience
    tol = settings.tol if tol is None else tol
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}")
    check_positive(max_steps=max_steps, patience=patience)
    if not seed == int(seed):
        raise ValueError(f"seed must be an int, got {seed!r}")
    seed = int(seed)
    _, ctx = search_context(
        spec,
        X,
        position=position,
        weights=weights,
        method=method,
        options=options,
        dtype=dtype,
        device=device,
        sampler=sampler,
        restarts=restarts,
        max_memory_gb=max_memory_gb,
        draw_on=draw_on,
    )
    n, d = X.shape
    positions = list(range(n)) if position == "all" else [int(position)]
    radius = _radius(radius, d, method)
    values, sampler, dtype, dev = ctx.options, ctx.sampler, ctx.dtype, ctx.device
    X64 = X.detach().to(torch.float64)
    started = time.perf_counter()
    if method == "reference":
        result = reference.ws_estimate(spec, X64, seed, positions, weights, ctx)
    else:
        result = _run_default(
            spec, X64, seed, positions, weights, ctx, max_steps=max_steps, tol=tol, patience=patience, radius=radius
        )
    return WSResult(
        map=map_name,
        method=method,
        n=n,
        d=d,
        position=result.position,
        lower=result.change / result.phi_norm if result.phi_norm > 0 else 0.0,
        upper=result.upper,
        delta=result.delta.cpu(),
        delta_norm=float(torch.linalg.vector_norm(result.delta)),
        phi_norm=result.phi_norm,
        steps=result.steps,
        seconds=time.perf_counter() - started,
        sampler=sampler,
        restarts=1 if method == "reference" else ctx.restarts,
        device=str(dev),
        dtype=str(torch.float64 if method == "reference" else dtype).replace("torch.", ""),
        options=values,
        weights_drawn_on=maps.drawn_on(dev, draw_on) if spec.cost.draws_on_device and weights is None else "cpu",
        streamed_layers=result.streamed if spec.cost.streams_layers else None,
        profile=result.profile if position == "all" else None,
        radius=math.sqrt(d) if radius is None else float(radius),
    )


def search_context(
    map_: str | MapSpec,
    X: Tensor,
    *,
    position: int | str = 0,
    weights: Any = None,
    method: str = "default",
    options: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "auto",
    sampler: str = "auto",
    restarts: int | None = None,
    max_memory_gb: float | None = None,
    draw_on: str = "device",
) -> tuple[MapSpec, SearchContext]:
    """The map's spec (from its name, or the spec itself) and the ``SearchContext`` of a search at ``X``
    (n, d), after ``estimate``'s checks of its arguments (same meaning) and of the search's memory."""
    spec = spec_of(map_)
    n, d = maps.check_sample(X)
    if X.ndim != 2:
        raise ValueError(f"X must be one sample of shape (n, d), got {tuple(X.shape)}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    settings = spec.settings
    restarts = settings.restarts if restarts is None else restarts
    check_positive(restarts=restarts)
    if not (position == "all" or (isinstance(position, int) and not isinstance(position, bool) and 0 <= position < n)):
        raise ValueError(f"position must be a token index in [0, {n - 1}] or 'all', got {position!r}")
    values = spec.option_values(options)
    if weights is not None:
        maps.check_weights(spec, weights, n, d, values)
        if spec.infer_options is not None:
            values.update(registry.resolve(spec.infer_options)(weights))
    dev = resolve_device(device)
    if dtype is not None and dtype in (torch.bfloat16, torch.float16):
        name = str(dtype).replace("torch.", "")
        if name not in settings.reduced or method == "reference":
            allowed = f"its search supports {', '.join(settings.reduced)}" if settings.reduced else "it has none"
            raise ValueError(
                f"dtype {name}: the {spec.name} search does not run in reduced precision ({allowed}; the reference "
                "method is float64); use float32 or float64"
            )
    if dtype is None:
        dtype = torch.float64 if method == "reference" else getattr(torch, settings.dtype)
    sampler = spec.choose_sampler(
        position=position, method=method, sampler=sampler, explicit_weights=weights is not None
    )
    if draw_on not in maps.DRAW_ON:
        raise ValueError(f"draw_on must be one of {', '.join(maps.DRAW_ON)}, got {draw_on!r}")
    budget = memory_budget(dev, max_memory_gb)
    shown = ", ".join(f"{key} = {value}" for key, value in values.items() if value is not None)
    what = f"word sensitivity of {spec.name} at n = {n}, d = {d}" + (f" ({shown})" if shown else "")
    need = spec.ws_memory(n, d, values, method=method, sampler=sampler, dtype=dtype, restarts=restarts, budget=budget)
    check_fits(need, dev, what, limit=budget)
    ctx = SearchContext(
        spec=spec,
        dtype=dtype,
        device=dev,
        sampler=sampler,
        draw_on=draw_on,
        budget=budget,
        restarts=restarts,
        options=values,
    )
    return spec, ctx


def _radius(radius: float | None, d: int, method: str) -> float | None:
    """The ball's radius of a search: None for the paper's ``sqrt(d)`` (also where ``radius`` is it), else
    another positive number, for the default method only."""
    if radius is None:
        return None
    if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not radius > 0:
        raise ValueError(f"radius must be a positive number (None: sqrt(d)), got {radius!r}")
    if float(radius) == math.sqrt(d):
        return None  # the paper's ball: the default search as it is
    if method == "reference":
        raise ValueError(
            f"the reference method searches the ball of radius sqrt(d) = {math.sqrt(d):.6g}, got radius = {radius!r}: "
            "use method='default' for another radius"
        )
    return float(radius)


def _authors_point(
    spec: MapSpec, X64: Tensor, seed: int, position: int, weights: Any, ctx: SearchContext
) -> tuple[Tensor, int]:
    """The best point (1, d), float64, of the authors' algorithm (the numbers of ``method="reference"``), and
    its steps."""
    n, d = X64.shape
    if weights is None:
        weights = maps.sample_weights(spec, seed, n, d, dtype=torch.float64, **ctx.options)
    delta, _, taken = reference.ws_search(
        spec, X64, full_map.cast_weights(weights, torch.float64, X64.device), position, seed
    )
    return delta[None].to(device=ctx.device), taken


def _run_default(
    spec: MapSpec,
    X64: Tensor,
    seed: int,
    positions: list[int],
    weights: Any,
    ctx: SearchContext,
    *,
    max_steps: int,
    tol: float,
    patience: int,
    radius: float | None = None,
) -> Search:
    """The default search at every position of ``positions``; a ``radius`` (None: ``sqrt(d)``) replaces the
    problems' own and leaves the authors' algorithm (a search of the ``sqrt(d)`` ball) out."""
    settings = spec.settings
    keep = min(settings.keep, ctx.restarts)
    prepare = registry.resolve(spec.fast) if spec.fast is not None else full_map.prepare
    problem_at = prepare(X64, seed, weights, ctx)
    best: Search | None = None
    total_steps = 0
    upper_max: float | None = None
    profile: list[float] = []
    for pos in positions:
        problem = problem_at(pos)
        if radius is not None:
            problem.radius = float(radius)
        gen = generator(derive_seed(seed, "search", pos))
        starts = problem.starts(ctx.restarts, gen).to(device=ctx.device, dtype=ctx.dtype)
        best_D, steps = problem.search(
            starts, max_steps=max_steps, tol=tol, patience=patience, keep=keep, momentum=settings.momentum
        )
        best_D = best_D.to(torch.float64)
        total_steps += steps
        to_polish: list[Tensor] = []
        if settings.polish and steps < max_steps:
            # the leader, converged tightly: a tie with another algorithm's local maximum is not lost to
            # a loose stopping rule
            with torch.no_grad():
                lead = int(torch.argmax(problem.value(best_D.to(ctx.dtype))))
            to_polish.append(best_D[lead : lead + 1])
        if settings.follow_authors and radius is None and spec.reference_steps(X64.shape[0]) <= max_steps:
            # the authors' whole schedule fits the step budget: their best point is a candidate too, so
            # the estimate cannot end below theirs
            point, extra = _authors_point(spec, X64, seed, pos, weights, ctx)
            best_D = torch.cat([best_D, point])
            total_steps += extra
            to_polish.append(point)
        for point in to_polish:
            polished, extra = problem.polish(
                point.to(ctx.dtype), max_steps=min(problem.polish_steps, max_steps), momentum=settings.momentum
            )
            best_D = torch.cat([best_D, polished.to(torch.float64)])
            total_steps += extra
        deltas = torch.stack([feasible(D, problem.radius) for D in best_D])
        j, change = problem.select(deltas)
        upper = problem.upper()
        if upper is not None:
            upper_max = upper if upper_max is None else max(upper_max, upper)
        rel = change / problem.phi_norm if problem.phi_norm > 0 else 0.0
        if best is None or rel > max(profile):
            best = Search(pos, deltas[j], change, problem.phi_norm, streamed=problem.streamed_layers)
        profile.append(rel)
        del problem
    assert best is not None
    best.upper, best.steps, best.profile = upper_max, total_steps, profile
    return best
