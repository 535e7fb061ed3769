"""What every figure shares: its theme, colours and atomic saving with the run's stamp
(``wordsens.plots.stamp.run_stamp``), map labels and laws from the registry, and the notes under a panel
(the grid points it is missing, what it draws off scale or side by side) below its axis labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.backend_bases import RendererBase
from matplotlib.transforms import Bbox

from ..io import atomic_path
from ..maps import registry


def stamp_figure(fig: plt.Figure, stamp: str | None) -> None:
    """The stamp above the top-left corner of everything drawn (titles and notes included), so that
    it hides nothing and nothing hides it; saving with ``bbox_inches="tight"`` keeps it."""
    if not stamp:
        return
    box = fig.get_tightbbox()  # inches, with a renderer of its own
    width, height = fig.get_figwidth(), fig.get_figheight()
    fig.text(
        box.x0 / width,
        box.y1 / height + 0.01,
        stamp,
        ha="left",
        va="bottom",
        fontsize="small",
        color="darkred",
        bbox={"boxstyle": "round", "facecolor": "#fff3cd", "edgecolor": "darkred"},
        label="stamp",
    )


def map_label(name: str) -> str:
    """A map's plot label, from the registry (``wordsens.maps.registry``: one place for every map)."""
    return registry.get(name).label


def map_law(name: str) -> tuple[Callable[[Any], Any], str] | None:
    """The law a map's word sensitivity follows and its legend label (``MapSpec.law``, ``law_label``; RF:
    ``wordsens.theory.rf_law``); None for a map without one (or unregistered)."""
    if name not in registry.names() or registry.get(name).law is None:
        return None
    spec = registry.get(name)
    return registry.resolve(spec.law), spec.law_label or f"{spec.label} law"  # type: ignore[arg-type]


def hue_of(name: str, frame: Any) -> str:
    """The column a map's curves are coloured by: its first swept option (``MapSpec.sweep``: DRF's depth)
    where the table has values of it, else d."""
    sweep = registry.get(name).sweep if name in registry.names() else ()
    return next((key for key in sweep if key in frame and frame[key].notna().any()), "d")


def point_keys(name: str) -> list[str]:
    """The keys that name a map's grid points in a "not run" note: d, n and its swept options."""
    return ["d", "n", *(registry.get(name).sweep if name in registry.names() else ())]


def save(fig: plt.Figure, paths: Sequence[str | Path], dpi: int, *, stamp: str | None = None) -> None:
    """Write ``fig`` to every path (format from the suffix), atomically, with the run's ``stamp``, then
    close it."""
    stamp_figure(fig, stamp)
    for path in paths:
        atomic_path(path, partial(_savefig, fig, fmt=Path(path).suffix.lstrip("."), dpi=dpi))
    plt.close(fig)


def start(settings: dict[str, Any], *grid: int, **subplots: Any) -> tuple[plt.Figure, Any]:
    """A figure in the theme of the plot ``settings`` (``context``): ``plt.subplots(*grid, **subplots)``."""
    sns.set_theme(context=settings.get("context", "paper"), style="whitegrid")
    return plt.subplots(*grid, **subplots)


def colours_of(keys: Sequence[Any], settings: dict[str, Any]) -> dict[Any, Any]:
    """A colour of the settings' ``palette`` for each of ``keys``, in order."""
    return dict(zip(keys, sns.color_palette(settings.get("palette", "colorblind"), len(keys)), strict=True))


def finish(fig: plt.Figure, paths: Sequence[str | Path], settings: dict[str, Any], **layout: Any) -> plt.Figure:
    """``fig`` laid out (``tight_layout(**layout)``) and saved at the settings' dpi with their stamp."""
    fig.tight_layout(**layout)
    save(fig, paths, int(settings.get("dpi", 150)), stamp=settings.get("stamp"))
    return fig


def _savefig(fig: plt.Figure, target: Path, *, fmt: str, dpi: int) -> None:
    fig.savefig(target, format=fmt, dpi=dpi, bbox_inches="tight")


def not_run_note(points: Sequence[dict[str, Any]], keys: Sequence[str], *, most: int = 6) -> str:
    """'not run: L=8 n=80 (needs 99.4 GB)' lines for grid points left out (``wordsens.pipeline.Grid.left_out``);
    '(needs ~1.7 h)' for points left out by ``limits.max_job_hours``."""
    lines = []
    for point in points:
        values = " ".join(f"{key}={point[key]}" for key in keys if point.get(key) is not None)
        need = f"~{point['needs_hours']:g} h" if point.get("needs_hours") is not None else f"{point['needs_gb']:g} GB"
        lines.append(f"{values} (needs {need})")
    if len(lines) > most:
        lines = [*lines[: most - 1], f"and {len(lines) - most + 1} more"]
    return "not run: " + "\n".join(lines) if lines else ""


# the notes of a figure: small grey text (tests/unit/plots/test_plots_legible.py finds them by this colour)
NOTE_STYLE: dict[str, Any] = {"fontsize": "x-small", "color": "dimgray"}


def _below_the_x_axis(ax: plt.Axes) -> Callable[[RendererBase], Bbox]:
    """The box of the x axis as drawn (ticks, tick labels and label), measured at draw time: a note
    anchored to its bottom stays below them whatever their size or the number of lines they take."""

    def box(renderer: RendererBase) -> Bbox:
        found = ax.xaxis.get_tightbbox(renderer)
        return ax.bbox if found is None or found.height <= 0 else Bbox.union([found, ax.bbox])

    return box


def _wrap(note: str, width: int = 90) -> str:
    """Lines of ``note`` longer than ``width`` characters broken after their "; " separators."""
    out = []
    for line in note.splitlines():
        parts, current = line.split("; "), ""
        for part in parts:
            if current and len(current) + 2 + len(part) > width:
                out.append(current + ";")
                current = part
            else:
                current = f"{current}; {part}" if current else part
        out.append(current)
    return "\n".join(out)


def note_under(ax: plt.Axes, note: str) -> None:
    """``note`` under the panel, below its x tick labels and x-axis label (measured when drawn), its long
    lines broken after a "; "; a panel without axes (``set_axis_off``) gets it in its middle."""
    if not note:
        return
    note = _wrap(note)
    if not ax.axison:
        ax.text(0.5, 0.5, note, transform=ax.transAxes, ha="center", va="center", **NOTE_STYLE)
        return
    ax.annotate(
        note,
        xy=(0.0, 0.0),
        xycoords=("axes fraction", _below_the_x_axis(ax)),
        xytext=(0, -3),
        textcoords="offset points",
        ha="left",
        va="top",
        annotation_clip=False,
        **NOTE_STYLE,
    )


mark_not_run = note_under  # the "not run" note of a panel (``not_run_note``), under its axis labels
