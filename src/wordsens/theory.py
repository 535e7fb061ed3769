"""Closed-form expectations for the figures and the claims table: this project's estimates, not formulas of
the paper. NumPy only, so that ``wordsens claims`` and the workflow's planning load neither torch nor the
plotting libraries.
"""

from __future__ import annotations

import math

import numpy as np

TW1_MEAN = -1.2065335745820  # the mean of the Tracy-Widom law of order 1 (largest eigenvalue, real Wishart)


def rf_law(n: np.ndarray | float) -> np.ndarray:
    """RF's word sensitivity, about ``(1 + sqrt(2/n)) / sqrt(n)`` (0.12 at n = 90) whatever ``d``, for
    Gaussian ``V``, rows of norm ``sqrt(d)`` and ``k = D``: this project's estimate (shared/paper.md,
    section 2), not a formula of the paper, which states only ``O(1/sqrt(n))``. Its log-log slope is not
    -1/2 on a finite grid (``wordsens.claims.slope.law_slope``). The dotted line of Figure 2, the reference
    of the claims ``rf_slope`` and ``rf_law``."""
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)


def rf_finite_factor(n: np.ndarray | float, d: np.ndarray | float) -> np.ndarray:
    """``rf_law_finite(n, d) / rf_law(n)``: the first-order finite-size corrections of the law (below 1;
    docs/claims.md derives both): the edge of the largest singular value of the active block (``m = k / 2``
    rows), ``E[s_max] = sqrt(m) + sqrt(d) + TW1_MEAN / 2 (1/sqrt(m) + 1/sqrt(d))^(1/3)`` (Johnstone's
    Tracy-Widom limit), a factor ``1 - tau``; and the units a move takes across 0, a factor
    ``1 - rf_law(n) / (3 pi)``. 0.985 at (n, d) = (90, 192), 0.91 at (8, 16).
    """
    n = np.asarray(n, dtype=float)
    d = np.asarray(d, dtype=float)
    m = n * d / 2
    tau = -TW1_MEAN / 2 * (1 / np.sqrt(m) + 1 / np.sqrt(d)) ** (1 / 3) / (np.sqrt(m) + np.sqrt(d))
    return (1 - tau) * (1 - rf_law(n) / (3 * math.pi))


def rf_law_finite(n: np.ndarray | float, d: np.ndarray | float) -> np.ndarray:
    """The RF law at a finite size (``k = D = n d``): ``rf_law(n) * rf_finite_factor(n, d)``; the level
    the claim ``rf_law`` judges a run's RF rows against."""
    return rf_law(n) * rf_finite_factor(n, d)
