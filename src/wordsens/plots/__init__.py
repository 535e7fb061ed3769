"""The figures' shared parts: ``common`` (theme, saving with the run's stamp, map labels and laws, the notes
under a panel), ``scatter`` (off-scale values and coinciding points, NumPy only), ``generalisation`` (the
layout of Figures 4-5, for gen and gen_words) and ``stamp`` (the run's stamp). Each study draws its own
figures (its ``figure`` module).

``run_stamp`` is imported eagerly and without matplotlib (the workflow computes it when it parses its
rules); the figure functions on first use.
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
