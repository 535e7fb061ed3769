"""The levels two claims judge a map's mean word sensitivity against (NumPy only): RF's finite-size
law with the band its measured accuracy allows (:func:`rf_level_band`, claim ``rf_law``), and the
level this project's search reaches for RAF on Gaussian rows (:func:`raf_reference`, claim
``raf_level``). docs/claims.md states how each was measured and the smallest effect each claim fails on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..theory import rf_finite_factor

# rf_law: mean WS / rf_law_finite(n, d) within 1 -+ tol(n, d), tol = RF_LEVEL_TOL + RF_LEVEL_SCALE (1 - f)^2,
# f = rf_finite_factor(n, d): the error of first-order corrections is of second order in them (the search
# also bends Delta away from the units that cross zero, most at small n). RF_LEVEL_SCALE is the envelope
# of the errors measured at d = 4..768, n = 8..150, RF_LEVEL_TOL a floor where the corrections vanish
# (docs/claims.md has the measurement).
RF_LEVEL_TOL = 0.01
RF_LEVEL_SCALE = 10.0

# raf_level: RAF's mean WS on Gaussian rows (this project's default search, 10 trials per point, seed 0:
# benchmarks/claims_noise.py), per d at the n of RAF_REFERENCE_N; mean WS / reference in RAF_LEVEL_BAND.
RAF_REFERENCE_N = (10, 20, 50, 100, 150, 200, 250)
RAF_REFERENCE = {
    192: (3.149, 3.129, 3.016, 2.864, 2.742, 2.620, 2.542),
    384: (3.655, 3.620, 3.828, 3.651, 3.560, 3.544, 3.492),
    768: (4.044, 4.512, 4.621, 4.659, 4.747, 4.503, 4.552),
}
RAF_LEVEL_BAND = (0.8, 1.25)


def rf_level_tolerance(n: Sequence[float] | np.ndarray, d: Sequence[float] | np.ndarray) -> np.ndarray:
    """The half-width of ``rf_law``'s band at each grid point (n, d): ``RF_LEVEL_TOL + RF_LEVEL_SCALE
    (1 - rf_finite_factor(n, d))^2``."""
    f = rf_finite_factor(np.asarray(n, dtype=float), np.asarray(d, dtype=float))
    return RF_LEVEL_TOL + RF_LEVEL_SCALE * (1 - f) ** 2


def rf_level_band(n: Sequence[float] | np.ndarray, d: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """The band of the claim ``rf_law`` for a statistic pooled over grid points (n, d): ``1 -+ tol``,
    ``tol`` the mean of :func:`rf_level_tolerance` over the points."""
    tol = float(np.mean(rf_level_tolerance(n, d)))
    return (1 - tol, 1 + tol)


def raf_reference(n: float, d: float) -> float:
    """RAF's mean WS on Gaussian rows at (n, d) (``RAF_REFERENCE``), linear in (log n, log d) between the
    measured points; NaN outside them (n in [10, 250], d in [192, 768])."""
    ns, ds = np.log(RAF_REFERENCE_N), sorted(RAF_REFERENCE)
    if not (ns[0] <= math.log(n) <= ns[-1] and ds[0] <= d <= ds[-1]):
        return math.nan
    at_d = {k: float(np.interp(math.log(n), ns, np.log(RAF_REFERENCE[k]))) for k in ds}
    logs = np.log(ds)
    return float(math.exp(np.interp(math.log(d), logs, [at_d[k] for k in ds])))
