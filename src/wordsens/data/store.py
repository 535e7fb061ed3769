"""The embedding store: a pool's hidden states, written once per model and layer with a checksum of its
array, so that a corrupt or truncated cache is detected instead of used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import CorruptCache, atomic_path, file_digest, read_json, write_json, write_table
from .inputs import check_finite


@dataclass
class EmbeddingStore:
    """Hidden states of a pool of reviews, ``hidden`` (reviews, max_length, width), memory-mapped; ``index``:
    ``review_id``, ``label``, ``length`` (tokens, ``[CLS]`` and ``[SEP]`` included) per review; ``meta``: the
    model, layer, max_length, the checks' counts and the checksum."""

    hidden: np.ndarray
    index: Any  # pandas.DataFrame
    meta: dict[str, Any]
    path: Path

    def __len__(self) -> int:
        return int(self.hidden.shape[0])

    @property
    def width(self) -> int:
        return int(self.hidden.shape[2])


STORE_FILES = ("hidden.npy", "index.parquet", "meta.json")


def save_embeddings(directory: str | os.PathLike, hidden: np.ndarray, index, meta: dict[str, Any]) -> Path:
    """Write a store (``hidden.npy``, ``index.parquet``, then ``meta.json`` with the checksum); NaN/Inf values
    are refused (``InputError``) before anything is written."""
    directory = Path(directory)
    if hidden.ndim != 3 or hidden.shape[0] != len(index):
        raise ValueError(
            f"hidden must be (reviews, max_length, width) with one index row per review, "
            f"got {hidden.shape} and {len(index)} index rows"
        )
    check_finite(hidden)

    def write_array(path: Path) -> None:
        with open(path, "wb") as fh:
            np.save(fh, hidden)

    atomic_path(directory / "hidden.npy", write_array)
    write_table(directory / "index.parquet", index)
    meta = dict(meta, shape=list(hidden.shape), dtype=str(hidden.dtype), digest=file_digest(directory / "hidden.npy"))
    write_json(directory / "meta.json", meta)
    return directory


def load_embeddings(path: str | os.PathLike, *, verify: bool = True) -> EmbeddingStore:
    """Open a store (its directory, or any file in it); raise ``CorruptCache`` when it is damaged."""
    import pandas as pd

    path = Path(path)
    directory = path.parent if path.is_file() else path
    if not directory.is_dir():
        raise FileNotFoundError(f"no embedding store at {path}: expected a directory with {', '.join(STORE_FILES)}")
    missing = [name for name in STORE_FILES if not (directory / name).exists()]
    if missing:
        raise CorruptCache(f"embedding store {directory} lacks {', '.join(missing)}; re-run the embedding rule")
    meta = read_json(directory / "meta.json")
    if verify and file_digest(directory / "hidden.npy") != meta.get("digest"):
        raise CorruptCache(
            f"{directory / 'hidden.npy'} does not match its recorded checksum (corrupt or truncated); "
            "delete the store and re-run the embedding rule"
        )
    try:
        hidden = np.load(directory / "hidden.npy", mmap_mode="r")
    except ValueError as err:
        raise CorruptCache(f"{directory / 'hidden.npy'} cannot be read ({err}); delete it and re-run") from None
    if list(hidden.shape) != list(meta.get("shape", [])):
        raise CorruptCache(f"{directory / 'hidden.npy'} has shape {hidden.shape}, meta.json says {meta.get('shape')}")
    index = pd.read_parquet(directory / "index.parquet")
    if len(index) != hidden.shape[0]:
        raise CorruptCache(f"{directory} index has {len(index)} rows for {hidden.shape[0]} reviews")
    return EmbeddingStore(hidden=hidden, index=index, meta=meta, path=directory)
