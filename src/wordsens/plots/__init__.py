"""Seaborn figures from the aggregated result tables: the paper's (``wordsens.plots.paper``: Figures
2-5), the studies beyond it (``wordsens.plots.studies``: variants, long contexts, positions) and the
encoder probes (``wordsens.plots.probes``: Figures 1 and 3, panels 3-4), with what they share in
``wordsens.plots.common``.
"""

from ..claims.slope import loglog_slope
from .common import map_label, not_run_note, run_stamp, save
from .paper import gen_figure, ws_figure
from .probes import HeatMap, attention_maps, attention_pair, layer_changes_figure, text_table_figure
from .studies import long_context_figure, positions_figure, trained_figure, variants_figure

__all__ = [
    "HeatMap",
    "attention_maps",
    "attention_pair",
    "gen_figure",
    "layer_changes_figure",
    "loglog_slope",
    "long_context_figure",
    "map_label",
    "not_run_note",
    "positions_figure",
    "run_stamp",
    "save",
    "text_table_figure",
    "trained_figure",
    "variants_figure",
    "ws_figure",
]
