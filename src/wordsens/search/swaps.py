"""Real words: the most damaging one-word substitution from a vocabulary, beside the continuous search.

Word ``w`` at position ``i`` is the move ``Delta = x_i(w) - x_i`` of the word-sensitivity ``Problem`` at ``i``
(``MapSpec.fast``), so ``S_words(X, i) = max_w sqrt(problem.value(Delta_w)) / phi_norm`` is a finite maximum:
``scan`` scores every word (exhaustive) or screens the vocabulary first (``screen_scores``) where a move is
costly (``swap_costs.exhaustive`` decides), and re-evaluates the best with ``Problem.exact``. ``substitution``
adds the continuous search at the radius the best word moves, whose supremum bounds every such word.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch

from ..compute import swap_costs
from ..compute.devices import check_fits
from ..maps import registry
from . import full_map
from .engine import Problem, chunked_values
from .estimate import estimate, search_context

Tensor = torch.Tensor


# the best candidates of a scan re-evaluated with the plain map in float64 (the float32 scores of a vocabulary
# are within about 1e-6 of them: the best word is among the first few)
RECHECK = 16
CHUNK_MB = 64.0  # working arrays of one chunk of candidates (swaps.chunk_mb)


@dataclass
class Scan:
    """What a vocabulary scan at one position found (indices: rows of the candidates): ``top`` the best, best
    first, with ``top_scores`` (``S`` by the plain map in float64) and ``best_radius`` (``||x_i(w*) - x_i||``);
    ``mean``, ``median``, ``p99`` of ``S`` over ``stats_words`` words (the original word left out: all, or a
    seeded sample when screened); ``screened``: the words scored exactly after the screen (None: exhaustive);
    ``scores``: every word's ``S`` in the working dtype (exhaustive scans only)."""

    top: list[int]
    top_scores: list[float]
    best_radius: float
    mean: float
    median: float
    p99: float
    stats_words: int
    exhaustive: bool
    screened: int | None
    phi_norm: float
    seconds: float
    scores: np.ndarray | None = field(default=None, repr=False)


def first_order_gram(problem: Problem, *, rows: int = 64) -> Tensor:
    """``G = J^T J`` (d, d), float64 CPU, ``J`` the Jacobian of ``phi`` in the moved row: half the Hessian of
    ``problem.value`` at 0, ``rows`` of it per batch of zero moves (row ``r`` of the batch by a second backward
    pass of the gradient's ``r``-th coordinate: the batch's rows are independent problems)."""
    d = problem.d
    dtype, device = working(problem)
    G = torch.zeros((d, d), dtype=torch.float64)
    for start in range(0, d, rows):
        idx = torch.arange(start, min(d, start + rows), device=device)
        D = torch.zeros((idx.numel(), d), dtype=dtype, device=device, requires_grad=True)
        with torch.enable_grad():
            (grad,) = torch.autograd.grad(problem.value(D).sum(), D, create_graph=True)
            picked = grad[torch.arange(idx.numel(), device=device), idx].sum()
            if picked.requires_grad:
                (hess,) = torch.autograd.grad(picked, D)
            else:  # the value is linear or constant around 0 in these coordinates
                hess = torch.zeros_like(D)
        G[start : start + idx.numel()] = 0.5 * hess.detach().to(device="cpu", dtype=torch.float64)
    return 0.5 * (G + G.T)


def screen_scores(problem: Problem, moves: Tensor, chunk: int, *, seed: int = 0) -> Tensor:
    """The screen's score of every move (rows of ``moves``, float64 CPU; float64 CPU out): the problem's own
    ``screener`` (``chunk`` moves at a time), else the first-order score ``D^T G D`` (``first_order_gram``)."""
    screener = problem.screener(seed)
    if screener is None:
        G = first_order_gram(problem)
        return chunked_values(lambda part: ((part @ G) * part).sum(-1), moves, 4096, torch.float64, torch.device("cpu"))
    return chunked_values(screener, moves, chunk, *working(problem))


def working(problem: Problem) -> tuple[torch.dtype, torch.device]:
    """The dtype and device ``problem.value`` takes its moves in: its sample's (``X``) or, for the
    first-layer problems (RF, DRF), its pre-activation's (``layer.u``)."""
    ref = getattr(problem, "X", None)
    if ref is None:
        ref = getattr(getattr(problem, "layer", None), "u", None)
    if not isinstance(ref, torch.Tensor):
        raise TypeError(
            f"{type(problem).__name__} has neither a sample X nor a first layer: its moves' dtype is unknown"
        )
    return ref.dtype, ref.device


