"""Seaborn figures from the aggregated result tables: the paper's (``wordsens.plots.paper``: Figures
2-5), the studies beyond it (``wordsens.plots.studies``: variants, long contexts, positions;
``wordsens.plots.trained``: the trained study; ``wordsens.plots.swaps``: the swaps study) and the
encoder probes (``wordsens.plots.probes``: Figures 1 and 3, panels 3-4), with what they share in
``wordsens.plots.common`` and ``wordsens.plots.scatter`` (off-scale values, coinciding points).

The run's stamp (``wordsens.plots.stamp.run_stamp``) is imported eagerly and without matplotlib: the
workflow computes it when it parses its rules. The figure functions (matplotlib, seaborn) are
imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .stamp import DEMO_STAMP, run_stamp

if TYPE_CHECKING:
    from .common import map_label, not_run_note, save
    from .paper import gen_figure, ws_figure
    from .probes import HeatMap, attention_maps, attention_pair, layer_changes_figure, text_table_figure
    from .studies import long_context_figure, positions_figure, variants_figure
    from .swaps import swaps_figure, swaps_text
    from .trained import trained_figure

__all__ = [
    "DEMO_STAMP",
    "HeatMap",
    "attention_maps",
    "attention_pair",
    "gen_figure",
    "layer_changes_figure",
    "long_context_figure",
    "map_label",
    "not_run_note",
    "positions_figure",
    "run_stamp",
    "save",
    "swaps_figure",
    "swaps_text",
    "text_table_figure",
    "trained_figure",
    "variants_figure",
    "ws_figure",
]

# the names imported on first use (they import matplotlib and seaborn), by the module that defines them
_LAZY = {
    f"{__name__}.common": ("map_label", "not_run_note", "save"),
    f"{__name__}.paper": ("gen_figure", "ws_figure"),
    f"{__name__}.probes": ("HeatMap", "attention_maps", "attention_pair", "layer_changes_figure", "text_table_figure"),
    f"{__name__}.studies": ("long_context_figure", "positions_figure", "variants_figure"),
    f"{__name__}.swaps": ("swaps_figure", "swaps_text"),
    f"{__name__}.trained": ("trained_figure",),
}
_SOURCE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    """The figure functions on first use."""
    if name in _SOURCE:
        value = getattr(importlib.import_module(_SOURCE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
