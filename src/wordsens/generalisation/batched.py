"""The Delta searches of one simulation run together (docs/methods.md, "Generalisation without p x p
matrices"): ``ascend_groups`` (``wordsens.search.engine.ascend`` on one group of restarts per search) and
``least_squares_groups`` (Levenberg-Marquardt steps on the ball for losses ``||L f(Delta) + b||^2``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..search.engine import ETA0, HALVE_EVERY, ascent_step, project

Tensor = torch.Tensor


# value_and_grad(D (R, d), groups (R,) int64 group of each row) -> (values (R,), gradients (R, d))
ValueAndGrad = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
# vjp(D (R, d), G (R, 3)) -> (f(D) (R, 3), sum_k G_k grad f_k (R, d)): the functionals and a
# vector-Jacobian product of them
VJP = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
# Levenberg-Marquardt damping, relative to the trace of the step's Gauss-Newton matrix: its start, and
# the value beyond which a row's steps are all refused (it has converged to rounding)
LM_DAMPING0 = 1.0
LM_DAMPING_MAX = 1e10


@dataclass(frozen=True)
class Stopping:
    """When a group of a batched search stops: after ``max_steps`` steps, or when its best score gained
    less than ``tol`` (relative) in ``patience`` steps; its rows are halved every ``HALVE_EVERY`` steps
    down to ``keep``."""

    max_steps: int
    tol: float
    patience: int
    keep: int


def _stacked(starts: Sequence[Tensor], radius: float) -> tuple[Tensor, Tensor]:
    """Every group's starts stacked (R, d) and projected on the ball, and the group of each row (R,)."""
    group = torch.cat([torch.full((s.shape[0],), g, dtype=torch.int64) for g, s in enumerate(starts)])
    return group.to(starts[0].device), project(torch.cat(list(starts)), radius)


