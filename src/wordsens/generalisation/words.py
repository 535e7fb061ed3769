"""Real words in the generalisation experiment (``scan_words``; docs/methods.md, "Real words in the
generalisation experiment"): word ``w`` at position ``i`` is the move ``x_i(w) - x_i`` of the Delta search,
so a chunk of words at once goes through the setup's own functionals, and both trainings and every loss read
the same (V, 3) values. A float32 scan's deciding words are evaluated again in float64 (``functionals.exact``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from ..search.engine import chunked_values
from .core import TRAININGS, Setup
from .functionals import AttentionFunctionals, RFFunctionals

Tensor = torch.Tensor


RECHECK = 16  # each loss's best words evaluated again with the plain map in float64
CHUNK_MB = 64.0  # working arrays of one chunk of words
PENALTIES = (1.0, 0.1, 0.01)  # the penalised loss's weights of D0^2 (the paper's Figure 5)


def word_losses(penalties: Sequence[float] = PENALTIES) -> list[tuple[str, str, float]]:
    """Every ``(training, loss, penalty)`` of a simulation: per training the surrogate, the direct loss and
    the penalised loss at each of ``penalties``."""
    for p in penalties:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < math.inf:
            raise ValueError(f"penalties must be finite numbers >= 0, got {p!r}")
    per = [("surrogate", 0.0), ("direct", 0.0), *(("penalised", float(p)) for p in penalties)]
    return [(t, loss, p) for t in TRAININGS for loss, p in per]


@dataclass
class WordOutcomes:
    """One training's outcome of every word (float64 tensors over the candidates, CPU)."""

    training: str
    D0: Tensor
    D1: Tensor
    err: Tensor
    gamma_min: Tensor
    alignment: Tensor


@dataclass
class WordChoice:
    """The word minimising one ``(training, loss, penalty)``: ``index`` (a row of the candidates), its loss
    ``value``, outcome and ``radius`` (``||x_i(w) - x_i||``); the best words, best first (``top``); the loss's
    ``mean``, ``median`` and 1st percentile over the ``stats_words`` words (the excluded one left out)."""

    training: str
    loss: str
    penalty: float
    index: int
    value: float
    D0: float
    D1: float
    err: float
    gamma_min: float
    alignment: float
    d0_shift: float
    radius: float
    top: list[int]
    top_values: list[float]
    mean: float
    median: float
    p01: float
    stats_words: int


@dataclass
class Frontier:
    """The lower-left frontier of ``(gamma_min, Err)`` over the vocabulary for one training
    (``pareto_frontier``), by increasing ``gamma_min``."""

    training: str
    index: list[int]
    gamma_min: list[float]
    err: list[float]

    def best_err(self, gamma_at_most: float) -> float:
        """The smallest Err of a word with ``gamma_min <= gamma_at_most`` (inf: none)."""
        return min((e for g, e in zip(self.gamma_min, self.err, strict=True) if g <= gamma_at_most), default=math.inf)


@dataclass
class WordScan:
    """What ``scan_words`` found at one word position of one simulation: one choice per ``(training, loss,
    penalty)``, one frontier per training, and every word's functionals ``F`` (V, 3; ``float64``: those that
    are), move norms ``radii`` and ``outcomes`` per training; ``exclude``: the original word."""

    map: str
    n: int
    d: int
    N: int
    position: int
    y: float
    t0: float
    words: int
    vocab: int
    exclude: int | None
    dtype: str
    rechecked: int
    choices: list[WordChoice]
    frontiers: list[Frontier]
    seconds: float
    F: Tensor = field(repr=False)
    radii: Tensor = field(repr=False)
    float64: Tensor = field(repr=False)
    outcomes: dict[str, WordOutcomes] = field(repr=False, default_factory=dict)

    def choice(self, training: str, loss: str, penalty: float = 0.0) -> WordChoice:
        for c in self.choices:
            if (c.training, c.loss, c.penalty) == (training, loss, float(penalty)):
                return c
        raise KeyError(f"no choice for ({training}, {loss}, {penalty}) in this scan")

    def frontier(self, training: str) -> Frontier:
        return next(f for f in self.frontiers if f.training == training)

    def reaching(self, training: str, err_below: float, gamma_at_most: float = math.inf) -> int:
        """How many words (but the excluded one) reach ``Err < err_below`` with ``gamma_min <= gamma_at_most``."""
        out = self.outcomes[training]
        hit = (out.err < err_below) & (out.gamma_min <= gamma_at_most) & _kept(self.vocab, self.exclude)
        return int(hit.sum())

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("F", "radii", "float64", "outcomes"):
            out.pop(key)
        return out