def _relative(values: Tensor, phi_norm: float) -> Tensor:
    return values.clamp_min(0).sqrt().to(device="cpu", dtype=torch.float64) / (phi_norm if phi_norm > 0 else 1.0)


def move_values(problem: Problem, moves: Tensor, chunk: int) -> Tensor:
    """``problem.value`` (the squared change) of every move (rows of ``moves``), float64 CPU."""
    return chunked_values(problem.value, moves, chunk, *working(problem))


def scan(
    problem: Problem,
    candidates: Tensor,
    xi: Tensor,
    *,
    top_k: int = 10,
    chunk: int = 512,
    exhaustive: bool = True,
    screen: int = 256,
    sample: int = 1024,
    exclude: int | None = None,
    seed: int = 0,
) -> Scan:
    """Score the substitutions of the row ``xi`` at ``problem``'s position by every row of ``candidates`` (V, d):
    every candidate's value (exhaustive), or the best ``screen`` of ``screen_scores`` and the statistics from
    ``sample`` candidates drawn with ``seed``; the best ``max(top_k, RECHECK)`` by value re-ranked by
    ``problem.exact``. ``exclude``: a candidate left out of the statistics (the original word)."""
    started = time.perf_counter()
    V = candidates.shape[0]
    if V == 0:
        raise ValueError("no candidates to scan")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    moves = candidates.to(torch.float64) - xi.to(device=candidates.device, dtype=torch.float64)
    moves = moves.cpu()
    phi_norm = float(problem.phi_norm)
    keep = torch.ones(V, dtype=torch.bool)
    if exclude is not None:
        keep[exclude] = False
    scores_out: np.ndarray | None = None
    if exhaustive:
        fast = _relative(move_values(problem, moves, chunk), phi_norm)
        pool = torch.argsort(fast, descending=True)[: max(top_k, RECHECK)]
        stats = fast[keep] if bool(keep.any()) else fast
        stats_words, screened = int(stats.numel()), None
        scores_out = fast.numpy()
    else:
        first = screen_scores(problem, moves, chunk, seed=seed)
        screened = min(screen, V)
        shortlist = torch.argsort(first, descending=True)[:screened]
        fast_short = _relative(move_values(problem, moves[shortlist], chunk), phi_norm)
        pool = shortlist[torch.argsort(fast_short, descending=True)[: max(top_k, RECHECK)]]
        eligible = torch.nonzero(keep)[:, 0]
        if eligible.numel() > sample:
            gen = torch.Generator().manual_seed(int(seed) % 2**63)
            eligible = eligible[torch.randperm(eligible.numel(), generator=gen)[:sample]]
        stats = _relative(move_values(problem, moves[eligible], chunk), phi_norm)
        stats_words = int(stats.numel())
    exact = chunked_values(problem.exact, moves[pool], chunk, torch.float64, working(problem)[1])
    exact = exact / (phi_norm if phi_norm > 0 else 1.0)
    order = torch.argsort(exact, descending=True)[:top_k]
    top = [int(pool[j]) for j in order]
    best_radius = float(torch.linalg.vector_norm(moves[top[0]]))
    quantiles = torch.quantile(stats, torch.tensor([0.5, 0.99], dtype=torch.float64)) if stats.numel() else None
    return Scan(
        top=top,
        top_scores=[float(exact[j]) for j in order],
        best_radius=best_radius,
        mean=float(stats.mean()) if stats.numel() else math.nan,
        median=float(quantiles[0]) if quantiles is not None else math.nan,
        p99=float(quantiles[1]) if quantiles is not None else math.nan,
        stats_words=stats_words,
        exhaustive=exhaustive,
        screened=screened,
        phi_norm=phi_norm,
        seconds=time.perf_counter() - started,
        scores=scores_out,
    )


def prepare_problem(
    map_name: str,
    X: Tensor,
    position: int,
    *,
    seed: int,
    vocab: int,
    weights: Any = None,
    options: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "auto",
    chunk_mb: float = CHUNK_MB,
    max_memory_gb: float | None = None,
) -> tuple[Problem, int, dict[str, Any]]:
    """The word-sensitivity problem of ``map_name`` at ``X`` (n, d) and ``position`` as the continuous search
    builds it, the words per chunk of a scan of ``vocab`` words (``chunk_mb`` MB of working arrays), its memory
    checked against the device's, and the context's ``device``, ``dtype`` and ``options``."""
    spec, ctx = search_context(
        map_name,
        X,
        position=position,
        weights=weights,
        options=options,
        dtype=dtype,
        device=device,
        max_memory_gb=max_memory_gb,
    )
    n, d = X.shape
    if not (isinstance(chunk_mb, (int, float)) and chunk_mb > 0):
        raise ValueError(f"chunk_mb must be a positive number of MB, got {chunk_mb!r}")
    chunk = swap_costs.chunk_size(spec, n, d, ctx.options, chunk_mb=chunk_mb, dtype=ctx.dtype)
    need = swap_costs.scan_memory(spec, n, d, ctx.options, vocab=vocab, width=d, chunk=chunk, dtype=ctx.dtype)
    check_fits(need, ctx.device, f"a scan of {vocab} substitutions for {map_name}", limit=ctx.budget)
    prepare = registry.resolve(spec.fast) if spec.fast is not None else full_map.prepare
    problem = prepare(X.detach().to(torch.float64), int(seed), weights, ctx)(position)
    facts = {"device": str(ctx.device), "dtype": str(ctx.dtype).replace("torch.", ""), "options": ctx.options}
    return problem, chunk, facts


