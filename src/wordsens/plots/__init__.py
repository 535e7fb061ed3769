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

import importlib
from typing import TYPE_CHECKING, Any

from .stamp import DEMO_STAMP, run_stamp

if TYPE_CHECKING:
    from .common import map_label, not_run_note, save

__all__ = ["DEMO_STAMP", "map_label", "not_run_note", "run_stamp", "save"]

# the names imported on first use (they import matplotlib and seaborn), by the module that defines them
_LAZY = {f"{__name__}.common": ("map_label", "not_run_note", "save")}
_SOURCE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    """The figure functions on first use."""
    if name in _SOURCE:
        value = getattr(importlib.import_module(_SOURCE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
