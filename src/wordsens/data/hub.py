"""Whether the Hugging Face Hub can be used, what its local cache holds, and what to do without it
(``LOCAL_DATA_EXAMPLE``); torch-free and pandas-free (planning asks it).
"""

from __future__ import annotations

import socket

# The command-line form Snakemake accepts for a local IMDb copy (a dotted --config key is refused).
LOCAL_DATA_EXAMPLE = "--config 'data={source: parquet, path: /path/to/imdb/train.parquet}'"


class NoNetwork(RuntimeError):
    """The Hugging Face Hub cannot be reached."""


def hub_cached(name: str) -> bool:
    """Whether the local Hugging Face cache holds model ``name`` (it then loads without the network)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except (ValueError, OSError):  # an invalid repo id, an unreadable cache: not cached
        return False


def hub_reachable(timeout: float = 10.0, *, for_datasets: bool = False) -> bool:
    """Whether the Hugging Face Hub can be used: not in Hugging Face's offline mode (``HF_HUB_OFFLINE``,
    ``TRANSFORMERS_OFFLINE``; with ``for_datasets`` also ``HF_DATASETS_OFFLINE``), and its endpoint
    (``HF_ENDPOINT``: a mirror counts) answers within ``timeout`` seconds."""
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    if for_datasets:
        from datasets import config as datasets_config

        if datasets_config.HF_HUB_OFFLINE:
            return False
    endpoint = urlsplit(constants.ENDPOINT)
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
