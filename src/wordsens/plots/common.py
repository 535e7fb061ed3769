"""What every figure shares: map labels from the registry, atomic saving, and the notes naming the
grid points a figure is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ..io import atomic_path
from ..maps import registry

__all__ = ["map_label", "mark_not_run", "not_run_note", "save"]


def map_label(name: str) -> str:
    """A map's plot label, from the registry (``wordsens.maps.registry``: one place for every map)."""
    return registry.get(name).label


def save(fig: plt.Figure, paths: Sequence[str | Path], dpi: int) -> None:
    """Write ``fig`` to every path (format from the suffix), atomically."""
    for path in paths:
        atomic_path(path, partial(_savefig, fig, fmt=Path(path).suffix.lstrip("."), dpi=dpi))
    plt.close(fig)


def _savefig(fig: plt.Figure, target: Path, *, fmt: str, dpi: int) -> None:
    fig.savefig(target, format=fmt, dpi=dpi, bbox_inches="tight")


def not_run_note(points: Sequence[dict[str, Any]], keys: Sequence[str], *, most: int = 6) -> str:
    """'not run: L=8 n=80 (needs 99.4 GB)' lines for grid points left out (``wordsens.pipeline.Grid.left_out``)."""
    lines = []
    for point in points:
        values = " ".join(f"{key}={point[key]}" for key in keys if point.get(key) is not None)
        lines.append(f"{values} (needs {point['needs_gb']:g} GB)")
    if len(lines) > most:
        lines = [*lines[: most - 1], f"and {len(lines) - most + 1} more"]
    return "not run: " + "\n".join(lines) if lines else ""


def mark_not_run(ax: plt.Axes, note: str) -> None:
    """The note under the panel's axis label, clear of the curves and the legend."""
    ax.text(0.0, -0.2, note, transform=ax.transAxes, fontsize="x-small", va="top", ha="left", color="dimgray")
