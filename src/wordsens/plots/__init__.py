"""What every figure shares (``wordsens.plots.common``: map labels from the registry, atomic saving with
the run's stamp, the notes under a panel, the points a figure is missing; ``wordsens.plots.scatter``:
off-scale values and coinciding points, NumPy only; ``wordsens.plots.generalisation``: the layout of
Figures 4-5, drawn by the gen study and by gen_words with real words) and the run's stamp
(``wordsens.plots.stamp``). Each study draws its own figures (``wordsens.studies``: its ``figure`` module).

The run's stamp (``wordsens.plots.stamp.run_stamp``) is imported eagerly and without matplotlib: the
workflow computes it when it parses its rules. The shared figure functions (matplotlib, seaborn) are
imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .stamp import DEMO_STAMP, run_stamp

if TYPE_CHECKING:
    from .common import map_label, not_run_note, save

__all__ = ["DEMO_STAMP", "map_label", "not_run_note", "run_stamp", "save"]


def __getattr__(name: str) -> Any:
    """The figure functions on first use (``wordsens.plots.common`` imports matplotlib and seaborn)."""
    if name in ("map_label", "not_run_note", "save"):
        from . import common

        return getattr(common, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
