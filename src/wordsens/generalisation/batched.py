"""The Delta searches of one simulation run together: ``ascend_groups`` is ``wordsens.search.engine.ascend``
run on several groups of restarts at once (one group per search: its own starts, loss, halving and
stopping rule), so that every step evaluates the functionals of all the searches still running in one
batched call instead of one small call per search. Each group follows exactly the rule of ``ascend``;
only the batch its rows are evaluated in differs (which can change the last bits of a matrix product).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ..search.engine import ETA0, ETA_MAX, HALVE_EVERY, project

Tensor = torch.Tensor

__all__ = ["ascend_groups"]

# value_and_grad(D (R, d), groups (R,) int64 group of each row) -> (values (R,), gradients (R, d))
ValueAndGrad = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


def _unit(x: Tensor) -> Tensor:
    return x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(1e-30)


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
    history = [[float(val[group == g].max())] for g in range(len(sizes))]
    steps = [0] * len(sizes)
    out: dict[int, tuple[Tensor, int]] = {}
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
        rows = []  # the rows kept for the next step, group by group
        for g in torch.unique_consecutive(group).tolist():
            idx = (group == g).nonzero()[:, 0]
            steps[g] += 1
            history[g].append(float(val[idx].max()))
            if steps[g] % HALVE_EVERY == 0 and idx.numel() > keep[g]:
                order = torch.argsort(val[idx], descending=True)[: max(keep[g], idx.numel() // 2)]
                idx = idx[order]
            h = history[g]
            stop = steps[g] >= max_steps or bool((eta[idx] < eta_min).all())
            if len(h) > patience and h[-1] - h[-patience - 1] <= tol * max(abs(h[-1]), 1e-30):
                stop = True
            if stop:
                out[g] = (D[idx], steps[g])
            else:
                rows.append(idx)
        if not rows:
            break
        idx = torch.cat(rows)
        D, val, grad, eta, mom, group = D[idx], val[idx], grad[idx], eta[idx], mom[idx], group[idx]
    return [out[g] for g in range(len(sizes))]
