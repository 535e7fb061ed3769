"""The package's one least-squares log-log slope (NumPy only): :func:`ls_slope`, :func:`loglog_slope`
(with a t-interval, for the figures), :func:`law_slope` (the RF law's) and :func:`slope_coefficients`
(the slope as a linear combination of grid-point means, for :mod:`wordsens.claims.intervals`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..theory import rf_law
from .intervals import LEVEL, t_quantile


def ls_slope(x: np.ndarray, y: np.ndarray, strata: np.ndarray | None = None) -> np.ndarray:
    """Least-squares slope of ``y`` (m,) or (R, m) (replicates sharing the design) on ``x`` (m,) with an
    intercept per stratum (``strata`` (m,) labels; None: one): a scalar array or (R,); NaN where ``x`` does
    not vary within any stratum."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    _, idx = np.unique(np.zeros(len(x)) if strata is None else np.asarray(strata), return_inverse=True)
    onehot = np.zeros((len(x), int(idx.max()) + 1 if len(x) else 0))
    onehot[np.arange(len(x)), idx] = 1.0
    counts = onehot.sum(axis=0)
    xc = x - (x @ onehot / counts)[idx]
    yc = y - (y @ onehot / counts)[..., idx]
    sxx = float(xc @ xc)
    if sxx <= 0:
        return np.full(y.shape[:-1], np.nan)
    return (yc @ xc) / sxx


def loglog_slope(
    n: Sequence[float] | np.ndarray,
    ws: Sequence[float] | np.ndarray,
    *,
    strata: Sequence[object] | np.ndarray | None = None,
    level: float = LEVEL,
) -> tuple[float, float, float]:
    """:func:`ls_slope` of log WS on log n over every trial, with its ``level`` t-interval:
    (slope, low, high). NaN bounds without a residual degree of freedom, NaN slope with a single n."""
    x, y = np.log(np.asarray(n, dtype=float)), np.log(np.asarray(ws, dtype=float))
    groups = np.zeros(len(x)) if strata is None else np.asarray(strata)
    slope = float(ls_slope(x, y, groups))
    _, idx = np.unique(groups, return_inverse=True)
    df = len(x) - int(idx.max() if len(x) else 0) - 2
    if not np.isfinite(slope) or df < 1:
        return slope, math.nan, math.nan
    means_x = np.bincount(idx, weights=x) / np.bincount(idx)
    means_y = np.bincount(idx, weights=y) / np.bincount(idx)
    xc, yc = x - means_x[idx], y - means_y[idx]
    resid = yc - slope * xc
    se = math.sqrt(float(resid @ resid) / df / float(xc @ xc))
    half = t_quantile(0.5 + level / 2, df) * se
    return slope, slope - half, slope + half


def law_slope(n: Sequence[float] | np.ndarray, strata: Sequence[object] | np.ndarray | None = None) -> float:
    """The slope of the RF law, log ``rf_law(n)`` on log n, over the same n (and strata) as a fit:
    -0.558 on n = 90..150, -0.543 on 64..1024, -0.64 on the demo's 8..24, never -1/2 itself."""
    x = np.log(np.asarray(n, dtype=float))
    return float(
        ls_slope(x, np.log(rf_law(np.asarray(n, dtype=float))), None if strata is None else np.asarray(strata))
    )


def slope_coefficients(xs: np.ndarray, strata: np.ndarray, counts: Sequence[int]) -> np.ndarray:
    """The least-squares slope (an intercept per stratum) over every unit, written as
    ``sum_p c_p mean_p`` over grid points: ``c_p = m_p (x_p - xbar_s) / Sxx`` with ``x_p`` the point's x
    (log n), ``m_p`` its units, ``xbar_s`` the unit-weighted mean x of its stratum. All zero (the slope
    undefined) where x does not vary within any stratum."""
    x = np.asarray(xs, dtype=float)
    m = np.asarray(counts, dtype=float)
    s = np.asarray(strata)
    centred = np.empty_like(x)
    for label in np.unique(s):
        at = s == label
        centred[at] = x[at] - float((m[at] * x[at]).sum() / m[at].sum())
    sxx = float((m * centred**2).sum())
    return np.zeros_like(x) if sxx <= 0 else m * centred / sxx
