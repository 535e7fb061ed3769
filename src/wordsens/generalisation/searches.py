"""The Delta searches of a generalisation simulation (``search_many``, ``search``, ``simulate``) and their
results (``GenResult``), on a ``wordsens.generalisation.core.Setup``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from ..search.engine import feasible
from ..seeds import derive_seed, generator
from .batched import Stopping, ascend_groups, least_squares_groups
from .core import LOSSES, TRAININGS, Setup, prepare

Tensor = torch.Tensor


@dataclass
class GenResult:
    """One Delta search of a simulation: ``alignment`` and ``d0_shift = |D0 - t0|`` tell whether a small Err
    separates the two sentences or moves the first-stage prediction; ``gram_*``, ``train_residual`` and
    ``interpolates``: the ``Fit``; ``pphi_ratio`` (``||P phi|| / ||phi||``): the authors' algorithm's only."""

    map: str
    training: str
    loss: str
    penalty: float
    method: str
    y: float
    t0: float
    t1: float
    D0: float
    D1: float
    err: float
    gamma_min: float
    alignment: float
    d0_shift: float
    gram_cond: float
    gram_rank: int
    train_residual: float
    interpolates: bool
    delta_norm: float
    steps: int
    seconds: float
    delta: Tensor = field(repr=False)
    pphi_ratio: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("delta")
        if out["pphi_ratio"] is None:
            out.pop("pphi_ratio")
        return out


@dataclass(frozen=True)
class _Search:
    training: str
    loss: str
    penalty: float


def _check_search(training: str, loss: str, penalty: float) -> None:
    if training not in TRAININGS:
        raise ValueError(f"unknown training {training!r}; choose one of {', '.join(TRAININGS)}")
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    if not (isinstance(penalty, (int, float)) and math.isfinite(penalty) and penalty >= 0):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty!r}")


def search(setup: Setup, training: str, loss: str, *, penalty: float = 0.0, **options: Any) -> GenResult:
    """The search of ``Delta`` (token ``setup.position``) minimising ``loss``: ``"surrogate"`` (the label flip
    the features predict), ``"direct"`` (``Err``) or ``"penalised"`` (``Err + penalty * D0^2``)."""
    return search_many(setup, [(training, loss, penalty)], **options)[0]


def search_many(
    setup: Setup,
    searches: Sequence[tuple[str, str, float]],
    *,
    seed: int = 0,
    restarts: int = 16,
    max_steps: int = 500,
    tol: float = 1e-6,
    patience: int = 30,
    radius: float | None = None,
) -> list[GenResult]:
    """``search`` for every ``(training, loss, penalty)`` of ``searches``, run together: each keeps its own
    starts, loss, halving and stopping, but every step evaluates all of them in one batched call
    (``batched.ascend_groups``; the penalised searches of ``Setup.least_squares`` maps by
    ``batched.least_squares_groups``). ``radius``: of the ball (None: ``sqrt(d)``; the starts are scaled to
    it); each result's ``seconds`` is an equal share of the whole."""
    for training, loss, penalty in searches:
        _check_search(training, loss, penalty)
    if radius is not None and (
        isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0 < radius < math.inf
    ):
        raise ValueError(f"radius must be a positive finite number (None: sqrt(d)), got {radius!r}")
    if not searches:
        return []
    started = time.perf_counter()
    problems = [_Search(t, loss, float(p)) for t, loss, p in searches]
    scale = 1.0 if radius is None else float(radius) / math.sqrt(setup.d)
    gens = [generator(derive_seed(seed, "gen-search", pr.training, pr.loss, pr.penalty)) for pr in problems]
    starts = [scale * setup.functionals.starts(restarts, gen) for gen in gens]
    radius = math.sqrt(setup.d) if radius is None else float(radius)
    objective = _Objective(setup, problems)
    dtype = setup.functionals.dtype
    lsq = [g for g, pr in enumerate(problems) if pr.loss == "penalised" and setup.least_squares]
    asc = [g for g, pr in enumerate(problems) if g not in lsq]
    found: list[tuple[Tensor, int]] = [(torch.empty(0), 0)] * len(problems)
    stop = Stopping(max_steps, tol, patience, keep=min(8, restarts))
    if asc:
        climbed = ascend_groups(
            lambda D, group: objective.value_and_grad(D, torch.tensor(asc, device=group.device)[group]),
            [starts[g].to(dtype) for g in asc],
            radius,
            stop,
            momentum=setup.momentum,
        )
        for g, res in zip(asc, climbed, strict=True):
            found[g] = res
    if lsq:
        forms = [setup.residuals(problems[g].training, problems[g].loss, problems[g].penalty) for g in lsq]
        L, b = zip(*forms, strict=True)
        descended = least_squares_groups(objective.vjp, L, b, [starts[g].to(dtype) for g in lsq], radius, stop)
        for g, res in zip(lsq, descended, strict=True):
            found[g] = res
    return _best_results(objective, found, radius, started)


