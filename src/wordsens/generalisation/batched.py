"""The Delta searches of one simulation run together: ``ascend_groups`` is ``wordsens.search.engine.ascend``
run on several groups of restarts at once (one group per search: its own starts, loss, halving and
stopping rule), so that every step evaluates the functionals of all the searches still running in one
batched call instead of one small call per search. Each group follows exactly the rule of ``ascend``;
only the batch its rows are evaluated in differs (which can change the last bits of a matrix product).

``least_squares_groups`` serves losses that are a sum of squares of linear functions of the three
functionals, ``||L f(Delta) + b||^2`` (the penalised loss of Figure 5: two residuals): a
Levenberg-Marquardt (damped Gauss-Newton) step on the ball ``||Delta|| <= radius``, in the span of the
residuals' gradients and ``Delta``, where the normalised-gradient ascent creeps along the sphere
(Figure 5's searches at d = 768 mostly stop at its step cap, well above the losses of longer runs:
docs/benchmarks.md, "Figure 5's penalised searches by Levenberg-Marquardt steps").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..search.engine import ETA0, ETA_MAX, HALVE_EVERY, project

Tensor = torch.Tensor

__all__ = ["LM_DAMPING0", "LM_DAMPING_MAX", "ascend_groups", "least_squares_groups"]

# value_and_grad(D (R, d), groups (R,) int64 group of each row) -> (values (R,), gradients (R, d))
ValueAndGrad = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
# vjp(D (R, d), G (R, 3)) -> (f(D) (R, 3), sum_k G_k grad f_k (R, d)): the functionals and a
# vector-Jacobian product of them
VJP = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
# Levenberg-Marquardt damping, relative to the trace of the step's Gauss-Newton matrix: its start, and
# the value beyond which a row's steps are all refused (it has converged to rounding)
LM_DAMPING0 = 1.0
LM_DAMPING_MAX = 1e10


def _unit(x: Tensor) -> Tensor:
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(1e-30)


class _Groups:
    """The bookkeeping shared by the batched searches: per group (rows ``group``, scores: higher is
    better) its step count and best-score history, successive halving every ``HALVE_EVERY`` steps
    down to ``keep`` rows, its stopping rule (``max_steps``, every row converged, or a best score that
    gained less than ``tol`` (relative) in ``patience`` steps), and ``out``: each stopped group's
    points and steps."""

    def __init__(
        self, group: Tensor, score: Tensor, *, keep: Sequence[int], max_steps: int, tol: float, patience: int
    ) -> None:
        groups = len(keep)
        self.history = [[float(score[group == g].max())] for g in range(groups)]
        self.steps = [0] * groups
        self.out: dict[int, tuple[Tensor, int]] = {}
        self.keep, self.max_steps, self.tol, self.patience = keep, max_steps, tol, patience

    def next_rows(self, group: Tensor, score: Tensor, converged: Tensor, D: Tensor) -> Tensor | None:
        """One step of every running group; returns the rows kept for the next step (None: every
        group stopped)."""
        rows = []
        for g in torch.unique_consecutive(group).tolist():
            idx = (group == g).nonzero()[:, 0]
            self.steps[g] += 1
            self.history[g].append(float(score[idx].max()))
            if self.steps[g] % HALVE_EVERY == 0 and idx.numel() > self.keep[g]:
                order = torch.argsort(score[idx], descending=True)[: max(self.keep[g], idx.numel() // 2)]
                idx = idx[order]
            h = self.history[g]
            stop = self.steps[g] >= self.max_steps or bool(converged[idx].all())
            if len(h) > self.patience and h[-1] - h[-self.patience - 1] <= self.tol * max(abs(h[-1]), 1e-30):
                stop = True
            if stop:
                self.out[g] = (D[idx], self.steps[g])
            else:
                rows.append(idx)
        return torch.cat(rows) if rows else None


def ascend_groups(
    value_and_grad: ValueAndGrad,
    starts: Sequence[Tensor],
    radius: float,
    *,
    max_steps: int,
    tol: float,
    patience: int,
    keep: Sequence[int],
    momentum: float,
    eta_min: float = 1e-4,
) -> list[tuple[Tensor, int]]:
    """``ascend`` (projected normalised-gradient ascent with adaptive steps, momentum, successive
    halving and its stopping rule) for every group of ``starts`` at once; returns, per group, the
    points reached by its survivors and its step count."""
    r = radius
    sizes = [s.shape[0] for s in starts]
    group = torch.cat([torch.full((n,), g, dtype=torch.int64) for g, n in enumerate(sizes)]).to(starts[0].device)
    D = project(torch.cat(list(starts)), r)
    val, grad = value_and_grad(D, group)
    eta = torch.full_like(val, ETA0)
    mom = torch.zeros_like(D)
    book = _Groups(group, val, keep=keep, max_steps=max_steps, tol=tol, patience=patience)
    if max_steps <= 0:
        return [(D[group == g], 0) for g in range(len(sizes))]
    while group.numel():
        direction = _unit(_unit(grad) + momentum * mom)
        cand = project(D + (eta * r)[:, None] * direction, r)
        cval, cgrad = value_and_grad(cand, group)
        ok = torch.isfinite(cval) & (cval >= val)
        moved = _unit(cand - D)
        mom = torch.where(ok[:, None], moved, torch.zeros_like(mom))
        D = torch.where(ok[:, None], cand, D)
        val = torch.where(ok, cval, val)
        grad = torch.where(ok[:, None], cgrad, grad)
        eta = torch.where(ok, torch.clamp(eta * 2.0, max=ETA_MAX), eta * 0.5)
        idx = book.next_rows(group, val, eta < eta_min, D)
        if idx is None:
            break
        D, val, grad, eta, mom, group = D[idx], val[idx], grad[idx], eta[idx], mom[idx], group[idx]
    return [book.out[g] for g in range(len(sizes))]


def _ball_step(Jr: Tensor, r: Tensor, D: Tensor, damping: Tensor, radius: float) -> Tensor:
    """The damped Gauss-Newton point for residuals ``r + Jr (x - D)`` (rows: ``Jr`` (R, 2, d), ``r``
    (R, 2), ``D`` (R, d), float64) on the ball ``||x|| <= radius``: in the orthonormal basis ``B`` of
    span{rows of Jr, D} (where the minimiser lies), ``x = B w`` minimises
    ``||r - Jr D + A w||^2 + s damping ||w - B^T D||^2`` (``A = Jr B``, ``s`` the trace of ``A^T A``)
    with ``||w|| <= radius``: ``(A^T A + (s damping + mu) I) w = A^T (Jr D - r) + s damping B^T D``,
    ``mu >= 0`` the smallest multiplier that keeps ``w`` in the ball (from the eigenvalues of the
    3 x 3 ``A^T A``, by bisection)."""
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
    vjp: VJP,
    L: Sequence[Tensor],
    b: Sequence[Tensor],
    starts: Sequence[Tensor],
    radius: float,
    *,
    max_steps: int,
    tol: float,
    patience: int,
    keep: Sequence[int],
) -> list[tuple[Tensor, int]]:
    """Minimise ``||L_g f(Delta) + b_g||^2`` (``L_g`` (2, 3), ``b_g`` (2,): group ``g``'s residuals,
    linear in the functionals ``f``) over ``||Delta|| <= radius`` from every start of every group, by
    Levenberg-Marquardt steps on the ball (``_ball_step``): a step that does not increase the loss is
    taken and the damping falls 3-fold, else it is refused and the damping grows 10-fold. Each
    iteration evaluates the functionals and the two residuals' gradients of every running row in one
    ``vjp`` call (the rows twice: one product per residual). Successive halving as ``ascend_groups``;
    a group stops after ``max_steps`` iterations, when every damping exceeds ``LM_DAMPING_MAX`` (no step
    is taken any more: converged to rounding), or when its best loss falls by less than ``tol``
    (relative) in ``patience`` iterations. Returns, per group, the points reached by its survivors and
    its iterations."""
    r_ = radius
    sizes = [s.shape[0] for s in starts]
    dev = starts[0].device
    group = torch.cat([torch.full((n,), g, dtype=torch.int64) for g, n in enumerate(sizes)]).to(dev)
    Ls = torch.stack([x.to(device=dev, dtype=torch.float64) for x in L])[group]  # (R, 2, 3)
    bs = torch.stack([x.to(device=dev, dtype=torch.float64) for x in b])[group]  # (R, 2)
    dtype = starts[0].dtype

    def evaluate(D: Tensor, Lr: Tensor, br: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Residuals (R, 2), their gradients (R, 2, d) and the loss (R,) at ``D``, float64."""
        R = D.shape[0]
        f, grads = vjp(torch.cat([D, D]), torch.cat([Lr[:, 0], Lr[:, 1]]).to(dtype))
        res = (f[:R].to(torch.float64)[:, None] @ Lr.transpose(1, 2))[:, 0] + br
        Jr = torch.stack([grads[:R], grads[R:]], dim=1).to(torch.float64)
        return res, Jr, (res * res).sum(-1)

    D = project(torch.cat(list(starts)), r_).to(torch.float64)
    res, Jr, loss = evaluate(D.to(dtype), Ls, bs)
    damping = torch.full_like(loss, LM_DAMPING0)
    book = _Groups(group, -loss, keep=keep, max_steps=max_steps, tol=tol, patience=patience)
    if max_steps <= 0:
        return [(D[group == g].to(dtype), 0) for g in range(len(sizes))]
    while group.numel():
        cand = _ball_step(Jr, res, D, damping, r_)
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
    return [(book.out[g][0].to(dtype), book.out[g][1]) for g in range(len(sizes))]
