"""What every figure shares: map labels from the registry, atomic saving with the run's stamp (a
visible "toy demo: tiny random BERT" or "random weights" on every figure of such a run), and the
notes naming the grid points a figure is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ..data.models import DEMO_LM, DEMO_MODEL
from ..io import atomic_path
from ..maps import registry

__all__ = ["DEMO_STAMP", "map_label", "mark_not_run", "not_run_note", "run_stamp", "save", "stamp_figure"]

DEMO_STAMP = "toy demo: tiny random BERT"
_WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin", "tf_model.h5", "model.ckpt*", "flax_model.msgpack")


def _random_weights(name: str) -> bool:
    """Whether ``name`` is a local model folder with a config but no weights file: ``from_pretrained``
    then gives random weights."""
    folder = Path(name).expanduser()
    if not (folder / "config.json").is_file():
        return False
    return not any(any(folder.glob(pattern)) for pattern in _WEIGHT_FILES)


def run_stamp(config: Mapping[str, Any], *, model: str | None = None) -> str | None:
    """The stamp every figure of a run carries when its encoder has random weights, else None.

    ``model``: the encoder the figure used (default ``model.name``; the probes may use another, the
    causal LM of Figure 1 right its own). The demo's encoder gives ``DEMO_STAMP``, the demo's causal
    LM "toy demo: tiny random causal LM", a local folder without weights "random weights: <name>".
    """
    name = str(model if model is not None else (config.get("model") or {}).get("name", ""))
    if name == DEMO_MODEL:
        return DEMO_STAMP
    if name == DEMO_LM:
        return "toy demo: tiny random causal LM"
    if _random_weights(name):
        return f"random weights: {Path(name).name}"
    return None


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


def save(fig: plt.Figure, paths: Sequence[str | Path], dpi: int, *, stamp: str | None = None) -> None:
    """Write ``fig`` to every path (format from the suffix), atomically, with the run's ``stamp``
    (``run_stamp``; figure functions pass ``settings["stamp"]``)."""
    stamp_figure(fig, stamp)
    for path in paths:
        atomic_path(path, partial(_savefig, fig, fmt=Path(path).suffix.lstrip("."), dpi=dpi))
    plt.close(fig)


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


def mark_not_run(ax: plt.Axes, note: str) -> None:
    """The note under the panel's axis label, clear of the curves and the legend."""
    ax.text(0.0, -0.2, note, transform=ax.transAxes, fontsize="x-small", va="top", ha="left", color="dimgray")
