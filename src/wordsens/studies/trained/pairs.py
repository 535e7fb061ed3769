"""The maps the trained study compares: the trained maps, the random counterparts of each in a convention and
the options each takes. Torch-free: the planner and the rows share them."""

from __future__ import annotations

from typing import Any

from ...maps import registry


def trained_maps() -> list[str]:
    """The checkpoint maps that name random counterparts, in registry order."""
    return [name for name in registry.names() if registry.get(name).counterparts]


def counterparts(trained: str, convention: str) -> list[str]:
    """The random maps ``trained`` is compared with in ``convention`` (its registry entry's)."""
    return [c.map for c in registry.get(trained).counterparts if c.convention == convention]


def map_options(name: str, model: str, layer: int, heads: int) -> dict[str, Any]:
    """The options a map of the study takes: a checkpoint's (model, layer) or the number of heads."""
    given = {"model": model, "layer": layer, "heads": heads}
    return {key: value for key, value in given.items() if key in registry.get(name).options}
