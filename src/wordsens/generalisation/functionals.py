"""The linear algebra of one generalisation simulation (``wordsens.generalisation.core``): the
first-stage solve and the functionals of the perturbed features that the Delta search evaluates.

``interpolate`` gives ``theta* = pinv(Phi) Y`` and ``P phi`` (``P = I - pinv(Phi) Phi``) without a
p x p matrix, and ``Fit`` records how well the first stage fits. ``RFFunctionals`` and
``AttentionFunctionals`` evaluate ``phi(X^i(Delta))`` against the three vectors ``theta*``,
``phi(X)`` and ``P phi(X)`` for a batch of Delta, from the moved token's block (RF) or row and
column of the scores (attention maps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import maps
from ..search.attention import AttentionProblem
from ..search.rf import FirstLayer

Tensor = torch.Tensor

__all__ = ["INTERPOLATION_TOL", "AttentionFunctionals", "Fit", "RFFunctionals", "interpolate"]


class RFFunctionals:
    """``relu(u + B Delta) . v`` for the three vectors ``v`` (rows of ``V3``)."""

    def __init__(self, B: Tensor, u64: Tensor, V3: Tensor) -> None:
        self.layer = FirstLayer(B, u64, with_gram=False)
        self.V3 = V3.to(B.dtype).T.contiguous()  # (k, 3)
        self.V3_64 = V3.to(torch.float64)
        self.d = B.shape[1]
        self.dtype = B.dtype

    def __call__(self, D: Tensor) -> Tensor:
        return self.layer.forward(D) @ self.V3

    def exact(self, deltas: Tensor) -> Tensor:
        return self.layer.forward64(deltas) @ self.V3_64.T

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.layer.singular_starts(restarts, math.sqrt(self.d), gen)


class AttentionFunctionals:
    """``out' . v`` for attention maps: ``out'_j = (1 - w_j) M_j + w_j x_i'`` for ``j != i``
    (one row and one column of the scores change; see ``wordsens.search.attention.AttentionProblem``)."""

    def __init__(self, X: Tensor, W: Tensor, position: int, kind: str, V3: Tensor) -> None:
        self.p = AttentionProblem(X, W, position, kind)
        n, d = X.shape
        V = V3.reshape(3, n, d).to(X.dtype)
        self.V_rows = V.reshape(3 * n, d).T.contiguous()  # (d, 3n)
        self.MV = (self.p.M[None] * V).sum(-1) * self.p.mask  # (3, n): M_j . v_j
        self.V_i = V[:, position].T.contiguous()  # (d, 3)
        self.V3_64 = V3.to(torch.float64)
        self.n, self.d = n, d
        self.dtype = X.dtype

    def __call__(self, D: Tensor) -> Tensor:
        p = self.p
        xi = p.xi + D
        w = p.column_weights(xi @ p.P.T) * p.mask  # (R, n)
        xV = (xi @ self.V_rows).reshape(-1, 3, self.n)  # (R, 3, n)
        others = (self.MV[None] + w[:, None, :] * (xV - self.MV[None])) * p.mask
        return others.sum(-1) + p.moved_row(D) @ self.V_i

    def exact(self, deltas: Tensor) -> Tensor:
        X = self.p.moved_samples(deltas)
        return maps.apply(self.p.map_name, X, self.p.W64).flatten(1) @ self.V3_64.T

    def starts(self, restarts: int, gen: torch.Generator) -> Tensor:
        return self.p.starts(restarts, gen)


@dataclass(frozen=True)
class Fit:
    """How the first stage fitted its training set (the min-norm least-squares solution).

    ``cond``: condition number of the Gram matrix ``K = Phi Phi^T`` (the squared ratio of the
    extreme singular values of ``Phi``; inf when one falls below the cutoff: K is singular);
    ``rank``: singular values of ``Phi`` kept by the cutoff; ``residual``: ``max |Phi theta* - Y|``;
    ``interpolates``: the residual is at most ``INTERPOLATION_TOL``.
    """

    cond: float
    rank: int  # singular values of Phi above the cutoff of ``interpolate``
    residual: float
    interpolates: bool


INTERPOLATION_TOL = 1e-6  # labels are +-1: a residual below this counts as interpolating


def interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit]:
    """``theta* = pinv(Phi) Y`` and ``P phi = phi - pinv(Phi) (Phi phi)`` in float64, never forming a
    p x p matrix: a Householder QR ``Phi^T = Q R`` (Q kept as its reflectors), then the SVD of the small
    ``R = U S V^T``, so ``pinv(Phi) = Q U S^+ V^T``.

    The cutoff is explicit: singular values ``s <= max(N, p) * eps * s_max`` count as zero (the
    default of ``torch.linalg.pinv`` and of the array API: below it a singular value cannot be told
    from rounding). The authors call ``numpy.linalg.pinv``, whose cutoff ``1e-15 * s_max`` is lower;
    on ill-conditioned training sets (RAF on BERT-like rows with N > d, repeated reviews) the two can
    differ along directions with singular values between the two cutoffs. Such sets get the min-norm
    least-squares solution instead of an error, and ``Fit`` records how well it fits.
    ``tests/test_generalisation.py`` checks the result against ``numpy.linalg.pinv``.
    """
    N, p = Phi.shape
    m = min(N, p)
    reflectors, tau = torch.geqrf(Phi.T)  # one (p, N) copy, column-major: Phi's own row-major layout
    U, S, Vh = torch.linalg.svd(reflectors[:m].triu(), full_matrices=False)  # R = U diag(S) Vh
    s_max = float(S[0])
    if not s_max > 0:
        raise ValueError("every training feature vector is zero (all ReLUs inactive?): nothing can be learned")
    keep = max(N, p) * torch.finfo(torch.float64).eps * s_max < S
    s_inv = torch.where(keep, 1.0 / torch.where(keep, S, torch.ones_like(S)), torch.zeros_like(S))
    rank = int(keep.sum())

    def q_times(x: Tensor) -> Tensor:  # Q_m x: (m,) -> (p,)
        full = torch.zeros((p, 1), dtype=x.dtype, device=x.device)
        full[:m, 0] = x
        return torch.ormqr(reflectors, tau, full)[:, 0]

    def qt_times(v: Tensor) -> Tensor:  # Q_m^T v: (p,) -> (m,)
        return torch.ormqr(reflectors, tau, v[:, None], transpose=True)[:m, 0]

    theta = q_times(U @ (s_inv * (Vh @ Y)))

    def project(v: Tensor) -> Tensor:  # (I - pinv(Phi) Phi) v: remove the row-space component
        coords = U.T @ qt_times(v)
        return v - q_times(U @ (coords * keep))

    pphi = project(project(phi))  # the second pass removes what rounding left in the span
    residual = float((Phi @ theta - Y).abs().max())
    cond = float((S[0] / S[-1]) ** 2) if rank == N else math.inf  # of the Gram matrix Phi Phi^T
    return theta, pphi, Fit(cond=cond, rank=rank, residual=residual, interpolates=residual <= INTERPOLATION_TOL)
