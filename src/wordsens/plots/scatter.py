"""Scatter panels that show every point (NumPy only, no drawing): the range an axis should show when a
few runaway values would squeeze the rest into a strip (``on_scale``: the values beyond it are drawn
at the edge and counted), and the points of different series that would be drawn on one another
(``side_by_side``: their offsets, so that each series stays visible).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# A few values are off scale when they lie beyond the rest by more than OFF_SCALE_FACTOR times the
# rest's span (drawn, the rest would take less than 1 / (1 + OFF_SCALE_FACTOR) of the axis) and are
# at most OFF_SCALE_SHARE of the values (at least one); below MIN_VALUES values nothing is.
OFF_SCALE_FACTOR = 2.0
OFF_SCALE_SHARE = 0.2
MIN_VALUES = 5


def on_scale(values: Sequence[float] | np.ndarray, *, anchor: float | None = None) -> tuple[float | None, float | None]:
    """``(low, high)``: the smallest and largest values an axis should draw on scale, None on a side where
    every value can be; of the splits that leave values off scale (above), the one that leaves the most out.
    ``anchor``: a value the axis starts from (0 for an error or gamma_min): the span is measured from it,
    and nothing is off scale below it. NaN and infinite values are ignored."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    count = len(v)
    if count < MIN_VALUES:
        return None, None
    most = max(1, int(OFF_SCALE_SHARE * count))
    best: tuple[int, int] = (0, 0)
    for m_low in range(0, most + 1 if anchor is None else 1):
        for m_high in range(0, most + 1 - m_low):
            if m_low + m_high <= sum(best):
                continue
            kept = v[m_low : count - m_high]
            bottom = kept[0] if anchor is None else min(kept[0], anchor)
            span = kept[-1] - bottom
            if span <= 0:
                continue
            fence = OFF_SCALE_FACTOR * span
            if (m_high == 0 or v[count - m_high] > kept[-1] + fence) and (m_low == 0 or v[m_low - 1] < kept[0] - fence):
                best = (m_low, m_high)
    m_low, m_high = best
    return (float(v[m_low]) if m_low else None), (float(v[count - m_high - 1]) if m_high else None)


def side_by_side(
    x: np.ndarray, y: np.ndarray, series: Sequence[Any], *, x_span: float, y_span: float, within: float = 0.015
) -> tuple[np.ndarray, list[Any], int]:
    """Offsets (in marker widths: ..., -1, -0.5, 0, 0.5, 1, ...) that set points of different series
    side by side where they would be drawn on one another: points in one cell of a grid of
    ``within`` x the axes' spans (``x_span``, ``y_span``) that holds more than one series get the
    rank of their series among the cell's, centred; every other point 0. Returns the offsets, the
    series that coincide somewhere (in their order of ``series``) and how many points were moved."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    labels = list(series)
    offsets = np.zeros(len(labels))
    if not len(labels):
        return offsets, [], 0
    cells = zip(
        np.floor(x / (within * x_span or 1.0)).astype(np.int64),
        np.floor(y / (within * y_span or 1.0)).astype(np.int64),
        strict=True,
    )
    members: dict[tuple[int, int], list[int]] = {}
    for index, cell in enumerate(cells):
        members.setdefault(cell, []).append(index)
    order = {label: rank for rank, label in enumerate(dict.fromkeys(labels))}
    involved: set[Any] = set()
    moved = 0
    for indices in members.values():
        present = sorted({labels[i] for i in indices}, key=order.__getitem__)
        if len(present) < 2:
            continue
        involved |= set(present)
        rank = {label: r - (len(present) - 1) / 2 for r, label in enumerate(present)}
        for i in indices:
            offsets[i] = rank[labels[i]]
        moved += len(indices)
    return offsets, sorted(involved, key=order.__getitem__), moved
