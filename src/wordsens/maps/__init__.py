"""The feature maps: the paper's four (RF, deep RF, RAF, ReLU-RAF), the attention variants and plugins,
each one registry entry (``MapSpec``). The registry is imported eagerly and without torch (planning
reads it); the names that need torch (``apply``, ``feature_map``, ``sample_weights``, the checks and
samplers) are imported on first use, and ``maps.<name>(X, weights)`` is the validated map ``name``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .registry import PAPER_MAPS, PLUGINS_ENV, get, isolated, load_plugins, names, register, resolve
from .spec import CONVENTIONS, Counterpart, MapSpec, SearchSettings

if TYPE_CHECKING:
    from .api import apply, check_weights, feature_map, sample_weights
    from .checks import check_sample
    from .sampling import (
        DRAW_ON,
        attention_weights,
        block_generator,
        drawn_on,
        drf_block,
        drf_layer,
        drf_weights,
        rf_block,
        rf_weights,
    )

__all__ = [
    "CONVENTIONS",
    "DRAW_ON",
    "PAPER_MAPS",
    "PLUGINS_ENV",
    "Counterpart",
    "MapSpec",
    "SearchSettings",
    "apply",
    "attention_weights",
    "block_generator",
    "check_sample",
    "check_weights",
    "drawn_on",
    "drf_block",
    "drf_layer",
    "drf_weights",
    "feature_map",
    "get",
    "isolated",
    "load_plugins",
    "names",
    "register",
    "resolve",
    "rf_block",
    "rf_weights",
    "sample_weights",
]

_LAZY_MODULES = ("api", "checks", "sampling")  # the submodules whose names above need torch


def __getattr__(name: str) -> Any:
    """The torch-using names of ``__all__`` on first use, and ``maps.<name>(X, weights)``: the validated
    map of every registered map, plugins included."""
    if name in __all__:
        for module in _LAZY_MODULES:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name, None)
            if value is not None:
                globals()[name] = value
                return value
    if not name.startswith("_"):
        try:
            validated: Callable[..., Any] = importlib.import_module(f"{__name__}.api").feature_map(name)
        except ValueError:
            pass
        else:
            return validated
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