class _Objective:
    """The searches of one simulation as one batched objective: each row of a batch is scored by the loss of
    its own search (``group``: its index in ``problems``)."""

    def __init__(self, setup: Setup, problems: list[_Search]) -> None:
        self.setup = setup
        self.problems = problems

    def losses(self, f: Tensor, group: Tensor) -> Tensor:
        """Minus each row's own loss (the ascent maximises)."""
        out = torch.zeros_like(f[..., 0])
        for g, pr in enumerate(self.problems):
            out = torch.where(group == g, -self.setup.loss(f, pr.training, pr.loss, pr.penalty), out)
        return out

    def outer(self, f: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:
        """``losses`` and its derivative with respect to ``f``."""
        g = torch.zeros_like(f)
        for k, pr in enumerate(self.problems):
            g = torch.where((group == k)[:, None], -self.setup.loss_grad(f, pr.training, pr.loss, pr.penalty), g)
        return self.losses(f, group), g

    def value_and_grad(self, D: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:
        """``losses`` at ``D`` and its gradient in ``D`` (written out where the functionals have it)."""
        functionals = self.setup.functionals
        if hasattr(functionals, "value_and_grad"):  # written out (attention maps)
            return functionals.value_and_grad(D, lambda f: self.outer(f, group))
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.losses(functionals(D), group)
            (grad,) = torch.autograd.grad(val.sum(), D)
        return val.detach(), grad

    def vjp(self, D: Tensor, G: Tensor) -> tuple[Tensor, Tensor]:
        """The functionals ``f(D)`` and ``sum_k G_k grad f_k`` (the Levenberg-Marquardt steps' products)."""
        functionals = self.setup.functionals
        if hasattr(functionals, "value_and_grad"):  # written out (attention maps)
            seen: list[Tensor] = []

            def outer(f: Tensor) -> tuple[Tensor, Tensor]:
                seen.append(f)
                return f[:, 0], G

            grad = functionals.value_and_grad(D, outer)[1]
            return seen[0], grad
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            f = functionals(D)
            (grad,) = torch.autograd.grad((f * G).sum(), D)
        return f.detach(), grad


def _best_results(
    objective: _Objective, found: list[tuple[Tensor, int]], radius: float, started: float
) -> list[GenResult]:
    """Each search's result: its best of the points ``found``, all re-evaluated together in float64."""
    setup, problems = objective.setup, objective.problems
    deltas = [torch.stack([feasible(D, radius) for D in rows]) for rows, _ in found]
    group = torch.cat([torch.full((x.shape[0],), g, dtype=torch.int64) for g, x in enumerate(deltas)])
    with torch.no_grad():
        F = setup.functionals.exact(torch.cat(deltas))  # (rows, 3), float64
    values = objective.losses(F, group.to(F.device))
    seconds = (time.perf_counter() - started) / len(problems)
    out = []
    for g, pr in enumerate(problems):
        rows = (group == g).nonzero()[:, 0].to(F.device)
        best = int(rows[int(torch.argmax(values[rows]))])
        out.append(_result(setup, pr, F[best], torch.cat(deltas)[best], found[g][1], seconds))
    return out


def _result(setup: Setup, pr: _Search, f: Tensor, delta: Tensor, steps: int, seconds: float) -> GenResult:
    fit = setup.fit
    return GenResult(
        map=setup.map_name,
        training=pr.training,
        loss=pr.loss,
        penalty=pr.penalty,
        method="default",
        y=setup.y,
        t0=setup.t0,
        t1=setup.t1(pr.training),
        **setup.summary(f, pr.training),
        gram_cond=fit.cond,
        gram_rank=fit.rank,
        train_residual=fit.residual,
        interpolates=fit.interpolates,
        delta_norm=float(torch.linalg.vector_norm(delta)),
        steps=steps,
        seconds=seconds,
        delta=delta.cpu(),
    )


def simulate(*task: Any, seed: int, searches: Sequence[tuple[str, str, float]], **kwargs: Any) -> list[GenResult]:
    """``prepare(*task, seed=seed, **kwargs)`` (``task``: the map's name, ``X_train``, ``y_train``, ``X``, ``y``),
    then ``search_many``; each result's ``seconds`` includes an equal share of the setup's."""
    setup = prepare(*task, seed=seed, **kwargs)
    out = search_many(setup, searches, seed=seed)
    for res in out:
        res.seconds += setup.seconds / len(searches)
    return out
