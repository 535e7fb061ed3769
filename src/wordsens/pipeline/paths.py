"""Where a configuration's files live: its embedding stores and their pools (``store_dir``,
``pool_file``: the main store and any a study declares, ``wordsens.studies.Store``) and what the stores
made already say about their inputs (``store_metas``, read by the grid's checks: docs/inputs.md).
Torch-free and pandas-free: the Snakefile imports it at parse time.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..data.models import model_tag
from ..io import CorruptCache, read_json
from ..studies import Store

__all__ = ["pool_file", "store_dir", "store_metas"]


def store_dir(config: dict, store: Store | None = None) -> str:
    """The folder of an embedding store: one per model and layer (the main store, ``store`` None or
    ``main``), and each other store beside it at its length (``_len<max_length>``)."""
    model = config["model"]
    path = f"{config['resources'].rstrip('/')}/embeddings/{model_tag(model['name'])}/layer{model['layer']}"
    return path if store is None or store.name == "main" else f"{path}_len{store.max_length}"


def pool_file(config: dict, store: Store | None = None) -> str:
    """The review pool a store embeds: ``pool.parquet`` per model (the main store's), and
    ``pool_<name><max_length>.parquet`` for another store's pool of its own."""
    folder = f"{config['resources'].rstrip('/')}/pools/{model_tag(config['model']['name'])}"
    if store is None or store.name == "main":
        return f"{folder}/pool.parquet"
    return f"{folder}/pool_{store.name}{store.max_length}.parquet"


def store_metas(config: dict, stores: Iterable[Store]) -> dict[str, dict[str, Any]]:
    """The meta.json of each of ``stores`` that exists, by store name; an unreadable one is left out
    (the jobs that load the store name it)."""
    found = {}
    for store in stores:
        meta = Path(store_dir(config, store)) / "meta.json"
        if meta.is_file():
            try:
                found[store.name] = read_json(meta)
            except CorruptCache:
                continue
    return found