def _kept(V: int, exclude: int | None) -> Tensor:
    keep = torch.ones(V, dtype=torch.bool)
    if exclude is not None:
        keep[exclude] = False
    return keep


def pareto_frontier(gamma: Tensor, err: Tensor, keep: Tensor | None = None) -> Tensor:
    """The indices of the points ``(gamma, err)`` (of those in ``keep``) that no other point beats in both
    coordinates, by increasing ``gamma``; of equal points the first."""
    idx = torch.arange(gamma.numel()) if keep is None else torch.nonzero(keep)[:, 0]
    g, e = gamma[idx], err[idx]
    order = torch.argsort(e, stable=True)
    order = order[torch.argsort(g[order], stable=True)]  # by gamma, ties by err
    e_sorted = e[order]
    before = torch.cat([e_sorted.new_full((1,), math.inf), torch.cummin(e_sorted, 0).values[:-1]])
    return idx[order[e_sorted < before]]


def _word_bytes(f: Any, n: int, d: int) -> tuple[int, int]:
    """Working bytes of one word in a chunk of the scan and of the float64 re-evaluation (RF: its
    pre-activations; attention: its score row and column, a whole moved sample re-evaluated; others: a moved
    sample and a forward's arrays)."""
    b = torch.finfo(f.dtype).bits // 8
    if isinstance(f, RFFunctionals):
        k = f.layer.B.shape[0]
        return 3 * k * b, 3 * k * 8
    whole = (8 * n * d + 4 * n * n) * 8
    if isinstance(f, AttentionFunctionals):
        return (16 * n + 4 * d) * b, whole
    return whole // 8 * b, whole