@dataclass
class SwapResult:
    """One position's substitutions (``scan``) beside the continuous word sensitivity on the same weights at
    the best word's ``radius`` (``continuous``) and at ``sqrt(d)`` (``continuous_sqrt_d``, None unless asked)."""

    map: str
    n: int
    d: int
    position: int
    scan: Scan
    radius: float
    continuous: float
    continuous_seconds: float
    device: str
    dtype: str
    options: dict[str, Any]
    continuous_sqrt_d: float | None = None

    @property
    def best(self) -> float:
        """``S_words``: the best word's relative change."""
        return self.scan.top_scores[0]

    @property
    def ratio(self) -> float:
        """best word / continuous at the same radius (above 1: the continuous search missed)."""
        return self.best / self.continuous if self.continuous > 0 else math.inf

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["scan"].pop("scores")
        return out


def substitution(
    map_name: str,
    X: Tensor,
    candidates: Tensor,
    *,
    position: int,
    seed: int,
    weights: Any = None,
    options: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
    device: str | torch.device | None = "auto",
    top_k: int = 10,
    chunk_mb: float = CHUNK_MB,
    screen: int = 256,
    sample: int = 1024,
    exclude: int | None = None,
    exhaustive: bool | None = None,
    max_steps: int = 1000,
    sqrt_d: bool = False,
    max_memory_gb: float | None = None,
) -> SwapResult:
    """The substitutions of row ``position`` of ``X`` (n, d) by the rows of ``candidates`` (V, d) (``scan``;
    ``exhaustive`` None: by the map's cost model) and the continuous word sensitivity (``estimate``) on the
    same weights at the radius the best word moves (``sqrt_d``: also at ``sqrt(d)``). ``dtype``: of the scan
    (None: float32); the continuous search runs in the map's own working dtype."""
    n, d = X.shape
    if candidates.ndim != 2 or candidates.shape[1] != d:
        raise ValueError(f"candidates must have shape (V, d) = (V, {d}), got {tuple(candidates.shape)}")
    spec = registry.get(map_name)
    # the scan and the continuous search must see one map (same seed, weights and options)
    same_map: dict[str, Any] = dict(seed=seed, position=position, weights=weights, options=options, device=device)
    vocab, scan_dtype = candidates.shape[0], torch.float32 if dtype is None else dtype
    problem, chunk, facts = prepare_problem(
        map_name, X, vocab=vocab, dtype=scan_dtype, chunk_mb=chunk_mb, max_memory_gb=max_memory_gb, **same_map
    )
    if exhaustive is None:
        exhaustive = swap_costs.exhaustive(spec, n, d, facts["options"], vocab=vocab)
    scanning = dict(top_k=top_k, exhaustive=exhaustive, screen=screen, sample=sample, exclude=exclude, seed=seed)
    found = scan(problem, candidates, X[position], chunk=chunk, **scanning)  # type: ignore[arg-type]
    del problem
    on_same_map = partial(estimate, map_name, X, max_steps=max_steps, **same_map)
    continuous = on_same_map(radius=found.best_radius) if found.best_radius > 0 else None
    at_sqrt_d = on_same_map().lower if sqrt_d else None
    if continuous is not None and not math.isclose(continuous.phi_norm, found.phi_norm, rel_tol=1e-4):
        raise RuntimeError(
            f"the scan's ||phi(X)|| = {found.phi_norm:.8g} differs from the search's {continuous.phi_norm:.8g}"
        )
    return SwapResult(
        map=map_name,
        n=n,
        d=d,
        position=position,
        scan=found,
        radius=found.best_radius,
        continuous=continuous.lower if continuous is not None else 0.0,
        continuous_seconds=continuous.seconds if continuous is not None else 0.0,
        device=facts["device"],
        dtype=facts["dtype"],
        options=facts["options"],
        continuous_sqrt_d=at_sqrt_d,
    )
