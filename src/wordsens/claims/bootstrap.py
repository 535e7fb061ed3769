"""The stratified bootstrap of the claims table and the statistics of grid points it resamples
(NumPy and pandas only): :func:`bootstrap` with one seeded generator per row (:func:`claim_rng`),
the grid points of a table (:func:`grid_points`, :func:`sim_units`) and the pooled statistics
(:func:`grid_means`, :func:`fraction_stat`, :func:`count_stat`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..seeds import derive_seed
from .slope import LEVEL

__all__ = [
    "GEN_GRID",
    "Stat",
    "bootstrap",
    "claim_rng",
    "count_stat",
    "fraction_stat",
    "grid_means",
    "grid_points",
    "plain",
    "scope_label",
    "sim_units",
    "slices",
]

GEN_GRID = ["figure", "map", "n", "N", "d"]  # a generalisation grid point; simulations are its units

Stat = Callable[[list[np.ndarray]], np.ndarray]


def claim_rng(seed: int, *parts: object) -> np.random.Generator:
    """The generator of one row of the table: ``PCG64(derive_seed(seed, "claims", *parts))``."""
    return np.random.Generator(np.random.PCG64(derive_seed(seed, "claims", *parts)))


def bootstrap(
    groups: Sequence[np.ndarray], stat: Stat, rng: np.random.Generator, resamples: int
) -> tuple[float, float, float]:
    """Point statistic and percentile interval.

    ``groups``: one array per grid point, units along axis 0. ``stat`` maps a list of arrays with a
    leading replicate axis (shape ``(R, m_g, ...)``) to ``R`` values; it is called once on the data
    (R = 1) and once on ``resamples`` stratified resamples (units drawn with replacement within
    each group).
    """
    point = float(stat([g[None] for g in groups])[0])
    reps = stat([g[rng.integers(0, len(g), size=(resamples, len(g)))] for g in groups])
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return point, math.nan, math.nan
    lo, hi = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return point, float(lo), float(hi)


def grid_means(groups: list[np.ndarray]) -> np.ndarray:
    """The mean of every group per replicate: shape ``(R, G)`` from groups of shape ``(R, m_g)``."""
    return np.stack([g.mean(axis=1) for g in groups], axis=1)  # (R, G)


def grid_points(frame: pd.DataFrame, by: list[str], value: str) -> list[tuple[tuple, np.ndarray]]:
    """(key, values) per grid point, sorted by key."""
    out = []
    for key, part in frame.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append((tuple(plain(k) for k in key), part[value].to_numpy(dtype=float)))
    return out


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


def sim_units(frame: pd.DataFrame, columns: dict[str, pd.Series]) -> list[np.ndarray]:
    """Per grid point, one row per simulation holding the sums of ``columns`` over its rows."""
    work = frame[[*GEN_GRID, "simulation"]].copy()
    for name, series in columns.items():
        work[name] = series.astype(float)
    names = list(columns)
    sums = work.groupby([*GEN_GRID, "simulation"], sort=True)[names].sum().reset_index()
    return [part[names].to_numpy() for _, part in sums.groupby(GEN_GRID, sort=True)]


def fraction_stat(groups: list[np.ndarray]) -> np.ndarray:
    """Pooled fraction over the groups of :func:`sim_units` with columns (hits, total)."""
    hits = sum(g[..., 0].sum(axis=1) for g in groups)
    total = sum(g[..., 1].sum(axis=1) for g in groups)
    return hits / total


def count_stat(groups: list[np.ndarray]) -> np.ndarray:
    """Pooled count over the groups of :func:`sim_units` (first column)."""
    return sum(g[..., 0].sum(axis=1) for g in groups)


def slices(frame: pd.DataFrame, cols: list[str]) -> Iterator[tuple[tuple, str, pd.DataFrame]]:
    """(key, scope label, rows) per value of ``cols``, sorted."""
    for key, part in frame.groupby(cols, sort=True, dropna=False):
        key = tuple(plain(k) for k in (key if isinstance(key, tuple) else (key,)))
        yield key, scope_label(cols, key), part
