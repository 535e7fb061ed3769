"""Where a configuration's files live: its embedding stores (``store_dir``) and what the stores made
already say about their inputs (``store_metas``, read by the grid's checks: docs/inputs.md).
Torch-free and pandas-free: the Snakefile imports it at parse time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data.models import model_tag
from ..io import CorruptCache, read_json

__all__ = ["store_dir", "store_metas"]


def store_dir(config: dict, *, long: bool = False) -> str:
    """The folder of a configuration's embedding store: one per model and layer, and the long-context
    store (``long``) beside it at ``long_context.max_length``."""
    model = config["model"]
    path = f"{config['resources'].rstrip('/')}/embeddings/{model_tag(model['name'])}/layer{model['layer']}"
    return f"{path}_len{config['long_context']['max_length']}" if long else path


def store_metas(config: dict) -> dict[str, dict[str, Any]]:
    """The meta.json of each of a configuration's stores that exists (``main``, ``long``); an
    unreadable one is left out (the jobs that load the store name it)."""
    found = {}
    for store in ("main", "long"):
        if store == "long" and not config.get("long_context"):
            continue
        meta = Path(store_dir(config, long=store == "long")) / "meta.json"
        if meta.is_file():
            try:
                found[store] = read_json(meta)
            except CorruptCache:
                continue
    return found
