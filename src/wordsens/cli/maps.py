"""``wordsens maps``: list the registered feature maps: formula, weight law, options

List every registered feature map (wordsens.maps: the paper's four, the attention variants, and the maps of
--plugin modules): its name (for --map and the workflow's config), plot label, formula, weight law, options
with their defaults, and the options a grid may sweep (DRF's depth L)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..arguments import add_command, add_plugin_arg


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], maps: Sequence[str]) -> None:
    add_plugin_arg(add_command(sub, "maps", __doc__))


def run(args: argparse.Namespace) -> str:
    """One block per registered map: name and label, formula, weight law, options, fast path."""
    from ..maps import registry

    blocks = []
    for name in registry.names():
        spec = registry.get(name)
        options = ", ".join(f"{key}={value!r}" for key, value in spec.options.items()) or "none"
        swept = f"\n  swept:      {', '.join(spec.sweep)} (a grid may list its values)" if spec.sweep else ""
        blocks.append(
            f"{name}: {spec.label}\n  formula:    {spec.formula}\n  weights:    {spec.weight_law}\n"
            f"  options:    {options}{swept}\n  fast path:  {'yes' if spec.fast else 'no (full-map search)'}"
        )
    return "\n".join(blocks) + "\n"
