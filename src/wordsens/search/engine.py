"""The search engine shared by every word-sensitivity and generalisation search: a ``Problem`` (a batched,
differentiable ``value`` of the move ``Delta`` of one token over the ball of radius ``sqrt(d)``, its ``exact``
float64 evaluation and informed ``starts``) and ``ascend``, which maximises it (docs/methods.md, "Word
sensitivity: the default search").
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..maps.spec import MapSpec

Tensor = torch.Tensor


# Ascent settings (see ascend), chosen on synthetic RAF and ReLU-RAF instances against the
# reference method (benchmarks/bench_ws.py).
ETA0, ETA_MAX = 0.5, 64.0
HALVE_EVERY = 10
CHUNK_BYTES = 4 * 1024**2  # float64 chunk size of exact evaluations and Gram matrices


@dataclass
class Search:
    """What a word-sensitivity search found: the maximising position, its Delta (float64), the change
    ``||phi(X^i(Delta)) - phi(X)||``, ``||phi(X)||``, RF's certified bound, the steps, DRF's streamed layers and
    the relative change at every position searched."""

    position: int
    delta: Tensor
    change: float
    phi_norm: float
    upper: float | None = None
    steps: int = 0
    streamed: int = 0
    profile: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class SearchContext:
    """What a map's ``prepare`` (``MapSpec.fast``) needs besides the sample, seed and weights (``budget``:
    bytes, None for no limit)."""

    spec: MapSpec
    dtype: torch.dtype
    device: torch.device
    sampler: str = "dense"
    draw_on: str = "device"
    budget: int | None = None
    restarts: int = 1
    options: dict[str, Any] = field(default_factory=dict)


class Problem(abc.ABC):
    """The search problem at one position: value (differentiable, batched) and exact value."""

    radius: float
    phi_norm: float
    d: int

    @abc.abstractmethod
    def value(self, D: Tensor) -> Tensor:
        """Squared change ``||phi(X^i(D_r)) - phi(X)||^2`` for each row ``D_r`` of ``D`` (R, d)."""

    @abc.abstractmethod
    def exact(self, deltas: Tensor) -> Tensor:
        """Change norms for float64 ``deltas`` (R, d), evaluated in float64 with the plain formula."""

    @abc.abstractmethod
    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        """``restarts`` starting points (R, d) in the ball."""

    def value_and_grad(self, D: Tensor) -> tuple[Tensor, Tensor]:
        """``value(D)`` and its gradient with respect to ``D`` (autograd unless overridden)."""
        D = D.detach().requires_grad_(True)
        with torch.enable_grad():
            val = self.value(D)
            (grad,) = torch.autograd.grad(val.sum(), D)
        return val.detach(), grad

    def search(
        self, starts: Tensor, *, max_steps: int, tol: float, patience: int, keep: int, momentum: float
    ) -> tuple[Tensor, int]:
        """The default search from ``starts``: ``ascend`` unless a problem knows better."""
        return ascend(self, starts, max_steps=max_steps, tol=tol, patience=patience, keep=keep, momentum=momentum)

    polish_steps: int = 300  # the step cap of ``polish``

    def polish(self, D: Tensor, *, max_steps: int, momentum: float) -> tuple[Tensor, int]:
        """The point ``D`` (1, d, working dtype) converged tightly by ``ascend`` (relative gains down to 1e-12):
        a tie with another algorithm's local maximum is not lost to a loose stopping rule. Returns the point
        (float64) and the steps taken."""
        D, steps = ascend(self, D, max_steps=max_steps, tol=1e-12, patience=10, keep=1, momentum=momentum, eta_min=1e-9)
        return D.to(torch.float64), steps

    def upper(self) -> float | None:
        """A certified upper bound on the relative change, where the problem has one."""
        return None

    def select(self, deltas: Tensor) -> tuple[int, float]:
        """The index of the best of ``deltas`` (float64, (R, d)) and its exact change norm."""
        with torch.no_grad():
            changes = self.exact(deltas)
        j = int(torch.argmax(changes))
        return j, float(changes[j])

    streamed_layers: int = 0  # DRF: tail layers regenerated on every pass (wordsens.search.drf)

    def screener(self, seed: int) -> Callable[[Tensor], Tensor] | None:
        """A batched score of moves ``D`` (R, d) that ranks them nearly as ``value`` does, cheaper, for a
        vocabulary screen (``wordsens.search.swaps``; random draws seeded with ``seed``). None: the screen
        uses the first-order score (``wordsens.search.swaps.first_order_gram``)."""
        return None


def chunked_rows64(M: Tensor, fn: Callable[[slice, Tensor], None]) -> None:
    """Call ``fn(rows, M[rows] as float64)`` over row chunks of at most ``CHUNK_BYTES``."""
    step = max(1, CHUNK_BYTES // (8 * M.shape[1]))
    for start in range(0, M.shape[0], step):
        fn(slice(start, start + step), M[start : start + step].to(torch.float64))


def chunked_values(
    fn: Callable[[Tensor], Tensor], moves: Tensor, chunk: int, dtype: torch.dtype, device: Any, columns: int = 0
) -> Tensor:
    """``fn`` of every move (rows of ``moves``, float64 CPU), ``chunk`` at a time in ``dtype`` on ``device``,
    without autograd: (V,) or, with ``columns``, (V, columns), float64 on the CPU."""
    out = torch.empty((moves.shape[0], columns) if columns else moves.shape[0], dtype=torch.float64)
    with torch.no_grad():
        for start in range(0, moves.shape[0], chunk):
            part = moves[start : start + chunk].to(device=device, dtype=dtype)
            out[start : start + part.shape[0]] = fn(part).to(device="cpu", dtype=torch.float64)
    return out


def matvec64(M: Tensor, x: Tensor) -> Tensor:
    """``M @ x`` accumulated in float64 over row chunks of ``M`` (any dtype)."""
    out = torch.empty(M.shape[0], dtype=torch.float64, device=M.device)

    def fill(rows: slice, chunk: Tensor) -> None:
        out[rows] = chunk @ x

    chunked_rows64(M, fill)
    return out


def sphere(restarts: int, d: int, radius: float, gen: torch.Generator) -> Tensor:
    """``restarts`` uniform points of the sphere of ``radius`` in R^d (float64, CPU)."""
    G = torch.randn((restarts, d), generator=gen, dtype=torch.float64)
    return G * (radius / torch.linalg.vector_norm(G, dim=-1, keepdim=True))


def unit_rows(dirs: Tensor) -> Tensor:
    """Non-zero rows of ``dirs`` scaled to norm 1 (float64, CPU)."""
    dirs = dirs.to(device="cpu", dtype=torch.float64)
    norms = torch.linalg.vector_norm(dirs, dim=-1, keepdim=True)
    keep = norms[:, 0] > 1e-12 * norms.max().clamp_min(1e-300)
    return (dirs / norms.clamp_min(1e-300))[keep]


def informed_starts(informed: Tensor, radius: float, restarts: int, gen: torch.Generator) -> Tensor:
    """Starts (float64, CPU) from unit directions ``informed`` (m, d): those directions on the sphere, the
    reference's jittered start ``0.1 N(0, I)``, random mixtures of informed and random directions, sphere points."""
    d = informed.shape[1]
    jitter = 0.1 * torch.randn((1, d), generator=gen, dtype=torch.float64)
    fixed = torch.cat([radius * informed, jitter])[:restarts]
    rest = max(restarts - fixed.shape[0], 0)
    mixed = rest // 2
    G = torch.randn((mixed, d), generator=gen, dtype=torch.float64)
    G = G / torch.linalg.vector_norm(G, dim=-1, keepdim=True)
    coef = torch.rand((mixed, informed.shape[0]), generator=gen, dtype=torch.float64)
    M = 1.5 * coef @ informed + G
    M = M * (radius / torch.linalg.vector_norm(M, dim=-1, keepdim=True))
    return torch.cat([fixed, M, sphere(rest - mixed, d, radius, gen)])


