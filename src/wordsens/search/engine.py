"""The search engine shared by every word-sensitivity and generalisation search.

A ``Problem`` is a function of ``Delta`` (the move of one token) over the ball of radius
``sqrt(d)``: a batched, differentiable ``value`` (what the search maximises), its ``exact`` float64
evaluation with the plain map formula, and informed ``starts``. ``ascend`` maximises it from a
batch of starts by projected normalised-gradient ascent with adaptive steps, momentum and
successive halving of the restarts.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..maps.spec import MapSpec
from ..seeds import derive_seed, generator

Tensor = torch.Tensor

__all__ = [
    "CHUNK_BYTES",
    "ETA0",
    "ETA_MAX",
    "HALVE_EVERY",
    "Problem",
    "Search",
    "SearchContext",
    "ascend",
    "authors_start",
    "chunked_rows64",
    "feasible",
    "informed_starts",
    "matvec64",
    "project",
    "sphere",
    "unit_rows",
]

# Ascent settings (see ascend), chosen on synthetic RAF and ReLU-RAF instances against the
# reference method (benchmarks/bench_ws.py).
ETA0, ETA_MAX = 0.5, 64.0
HALVE_EVERY = 10
CHUNK_BYTES = 4 * 1024**2  # float64 chunk size of exact evaluations and Gram matrices


@dataclass
class Search:
    """What a word-sensitivity search found: the maximising position, its Delta (float64), the
    change ``||phi(X^i(Delta)) - phi(X)||`` and ``||phi(X)||``, a certified upper bound on the
    relative change (RF), the steps taken, the DRF tail layers streamed, and the relative change
    reached at every position searched."""

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
    """What a map's ``prepare`` (``wordsens.maps.MapSpec.fast``) needs besides the sample, seed and weights:
    the map's spec (resolved once, by the entry point), the working dtype and device, the RF/DRF sampler,
    where weight blocks are drawn, the memory budget (bytes; None: no limit), the batch of restarts and
    the map's options."""

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
        """The point ``D`` (1, d) converged tightly (relative gains down to 1e-12) by ``ascend``, which
        never lowers its value: a tie with another algorithm's local maximum is not lost to a loose
        stopping rule. ``D`` is in the working dtype; returns the point (float64) and the steps taken."""
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
        """A score of moves ``D`` (R, d), batched, that ranks them nearly as ``value`` does at a fraction
        of its cost, for a vocabulary screen (``wordsens.search.swaps``); any random draw it needs is
        seeded with ``seed``. None (the default): the screen falls back to the first-order score
        ``D^T G D`` of ``value`` at 0 (``wordsens.search.swaps.first_order_gram``)."""
        return None


def chunked_rows64(M: Tensor, fn: Callable[[slice, Tensor], None]) -> None:
    """Call ``fn(rows, M[rows] as float64)`` over row chunks of at most ``CHUNK_BYTES``."""
    step = max(1, CHUNK_BYTES // (8 * M.shape[1]))
    for start in range(0, M.shape[0], step):
        fn(slice(start, start + step), M[start : start + step].to(torch.float64))


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
    """Starts (float64, CPU) from unit directions ``informed`` (m, d) suggested by a map's structure: those
    directions on the sphere, the reference's jittered start ``0.1 N(0, I)``, random mixtures of informed
    and random directions, uniform sphere points."""
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
    """Projected normalised-gradient ascent from every start; returns the point reached by each survivor.

    Each restart moves by ``eta * radius`` along its normalised gradient (plus ``momentum`` times
    its previous unit step, which follows ridges instead of zig-zagging across them) and is
    projected back on the ball; ``eta`` doubles (up to 64, where a step is nearly the jump to
    ``radius * g / ||g||`` that maximises the linearisation) after a gain and halves after a
    loss, which is rejected, so every restart's value never decreases. Every ``HALVE_EVERY``
    steps the worse half of the batch is dropped until ``keep`` restarts remain. The search stops
    when the best value gains less than ``tol`` (relative) in ``patience`` steps, when every step
    size has collapsed, or after ``max_steps`` steps.
    """
    r = problem.radius
    D = project(starts, r)
    val, grad = problem.value_and_grad(D)
    eta = torch.full_like(val, ETA0)
    mom = torch.zeros_like(D)
    history = [float(val.max())]
    steps = 0
    while steps < max_steps:
        direction = grad / torch.linalg.vector_norm(grad, dim=-1, keepdim=True).clamp_min(1e-30) + momentum * mom
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True).clamp_min(1e-30)
        cand = project(D + (eta * r)[:, None] * direction, r)
        cval, cgrad = problem.value_and_grad(cand)
        steps += 1
        ok = torch.isfinite(cval) & (cval >= val)
        moved = cand - D
        moved = moved / torch.linalg.vector_norm(moved, dim=-1, keepdim=True).clamp_min(1e-30)
        mom = torch.where(ok[:, None], moved, torch.zeros_like(mom))
        D = torch.where(ok[:, None], cand, D)
        val = torch.where(ok, cval, val)
        grad = torch.where(ok[:, None], cgrad, grad)
        eta = torch.where(ok, torch.clamp(eta * 2.0, max=ETA_MAX), eta * 0.5)
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


def authors_start(seed: int, position: int, d: int) -> Tensor:
    """The start of the authors' search at ``position``: ``0.1 N(0, I_d)`` (float64, CPU), seeded."""
    return 0.1 * torch.randn(
        d, generator=generator(derive_seed(seed, "reference-start", position)), dtype=torch.float64
    )