class _Groups:
    """The bookkeeping of the batched searches: per group (rows ``group``; scores: higher is better) its steps,
    best-score history, halving and stopping (``Stopping``, or every row converged) and, once stopped, its
    points and steps (``results``)."""

    def __init__(self, groups: int, group: Tensor, score: Tensor, D: Tensor, stop: Stopping) -> None:
        self.history = [[float(score[group == g].max())] for g in range(groups)]
        self.steps = [0] * groups
        self.stop = stop
        self.out = {g: (D[group == g], 0) for g in range(groups)} if stop.max_steps <= 0 else {}

    def next_rows(self, group: Tensor, score: Tensor, converged: Tensor, D: Tensor) -> Tensor | None:
        """One step of every running group; returns the rows kept for the next step (None: every
        group stopped)."""
        rows = []
        stop = self.stop
        for g in torch.unique_consecutive(group).tolist():
            idx = (group == g).nonzero()[:, 0]
            self.steps[g] += 1
            self.history[g].append(float(score[idx].max()))
            if self.steps[g] % HALVE_EVERY == 0 and idx.numel() > stop.keep:
                order = torch.argsort(score[idx], descending=True)[: max(stop.keep, idx.numel() // 2)]
                idx = idx[order]
            h = self.history[g]
            done = self.steps[g] >= stop.max_steps or bool(converged[idx].all())
            if len(h) > stop.patience and h[-1] - h[-stop.patience - 1] <= stop.tol * max(abs(h[-1]), 1e-30):
                done = True
            if done:
                self.out[g] = (D[idx], self.steps[g])
            else:
                rows.append(idx)
        return torch.cat(rows) if rows else None

    def results(self) -> list[tuple[Tensor, int]]:
        return [self.out[g] for g in range(len(self.steps))]


def ascend_groups(
    value_and_grad: ValueAndGrad,
    starts: Sequence[Tensor],
    radius: float,
    stop: Stopping,
    *,
    momentum: float,
    eta_min: float = 1e-4,
) -> list[tuple[Tensor, int]]:
    """``ascend`` for every group of ``starts`` at once; returns, per group, the points reached by its
    survivors and its step count."""
    r = radius
    group, D = _stacked(starts, r)
    val, grad = value_and_grad(D, group)
    eta = torch.full_like(val, ETA0)
    mom = torch.zeros_like(D)
    book = _Groups(len(starts), group, val, D, stop)
    while stop.max_steps > 0:
        D, val, grad, eta, mom = ascent_step(value_and_grad, D, val, grad, eta, mom, r, momentum, group)
        idx = book.next_rows(group, val, eta < eta_min, D)
        if idx is None:
            break
        D, val, grad, eta, mom, group = D[idx], val[idx], grad[idx], eta[idx], mom[idx], group[idx]
    return book.results()


def _ball_step(Jr: Tensor, r: Tensor, D: Tensor, damping: Tensor, radius: float) -> Tensor:
    """The damped Gauss-Newton point for residuals ``r + Jr (x - D)`` (``Jr`` (R, 2, d), ``r`` (R, 2), ``D``
    (R, d), float64) on the ball: ``x = B w`` (``B`` an orthonormal basis of span{rows of Jr, D}, ``A = Jr B``,
    ``s`` the trace of ``A^T A``) with ``(A^T A + (s damping + mu) I) w = A^T (Jr D - r) + s damping B^T D``,
    ``mu >= 0`` the smallest multiplier that keeps ``||w|| <= radius`` (by bisection)."""
    B = torch.linalg.qr(torch.cat([Jr, D[:, None]], dim=1).transpose(1, 2))[0]  # (R, d, 3)
    A = Jr @ B  # (R, 2, 3)
    zD = (D[:, None] @ B)[:, 0]  # (R, 3)
    rest = r - (Jr @ D[:, :, None])[:, :, 0]  # residual at x = 0 of the linear model
    AtA = A.transpose(1, 2) @ A
    shift = AtA.diagonal(dim1=1, dim2=2).sum(-1).clamp_min(1e-300) * damping  # (R,)
    lam, V = torch.linalg.eigh(AtA)
    q = (V.transpose(1, 2) @ (shift[:, None] * zD - (A.transpose(1, 2) @ rest[:, :, None])[:, :, 0])[:, :, None])[
        :, :, 0
    ]

    def norm(mu: Tensor) -> Tensor:
        return torch.linalg.vector_norm(q / (lam + (shift + mu)[:, None]), dim=-1)

    lo = torch.zeros_like(shift)
    hi = torch.linalg.vector_norm(q, dim=-1) / radius  # ||w(hi)|| <= ||q|| / hi = radius
    outside = norm(lo) > radius
    for _ in range(60):  # to a relative 1e-18 of hi: exact for the step
        mid = 0.5 * (lo + hi)
        big = norm(mid) > radius
        lo, hi = torch.where(big, mid, lo), torch.where(big, hi, mid)
    mu = torch.where(outside, hi, torch.zeros_like(hi))
    w = (V @ (q / (lam + (shift + mu)[:, None]))[:, :, None])[:, :, 0]
    return project((B @ w[:, :, None])[:, :, 0], radius)


def least_squares_groups(
    vjp: VJP, L: Sequence[Tensor], b: Sequence[Tensor], starts: Sequence[Tensor], radius: float, stop: Stopping
) -> list[tuple[Tensor, int]]:
    """Minimise ``||L_g f(Delta) + b_g||^2`` (group ``g``'s residuals, ``L_g`` (2, 3), ``b_g`` (2,), linear in
    the functionals ``f``) over the ball from every start of every group by Levenberg-Marquardt steps
    (``_ball_step``): a step that does not increase the loss is taken and the damping falls 3-fold, else the
    damping grows 10-fold; one ``vjp`` call per iteration for every running row. Halving and stopping as
    ``ascend_groups`` (also when the damping exceeds ``LM_DAMPING_MAX``). Returns, per group, the points
    reached by its survivors and its iterations."""
    dtype = starts[0].dtype
    group, D = _stacked(starts, radius)
    D = D.to(torch.float64)
    Ls = torch.stack([x.to(device=D.device, dtype=torch.float64) for x in L])[group]  # (R, 2, 3)
    bs = torch.stack([x.to(device=D.device, dtype=torch.float64) for x in b])[group]  # (R, 2)

    def evaluate(D: Tensor, Lr: Tensor, br: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Residuals (R, 2), their gradients (R, 2, d) and the loss (R,) at ``D``, float64."""
        R = D.shape[0]
        f, grads = vjp(torch.cat([D, D]), torch.cat([Lr[:, 0], Lr[:, 1]]).to(dtype))
        res = (f[:R].to(torch.float64)[:, None] @ Lr.transpose(1, 2))[:, 0] + br
        Jr = torch.stack([grads[:R], grads[R:]], dim=1).to(torch.float64)
        return res, Jr, (res * res).sum(-1)

    res, Jr, loss = evaluate(D.to(dtype), Ls, bs)
    damping = torch.full_like(loss, LM_DAMPING0)
    book = _Groups(len(starts), group, -loss, D, stop)
    while stop.max_steps > 0:
        cand = _ball_step(Jr, res, D, damping, radius)
        cres, cJr, closs = evaluate(cand.to(dtype), Ls, bs)
        ok = torch.isfinite(closs) & (closs <= loss)
        D = torch.where(ok[:, None], cand, D)
        res = torch.where(ok[:, None], cres, res)
        Jr = torch.where(ok[:, None, None], cJr, Jr)
        loss = torch.where(ok, closs, loss)
        damping = torch.where(ok, damping / 3, damping * 10)
        idx = book.next_rows(group, -loss, damping > LM_DAMPING_MAX, D)
        if idx is None:
            break
        D, res, Jr, loss, damping, group = D[idx], res[idx], Jr[idx], loss[idx], damping[idx], group[idx]
        Ls, bs = Ls[idx], bs[idx]
    return [(D.to(dtype), steps) for D, steps in book.results()]
