"""The first stage of a generalisation simulation: ``theta* = pinv(Phi) Y`` and ``P phi`` (``P = I - pinv(Phi)
Phi``) without a p x p matrix, and ``Fit``. Two algorithms with one result, chosen per training set by a float64
check: ``gram_interpolate`` (the usual case) and ``qr_interpolate``; where the features dominate the cost, a
setup computes them in float32 and ``interpolate32`` keeps them where ``RoundingCheck`` accepts the rounding
(docs/methods.md, "Generalisation without p x p matrices").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from ..linalg import add_lower_gram_, mirror_lower
from ..search.engine import chunked_rows64

Tensor = torch.Tensor


INTERPOLATION_TOL = 1e-6  # labels are +-1: a residual below this counts as interpolating
# The Gram path's limit on cond(K): its float64 refinement stops at about eps * cond(K) / 4, which must stay
# below the 1e-10 it accepts (docs/benchmarks.md, "Where the constants come from"); beyond, the QR path.
GRAM_MAX_COND = 1e6
_RITZ = 8  # eigenvectors per end of the spectrum in the Rayleigh-Ritz step
_REFINE_STEPS = 30
# float32 features (``interpolate32``): tried where the float64 features cost at least this many flops, kept
# where every change ``RoundingCheck`` estimates from ``FEATURES32_ROWS`` samples is at most ``FEATURES32_TOL``
# (a tenth of the regression tests' 1e-5).
FEATURES32_MIN_FLOPS = 1e10
FEATURES32_TOL = 1e-6
FEATURES32_ROWS = 8


@dataclass(frozen=True)
class Fit:
    """How the first stage (the min-norm least-squares solution) fitted its training set: ``cond`` of ``K = Phi
    Phi^T`` (inf: singular), ``residual`` ``max |Phi theta* - Y|``, ``interpolates`` (residual at most
    ``INTERPOLATION_TOL``), the dtype of the training ``features`` (float32: the residual of the rounded ones)."""

    cond: float
    rank: int  # singular values of Phi above the cutoff of ``interpolate``
    residual: float
    interpolates: bool
    features: str = "float64"


def interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit]:
    """``theta* = pinv(Phi) Y`` and ``P phi = phi - pinv(Phi) (Phi phi)`` in float64 (``Phi`` (N, p) float64):
    ``gram_interpolate`` where its float64 checks pass, else ``qr_interpolate``. Singular values ``s <= max(N,
    p) * eps * s_max`` count as zero (``torch.linalg.pinv``'s cutoff)."""
    return gram_interpolate(Phi, Y, phi) or qr_interpolate(Phi, Y, phi)


_GRAM_COLUMNS = 4096  # feature columns centred and cast to float32 at a time by ``gram``


def gram(Phi: Tensor) -> Tensor:
    """``K = Phi Phi^T`` (N, N) in float64 for ``Phi`` (N, p), its products in float32 on the centred rows
    (``m``: the float32 mean row, ``a = Phi m - ||m||^2 1``), so that rounding is relative to them::

        K = (Phi - 1 m^T)(Phi - 1 m^T)^T + a 1^T + 1 a^T + ||m||^2 1 1^T"""
    N, p = Phi.shape
    ones = torch.ones((N, 1), dtype=torch.float64, device=Phi.device)
    m = (_times_phi_t(Phi, ones)[0] / N).to(torch.float32).to(torch.float64)  # one float64 pass, no copy
    mm = float(m @ m)
    a = _times_phi(Phi, m[None])[:, 0] - mm
    shift = m.to(Phi.dtype)
    K32 = torch.zeros((N, N), dtype=torch.float32, device=Phi.device)
    for s in range(0, p, _GRAM_COLUMNS):
        add_lower_gram_(K32, (Phi[:, s : s + _GRAM_COLUMNS] - shift[s : s + _GRAM_COLUMNS]).to(torch.float32))
    return mirror_lower(K32).to(torch.float64) + a[:, None] + a[None, :] + mm


def _times_phi_t(Phi: Tensor, c: Tensor) -> Tensor:
    """``Phi^T c`` for ``c`` (N, m) as (m, p), in ``Phi``'s row-major layout; float64 products of float32
    features too, a few rows cast at a time (no float64 copy of ``Phi``)."""
    if Phi.dtype == c.dtype:
        return c.T @ Phi
    out = torch.zeros((c.shape[1], Phi.shape[1]), dtype=c.dtype, device=Phi.device)

    def add(rows: slice, block: Tensor) -> None:
        out.addmm_(c[rows].T, block)

    chunked_rows64(Phi, add)
    return out


def _times_phi(Phi: Tensor, V: Tensor) -> Tensor:
    """``Phi v`` for the rows ``v`` of ``V`` (m, p), as (N, m); float64 products of float32 features too."""
    if Phi.dtype == V.dtype:
        return (V @ Phi.T).T
    out = torch.empty((Phi.shape[0], V.shape[0]), dtype=V.dtype, device=Phi.device)

    def fill(rows: slice, block: Tensor) -> None:
        out[rows] = block @ V.T

    chunked_rows64(Phi, fill)
    return out


def gram_interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit] | None:
    """The first stage through the float32 Gram matrix refined to float64 accuracy, or None where ``cond(K)``
    exceeds ``GRAM_MAX_COND`` (Rayleigh-Ritz estimate) or the refinement does not converge; where it succeeds
    the rank is N, as the QR path finds."""
    sol = _gram_solve(Phi, Y, phi)
    return None if sol is None else (sol.theta, sol.pphi, sol.fit)