class _Values:
    """Every word's functionals (``F``); ``exact``: which are float64 (a float64 scan's, or rechecked)."""

    def __init__(self, setup: Setup, moves: Tensor, chunk_mb: float) -> None:
        f = setup.functionals
        fast, whole = _word_bytes(f, setup.n, setup.d)
        self.setup, self.moves, self.device = setup, moves, torch.device(setup.device)
        self.exact_chunk = max(1, int(chunk_mb * 1024**2) // whole)
        self.F = chunked_values(f, moves, max(1, int(chunk_mb * 1024**2) // fast), f.dtype, self.device, 3)
        self.exact = torch.full((moves.shape[0],), f.dtype == torch.float64)  # float64 values: final
        self.rechecked = 0

    def recheck(self, idx: Tensor) -> None:
        idx = idx[~self.exact[idx]].unique()
        if idx.numel():
            fn = self.setup.functionals.exact
            self.F[idx] = chunked_values(fn, self.moves[idx], self.exact_chunk, torch.float64, self.device, 3)
            self.exact[idx] = True
            self.rechecked += int(idx.numel())

    def loss(self, training: str, loss: str, penalty: float) -> Tensor:
        return self.setup.loss(self.F, training, loss, penalty)


def scan_words(
    setup: Setup,
    candidates: Tensor,
    *,
    penalties: Sequence[float] = PENALTIES,
    exclude: int | None = None,
    top_k: int = 10,
    chunk_mb: float = CHUNK_MB,
    recheck: int = RECHECK,
) -> WordScan:
    """Score every word of ``candidates`` (V, d: their rows at ``setup.position``) in place of that row of the
    new sample, for both trainings and every loss of ``word_losses(penalties)``. ``exclude``: the original
    word; ``chunk_mb``: the working arrays of a chunk of words; ``recheck``: each loss's best words evaluated
    again in float64."""
    started = time.perf_counter()
    losses = word_losses(penalties)
    n, d = setup.n, setup.d
    if setup.sample is None:
        raise ValueError("the setup has no new sample (Setup.sample): prepare it with wordsens.generalisation.prepare")
    if candidates.ndim != 2 or candidates.shape[1] != d or candidates.shape[0] < 1:
        raise ValueError(f"candidates must have shape (V, d) = (V, {d}) with V >= 1, got {tuple(candidates.shape)}")
    V = candidates.shape[0]
    if exclude is not None and not (0 <= exclude < V and V > 1):
        raise ValueError(f"exclude must be a candidate index in [0, {V - 1}] or None, and leave a word, got {exclude}")
    if not (isinstance(chunk_mb, (int, float)) and chunk_mb > 0) or top_k < 1 or recheck < 1:
        raise ValueError(f"chunk_mb, top_k and recheck must be positive, got {chunk_mb}, {top_k}, {recheck}")
    moves = candidates.detach().to(device="cpu", dtype=torch.float64) - setup.sample[setup.position]
    values = _Values(setup, moves, chunk_mb)
    if not bool(torch.isfinite(values.F).all()):
        raise RuntimeError(f"{int((~torch.isfinite(values.F).all(1)).sum())} words got non-finite functionals")
    keep = _kept(V, exclude)
    pool = max(recheck, top_k)
    for training, loss, penalty in losses if not bool(values.exact.all()) else ():  # a float32 scan's best
        scores = values.loss(training, loss, penalty).masked_fill(~keep, math.inf)
        values.recheck(torch.argsort(scores)[: min(pool, int(keep.sum()))])
    choices = [_choice(values, keep, t, loss, p, top_k) for t, loss, p in losses]
    frontiers = [_frontier(values, keep, t) for t in TRAININGS]
    F = values.F
    outcomes = {}
    for t in TRAININGS:
        D0, D1, err = setup.outcome(F, t)
        outcomes[t] = WordOutcomes(t, D0, D1, err, setup.gamma_min(D0), setup.alignment(F, t))
    return WordScan(
        map=setup.map_name,
        n=n,
        d=d,
        N=setup.N,
        position=setup.position,
        y=setup.y,
        t0=setup.t0,
        words=int(torch.isfinite(F).all(1).sum()),
        vocab=V,
        exclude=exclude,
        dtype=str(setup.functionals.dtype).replace("torch.", ""),
        rechecked=values.rechecked,
        choices=choices,
        frontiers=frontiers,
        seconds=time.perf_counter() - started,
        F=F,
        radii=torch.linalg.vector_norm(moves, dim=1),
        float64=values.exact,
        outcomes=outcomes,
    )


def _choice(values: _Values, keep: Tensor, training: str, loss: str, penalty: float, top_k: int) -> WordChoice:
    """The word minimising one loss, its values float64 (a float32 scan's rechecked until the best's are)."""
    while True:
        scores = values.loss(training, loss, penalty).masked_fill(~keep, math.inf)
        best = int(torch.argmin(scores))
        if values.exact[best]:
            break
        values.recheck(torch.tensor([best]))
    top = torch.argsort(scores)[: min(top_k, int(keep.sum()))]
    kept = scores[keep]
    q = torch.quantile(kept, torch.tensor([0.01, 0.5], dtype=torch.float64))
    return WordChoice(
        training=training,
        loss=loss,
        penalty=float(penalty),
        index=best,
        value=float(scores[best]),
        **values.setup.summary(values.F[best], training),
        radius=float(torch.linalg.vector_norm(values.moves[best])),
        top=[int(j) for j in top],
        top_values=[float(scores[j]) for j in top],
        mean=float(kept.mean()),
        median=float(q[1]),
        p01=float(q[0]),
        stats_words=int(kept.numel()),
    )


def _frontier(values: _Values, keep: Tensor, training: str) -> Frontier:
    """The lower-left frontier of ``(gamma_min, Err)``, every point's values float64."""
    setup = values.setup
    while True:
        D0, _, err = setup.outcome(values.F, training)
        gamma = setup.gamma_min(D0)
        idx = pareto_frontier(gamma, err, keep)
        if bool(values.exact[idx].all()):
            break
        values.recheck(idx)
    return Frontier(
        training=training,
        index=[int(j) for j in idx],
        gamma_min=[float(gamma[j]) for j in idx],
        err=[float(err[j]) for j in idx],
    )