def project(D: Tensor, radius: float) -> Tensor:
    """Each row of ``D`` projected on the ball of ``radius``."""
    norm = torch.linalg.vector_norm(D, dim=-1, keepdim=True)
    return D * torch.clamp(radius / norm.clamp_min(1e-30), max=1.0)


def feasible(delta: Tensor, radius: float) -> Tensor:
    """``delta`` in float64, shrunk by a hair where rounding put it outside the ball."""
    delta = delta.to(torch.float64)
    norm = float(torch.linalg.vector_norm(delta))
    if norm > radius:
        delta = delta * (radius / norm * (1 - 1e-12))
    return delta


def ascend(
    problem: Problem,
    starts: Tensor,
    *,
    max_steps: int,
    tol: float,
    patience: int,
    keep: int,
    momentum: float,
    eta_min: float = 1e-4,
) -> tuple[Tensor, int]:
    """Projected normalised-gradient ascent from every start (``ascent_step``); returns the point reached by
    each survivor and the steps. Every ``HALVE_EVERY`` steps the worse half is dropped down to ``keep``; it
    stops when the best value gains less than ``tol`` (relative) in ``patience`` steps, when every step size
    is below ``eta_min``, or after ``max_steps``."""
    r = problem.radius
    D = project(starts, r)
    val, grad = problem.value_and_grad(D)
    eta = torch.full_like(val, ETA0)
    mom = torch.zeros_like(D)
    history = [float(val.max())]
    steps = 0
    while steps < max_steps:
        D, val, grad, eta, mom = ascent_step(problem.value_and_grad, D, val, grad, eta, mom, r, momentum)
        steps += 1
        history.append(float(val.max()))
        if steps % HALVE_EVERY == 0 and val.shape[0] > keep:
            survivors = torch.argsort(val, descending=True)[: max(keep, val.shape[0] // 2)]
            D, val, grad, eta, mom = D[survivors], val[survivors], grad[survivors], eta[survivors], mom[survivors]
        if bool((eta < eta_min).all()):
            break
        if len(history) > patience:
            old, new = history[-patience - 1], history[-1]
            if new - old <= tol * max(abs(new), 1e-30):
                break
    return D, steps


def ascent_step(
    value_and_grad: Callable[..., tuple[Tensor, Tensor]],
    D: Tensor,
    val: Tensor,
    grad: Tensor,
    eta: Tensor,
    mom: Tensor,
    radius: float,
    momentum: float,
    *args: Tensor,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One step of ``ascend`` for every row of ``D`` (values and gradients: ``value_and_grad(D, *args)``): the
    new ``(D, val, grad, eta, mom)``. A row moves by ``eta * radius`` along its normalised gradient plus
    ``momentum`` times its previous unit step (which follows ridges), projected on the ball; ``eta`` doubles (up
    to ``ETA_MAX``) after a gain and halves after a loss, which is rejected."""
    direction = grad / torch.linalg.vector_norm(grad, dim=-1, keepdim=True).clamp_min(1e-30) + momentum * mom
    direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True).clamp_min(1e-30)
    cand = project(D + (eta * radius)[:, None] * direction, radius)
    cval, cgrad = value_and_grad(cand, *args)
    ok = torch.isfinite(cval) & (cval >= val)
    moved = cand - D
    moved = moved / torch.linalg.vector_norm(moved, dim=-1, keepdim=True).clamp_min(1e-30)
    mom = torch.where(ok[:, None], moved, torch.zeros_like(mom))
    D = torch.where(ok[:, None], cand, D)
    val = torch.where(ok, cval, val)
    grad = torch.where(ok[:, None], cgrad, grad)
    eta = torch.where(ok, torch.clamp(eta * 2.0, max=ETA_MAX), eta * 0.5)
    return D, val, grad, eta, mom
