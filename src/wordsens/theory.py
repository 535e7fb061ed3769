"""Closed-form expectations from the paper, for the figures and the claims table (NumPy only).

Kept free of torch and of the plotting libraries, so that ``wordsens claims`` and the workflow's
planning can use it without loading either.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rf_law"]


def rf_law(n: np.ndarray | float) -> np.ndarray:
    """Back-of-envelope RF word sensitivity ``(1 + sqrt(2/n)) / sqrt(n)`` (the paper, section 2).

    For RF with Gaussian ``V``, rows of norm ``sqrt(d)`` and ``k = D``, the supremum over changes of
    one word is about this value (0.12 at n = 90, 0.09 at n = 150), independent of ``d``: it decays
    like ``1/sqrt(n)``. It is the dotted line of Figure 2 (workflow/report/ws_figure.rst) and the
    expectation of the ``rf_law`` claim (:mod:`wordsens.claims`).
    """
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)