@dataclass(frozen=True)
class _GramSolution:
    """``gram_interpolate``'s result and what ``rounding_check`` needs: ``coef`` (N, 2) = ``K^-1 [Y, Phi phi]``,
    K's extreme Ritz values ``lam`` (2,), their unit vectors ``u`` (2, N) and ``w = Phi^T u`` (2, p)."""

    theta: Tensor
    pphi: Tensor
    fit: Fit
    coef: Tensor
    lam: Tensor
    u: Tensor
    w: Tensor


def _gram_solve(Phi: Tensor, Y: Tensor, phi: Tensor) -> _GramSolution | None:
    """``gram_interpolate`` for ``Phi`` (N, p), float64 or float32 (products with float64 vectors in float64);
    None where N >= p."""
    N, p = Phi.shape
    if not 0 < N < p:
        return None
    lam, U = torch.linalg.eigh(gram(Phi))
    if not float(lam[0]) > 0 or float(lam[-1]) > GRAM_MAX_COND * 10 * float(lam[0]):
        return None

    def precondition(R: Tensor) -> Tensor:  # K~^-1 R
        return U @ ((U.T @ R) / lam[:, None])

    # Rayleigh-Ritz in float64 on the extreme eigenvectors of the Gram matrix from float32 products
    k = min(_RITZ, N)
    Q = torch.cat([torch.linalg.qr(V)[0] for V in (U[:, :k], U[:, N - k :])], dim=1)
    B = torch.stack([Y, _times_phi(Phi, phi[None])[:, 0]], dim=1)  # (N, 2)
    c = precondition(B)
    ZT = _times_phi_t(Phi, torch.cat([Q, c], dim=1))  # one pass over Phi for both ends and Phi^T c
    Z, T = ZT[: 2 * k], ZT[2 * k :]  # T = Phi^T c (2, p), kept up to date below
    H = Z @ Z.T
    lam_min, lam_max = float(torch.linalg.eigvalsh(H[:k, :k])[0]), float(torch.linalg.eigvalsh(H[k:, k:])[-1])
    if not (lam_min > 0 and lam_max <= GRAM_MAX_COND * lam_min):
        return None
    low, high = torch.linalg.eigh(H[:k, :k])[1][:, 0], torch.linalg.eigh(H[k:, k:])[1][:, -1]
    u = torch.stack([Q[:, :k] @ low, Q[:, k:] @ high])  # the extreme Ritz vectors (2, N)
    w = torch.stack([low @ Z[:k], high @ Z[k:]])  # their images Phi^T u (2, p)

    scale = torch.linalg.vector_norm(c, dim=0).clamp_min(1e-300)
    change = previous = math.inf
    for _ in range(_REFINE_STEPS):  # until the updates reach rounding level or stop shrinking
        R = B - _times_phi(Phi, T)
        dc = precondition(R)
        change = float((torch.linalg.vector_norm(dc, dim=0) / scale).max())
        if not change > 1e-15 or change > 0.5 * previous:
            break  # c is within ~change of the solution: this last update is not worth its pass
        c = c + dc
        T = T + _times_phi_t(Phi, dc)
        previous = change
    else:
        R = B - _times_phi(Phi, T)
    if not change <= 1e-10:  # float64 accuracy not reached (the limit is ~eps * cond(K) / 4 <= 6e-11)
        return None
    theta, pphi = T[0], phi - T[1]  # theta* and P phi = phi - pinv(Phi) Phi phi
    # a second projection removes what rounding left in the row space (as the QR path's), from Phi P phi
    # computed anew: R[:, 1] = Phi phi - Phi T[1] is the same in exact arithmetic, but its rounding is
    # relative to ||phi||, not to ||P phi||, which can be far smaller (phi near the span of the rows)
    pphi = pphi - _times_phi_t(Phi, precondition(_times_phi(Phi, pphi[None])))[0]
    residual = float(R[:, 0].abs().max())  # R[:, 0] = Y - Phi theta*: the residual of the final c
    fit = Fit(cond=lam_max / lam_min, rank=N, residual=residual, interpolates=residual <= INTERPOLATION_TOL)
    lams = torch.tensor([lam_min, lam_max], dtype=torch.float64, device=Phi.device)
    return _GramSolution(theta, pphi, fit, c, lams, u, w)


