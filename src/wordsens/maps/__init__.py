"""The feature maps: the paper's four (RF, deep RF, RAF, ReLU-RAF), the attention variants and
plugins, each one registry entry (``MapSpec``) naming its forward, sampler, weight check and fast
search.

``maps.<name>(X, weights)`` is the validated map ``name`` for every registered map, plugins
included; ``apply``, ``feature_map``, ``sample_weights`` and the checks work on any of them by name.

The registry (``register``, ``get``, ``names``, ...) is imported eagerly and without torch, so that
planning a workflow never imports it; the names that need torch (``wordsens.maps.api``,
``wordsens.maps.sampling``, ``wordsens.maps.paper``, ``wordsens.maps.variants``) are imported on
first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .registry import (
    PAPER_MAPS,
    PLUGINS_ENV,
    get,
    isolated,
    load_plugins,
    names,
    register,
    resolve,
)
from .spec import CONVENTIONS, Counterpart, MapSpec, SearchSettings

if TYPE_CHECKING:
    from .api import (
        apply,
        check_weights,
        drf,
        feature_map,
        map_names,
        raf,
        relu_raf,
        rf,
        sample_weights,
    )
    from .checks import check_matrix, check_sample
    from .paper import check_attention, check_drf, check_rf, drf_forward, raf_forward, relu_raf_forward, rf_forward
    from .sampling import (
        DRAW_ON,
        attention_sample,
        attention_weights,
        base_seed,
        block_generator,
        draw_gaussian,
        drawn_on,
        drf_block,
        drf_layer,
        drf_sample,
        drf_weights,
        rf_block,
        rf_sample,
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
    "attention_sample",
    "attention_weights",
    "base_seed",
    "block_generator",
    "check_attention",
    "check_drf",
    "check_matrix",
    "check_rf",
    "check_sample",
    "check_weights",
    "draw_gaussian",
    "drawn_on",
    "drf",
    "drf_block",
    "drf_forward",
    "drf_layer",
    "drf_sample",
    "drf_weights",
    "feature_map",
    "get",
    "isolated",
    "load_plugins",
    "map_names",
    "names",
    "raf",
    "raf_forward",
    "register",
    "relu_raf",
    "relu_raf_forward",
    "resolve",
    "rf",
    "rf_block",
    "rf_forward",
    "rf_sample",
    "rf_weights",
    "sample_weights",
]

# the names imported on first use (they import torch), by the submodule that defines them
_LAZY = {
    "checks": ("check_matrix", "check_sample"),
    "api": (
        "apply",
        "check_weights",
        "drf",
        "feature_map",
        "map_names",
        "raf",
        "relu_raf",
        "rf",
        "sample_weights",
    ),
    "paper": (
        "check_attention",
        "check_drf",
        "check_rf",
        "drf_forward",
        "raf_forward",
        "relu_raf_forward",
        "rf_forward",
    ),
    "sampling": (
        "DRAW_ON",
        "attention_sample",
        "attention_weights",
        "base_seed",
        "block_generator",
        "draw_gaussian",
        "drawn_on",
        "drf_block",
        "drf_layer",
        "drf_sample",
        "drf_weights",
        "rf_block",
        "rf_sample",
        "rf_weights",
    ),
}
_SOURCE = {name: module for module, names_ in _LAZY.items() for name in names_}


def __getattr__(name: str) -> Any:
    """The torch-using names on first use, and ``maps.<name>(X, weights)``: the validated map of
    every registered map, plugins included."""
    if name in _SOURCE:
        value = getattr(importlib.import_module(f"{__name__}.{_SOURCE[name]}"), name)
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
