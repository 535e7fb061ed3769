"""Closed-form expectations for the figures and the claims table (NumPy only): this project's
estimates, not formulas of the paper.

Kept free of torch and of the plotting libraries, so that ``wordsens claims`` and the workflow's
planning can use it without loading either.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rf_law"]


def rf_law(n: np.ndarray | float) -> np.ndarray:
    """Back-of-envelope RF word sensitivity ``(1 + sqrt(2/n)) / sqrt(n)``: this project's estimate
    (shared/paper.md, section 2), not a formula of the paper, which states only ``O(1/sqrt(n))``.

    For RF with Gaussian ``V``, rows of norm ``sqrt(d)`` and ``k = D``, the supremum over changes of
    one word is about this value (0.12 at n = 90, 0.09 at n = 150), independent of ``d``. Its
    log-log slope is not -1/2 on a finite grid (-0.558 over n = 90..150, -0.64 over 8..24:
    ``wordsens.claims.slope.law_slope``). Measured, the searched WS sits 1-3% below it from d = 64
    on and 4-6% below at d = 16..32 (docs/claims.md). It is the dotted line of Figure 2
    (workflow/report/ws_figure.rst) and the reference of the ``rf_slope`` and ``rf_law`` claims.
    """
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)