# --------------------------------------------------------------------------- float32 features


def float32_features_pay(flops: float) -> bool:
    """Whether float64 features of ``flops`` get float32 features first (``interpolate32``)."""
    return flops >= FEATURES32_MIN_FLOPS


def check_rows(N: int) -> Tensor:
    """The training samples ``rounding_check`` recomputes in float64: ``FEATURES32_ROWS`` (at most N) evenly
    spaced indices (the samples are independent: a fair choice)."""
    s = min(N, FEATURES32_ROWS)
    return torch.tensor([(2 * j + 1) * N // (2 * s) for j in range(s)], dtype=torch.int64)


@dataclass(frozen=True)
class RoundingCheck:
    """How far the float32 rounding of the training features moves the first stage, to first order: the
    change of ``t0`` (label units), the relative changes of ``cond(K)`` and ``||P phi||^2``, and the ``rows``
    recomputed in float64; ``passed``: every estimate at most ``FEATURES32_TOL``."""

    t0: float
    cond: float
    pphi2: float
    rows: int

    @property
    def passed(self) -> bool:
        return all(x <= FEATURES32_TOL for x in (self.t0, self.cond, self.pphi2))  # NaN fails


def _sum_estimate(a: Tensor, z: Tensor) -> Tensor:
    """An estimate of ``|sum_j a_j z_j|`` over all N rows (``a`` (N, m)) from ``z`` (s, m) measured on s of them,
    their roundings independent: ``|sum_j a_j| |mean z| + ||a||_2 rms z``."""
    return a.sum(0).abs() * z.mean(0).abs() + torch.linalg.vector_norm(a, dim=0) * z.pow(2).mean(0).sqrt()


def rounding_check(sol: _GramSolution, rounding: Tensor, rows: Tensor) -> RoundingCheck:
    """``RoundingCheck`` of a first stage ``sol`` solved for rounded features ``Phi + E``, from the rounding ``E``
    measured on the training samples ``rows`` (``rounding`` (s, p) float64), with ``c = K^-1 Y``, ``v = K^-1 Phi
    phi`` and ``lam`` an extreme eigenvalue of K, ``u`` its unit vector (docs/benchmarks.md, "Accuracy of the
    float32 training features")::

        d t0 = c^T E (P phi) - v^T E theta*,   d ||P phi||^2 = -2 v^T E (P phi),   d lam = 2 u^T E (Phi^T u)"""
    z = rounding @ torch.stack([sol.pphi, sol.theta, sol.w[0], sol.w[1]]).T  # (s, 4): E_j . b
    c, v = sol.coef[:, 0], sol.coef[:, 1]
    t0 = _sum_estimate(c[:, None], z[:, :1]) + _sum_estimate(v[:, None], z[:, 1:2])
    pphi2 = 2 * _sum_estimate(v[:, None], z[:, :1]) / (sol.pphi @ sol.pphi)
    dlam = 2 * _sum_estimate(sol.u.T, z[:, 2:]) / sol.lam  # relative changes of lam_min, lam_max
    return RoundingCheck(t0=float(t0), cond=float(dlam.sum()), pphi2=float(pphi2), rows=int(rows.numel()))


def interpolate32(
    Phi32: Tensor, Y: Tensor, phi: Tensor, exact_rows: Callable[[Tensor], Tensor]
) -> tuple[Tensor, Tensor, Fit, RoundingCheck] | None:
    """The first stage for float32 features ``Phi32`` (N, p) by the Gram path (None where it declines), with
    the ``RoundingCheck`` against the float64 features ``exact_rows(rows)`` of the samples ``check_rows(N)``."""
    sol = _gram_solve(Phi32, Y, phi)
    if sol is None:
        return None
    rows = check_rows(Phi32.shape[0]).to(Phi32.device)
    check = rounding_check(sol, Phi32[rows].to(torch.float64) - exact_rows(rows).to(torch.float64), rows)
    return sol.theta, sol.pphi, replace(sol.fit, features="float32"), check


def qr_interpolate(Phi: Tensor, Y: Tensor, phi: Tensor) -> tuple[Tensor, Tensor, Fit]:
    """The first stage for any ``Phi``: ``pinv(Phi) = Q U S^+ V^T`` from a Householder QR ``Phi^T = Q R`` and
    the SVD ``R = U S V^T`` (cutoff: ``interpolate``)."""
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
