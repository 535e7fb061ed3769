"""The grid points of a run's tables and their units (NumPy and pandas only): :func:`grid_points`,
:func:`slices` (the scopes of the claims table), :func:`plain` and :func:`scope_label`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

GEN_GRID = ["figure", "map", "n", "N", "d"]  # a generalisation grid point; simulations are its units


def grid_points(frame: pd.DataFrame, by: list[str], value: str) -> list[tuple[tuple, np.ndarray]]:
    """(key, values) per grid point, sorted by key."""
    return [(key, part[value].to_numpy(dtype=float)) for key, _, part in slices(frame, by)]


def plain(v: object) -> object:
    """A grouping key as a plain Python value: None for missing, int for integral numbers."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, (np.floating, float)) and float(v).is_integer():
        return int(v)  # a depth or a size read back as a float (CSV, nullable integers)
    return v


def scope_label(cols: Sequence[str], key: Sequence[object]) -> str:
    """``"d=192, L=2"`` for the columns and values of a grid slice (missing values left out)."""
    return ", ".join(f"{c}={k}" for c, k in zip(cols, key, strict=True) if k is not None)


def slices(frame: pd.DataFrame, cols: list[str]) -> Iterator[tuple[tuple, str, pd.DataFrame]]:
    """(key, scope label, rows) per value of ``cols``, sorted."""
    for key, part in frame.groupby(cols, sort=True, dropna=False):
        key = tuple(plain(k) for k in (key if isinstance(key, tuple) else (key,)))
        yield key, scope_label(cols, key), part
