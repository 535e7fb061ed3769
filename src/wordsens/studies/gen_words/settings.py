"""The typed settings of a gen_words job: what its rows depend on (its Snakemake params, ``Settings.params``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..jobs import Settings
from ..sensitivity import SearchOptions

__all__ = ["GenWordsSettings"]


@dataclass(frozen=True, kw_only=True)
class GenWordsSettings(Settings):
    """What the rows of one gen_words job depend on: the map and its options, n, N, d, its simulations,
    the encoder whose vocabulary and embedding layer give the rows, the penalties of the penalised loss,
    whether the continuous settings run beside, the vocabulary, the top words kept, the continuous
    searches' settings, the device, the seed and the numerics version."""

    map: str
    options: Mapping[str, Any]
    n: int
    N: int
    d: int
    simulations: tuple[int, ...]
    model: str
    penalties: tuple[float, ...]
    continuous: bool
    vocabulary: str
    top_k: int
    search: SearchOptions
    device: str
    seed: int
    numerics_version: str
