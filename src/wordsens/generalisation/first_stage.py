"""The first stage of a generalisation simulation: ``theta* = pinv(Phi) Y`` and ``P phi`` with
``P = I - pinv(Phi) Phi``, never forming a p x p matrix, and ``Fit`` (how well it fits).

Two algorithms with the same result, chosen per training set by a float64 check:

* ``gram_interpolate`` (well-conditioned ``Phi`` of full row rank, the usual case): the N x N Gram
  matrix ``K = Phi Phi^T`` computed once in float32 (half the flops of a Householder QR of the p x N
  ``Phi^T``, at twice the speed, and only its lower block triangle), its eigendecomposition as a
  preconditioner, and iterative refinement of ``K c = [Y, Phi phi]`` whose residuals are computed in
  float64 from ``Phi`` itself (two passes over ``Phi`` per iteration): the result is float64-accurate
  (relative error about ``eps * cond(K)``, and ``cond(K)`` is capped), not float32. The extreme
  eigenvalues of ``K`` (``Fit.cond``) come from a float64 Rayleigh-Ritz step on the subspaces of the
  float32 extreme eigenvectors.
* ``qr_interpolate`` (everything else: rank-deficient or ill-conditioned training sets, N >= p, or a
  refinement that does not converge): a Householder QR of ``Phi^T`` and the SVD of its R factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

Tensor = torch.Tensor

__all__ = ["GRAM_MAX_COND", "INTERPOLATION_TOL", "Fit", "gram32", "gram_interpolate", "interpolate", "qr_interpolate"]

INTERPOLATION_TOL = 1e-6  # labels are +-1: a residual below this counts as interpolating
# The Gram path's limit on cond(K): float32 rounding perturbs K by ~1e-7 ||K|| (up to ~1e-6 at p ~ 1e5),
# so the refinement contracts by ~cond(K) * 1e-6 per step; beyond 1e4 the QR path is used.
GRAM_MAX_COND = 1e4
_RITZ = 8  # eigenvectors per end of the spectrum in the Rayleigh-Ritz step
_REFINE_STEPS = 30


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


def interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit]:
    """``theta* = pinv(Phi) Y`` and ``P phi = phi - pinv(Phi) (Phi phi)`` in float64 (``Phi`` (N, p)
    float64): ``gram_interpolate`` where its float64 checks pass, else ``qr_interpolate``.

    The cutoff is explicit: singular values ``s <= max(N, p) * eps * s_max`` count as zero (the
    default of ``torch.linalg.pinv`` and of the array API: below it a singular value cannot be told
    from rounding). The authors call ``numpy.linalg.pinv``, whose cutoff ``1e-15 * s_max`` is lower;
    on ill-conditioned training sets (RAF on BERT-like rows with N > d, repeated reviews) the two can
    differ along directions with singular values between the two cutoffs. Such sets get the min-norm
    least-squares solution instead of an error, and ``Fit`` records how well it fits.
    ``tests/test_generalisation.py`` checks the result against ``numpy.linalg.pinv`` and the two
    paths against each other.
    """
    return gram_interpolate(Phi, Y, phi) or qr_interpolate(Phi, Y, phi)


def gram32(Phi: Tensor, blocks: int = 4) -> Tensor:
    """``Phi Phi^T`` (N, N) from a float32 copy of ``Phi``, returned in float64: only the blocks on
    and below the diagonal of a ``blocks`` x ``blocks`` partition are multiplied (5/8 of the flops
    of one product at 4 blocks), the others mirrored."""
    P32 = Phi.to(torch.float32)
    N = P32.shape[0]
    K = torch.empty((N, N), dtype=torch.float32, device=Phi.device)
    edges = [N * b // blocks for b in range(blocks + 1)]
    for a in range(blocks):
        ra = slice(edges[a], edges[a + 1])
        for b in range(a + 1):
            rb = slice(edges[b], edges[b + 1])
            K[ra, rb] = P32[ra] @ P32[rb].T
            if a != b:
                K[rb, ra] = K[ra, rb].T
    return K.to(torch.float64)


def _times_phi_t(Phi: Tensor, c: Tensor) -> Tensor:
    """``Phi^T c`` for ``c`` (N, m) as (m, p): ``c^T Phi`` streams ``Phi`` in its own row-major layout."""
    return c.T @ Phi


def _times_phi(Phi: Tensor, V: Tensor) -> Tensor:
    """``Phi v`` for the rows ``v`` of ``V`` (m, p), as (N, m)."""
    return (V @ Phi.T).T


def gram_interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit] | None:
    """The first stage through the Gram matrix (module docstring), or None where a float64 check
    fails: ``Phi`` not of full row rank with ``cond(K) <= GRAM_MAX_COND`` (Rayleigh-Ritz estimate),
    or a refinement that does not reach float64 accuracy in ``_REFINE_STEPS`` steps. With
    ``cond(K) <= GRAM_MAX_COND`` every singular value is far above the cutoff of ``interpolate``:
    the rank is N, as the QR path finds."""
    N, p = Phi.shape
    if not 0 < N < p:  # N >= p: K is singular
        return None
    lam32, U32 = torch.linalg.eigh(gram32(Phi).to(torch.float32))
    if not float(lam32[0]) > 0 or float(lam32[-1]) > GRAM_MAX_COND * 10 * float(lam32[0]):
        return None
    U, lam = U32.to(torch.float64), lam32.to(torch.float64)

    def precondition(R: Tensor) -> Tensor:  # K~^-1 R
        return U @ ((U.T @ R) / lam[:, None])

    # Rayleigh-Ritz in float64 on the extreme eigenvectors of the float32 Gram matrix
    k = min(_RITZ, N)
    Q = torch.cat([torch.linalg.qr(V)[0] for V in (U[:, :k], U[:, N - k :])], dim=1)
    Z = _times_phi_t(Phi, Q)  # (2k, p): one pass over Phi for both ends
    H = Z @ Z.T
    lam_min, lam_max = float(torch.linalg.eigvalsh(H[:k, :k])[0]), float(torch.linalg.eigvalsh(H[k:, k:])[-1])
    if not (lam_min > 0 and lam_max <= GRAM_MAX_COND * lam_min):
        return None

    B = torch.stack([Y, _times_phi(Phi, phi[None])[:, 0]], dim=1)  # (N, 2)
    c = precondition(B)
    scale = torch.linalg.vector_norm(c, dim=0).clamp_min(1e-300)
    change = previous = math.inf
    for _ in range(_REFINE_STEPS):  # until the updates reach rounding level or stop shrinking
        dc = precondition(B - _times_phi(Phi, _times_phi_t(Phi, c)))
        c = c + dc
        change = float((torch.linalg.vector_norm(dc, dim=0) / scale).max())
        if not change > 1e-15 or change > 0.5 * previous:
            break
        previous = change
    if not change <= 1e-10:  # float64 accuracy not reached (the limit is ~eps * cond(K) <= 1e-12)
        return None
    TP = _times_phi_t(Phi, c)  # (2, p): theta* and pinv(Phi) Phi phi
    theta, pphi = TP[0], phi - TP[1]
    # a second pass removes what rounding left in the row space (as the QR path's second projection)
    Fq = _times_phi(Phi, torch.stack([theta, pphi]))  # (N, 2): Phi theta*, Phi pphi
    pphi = pphi - _times_phi_t(Phi, precondition(Fq[:, 1:]))[0]
    residual = float((Fq[:, 0] - Y).abs().max())
    fit = Fit(cond=lam_max / lam_min, rank=N, residual=residual, interpolates=residual <= INTERPOLATION_TOL)
    return theta, pphi, fit


def qr_interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit]:
    """The first stage for any ``Phi``: a Householder QR ``Phi^T = Q R`` (Q kept as its reflectors),
    then the SVD of the small ``R = U S V^T``, so ``pinv(Phi) = Q U S^+ V^T`` (cutoff: ``interpolate``)."""
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
