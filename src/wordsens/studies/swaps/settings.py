"""The typed settings of a swaps job: what its rows depend on (its Snakemake params, ``Settings.params``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..jobs import Settings

__all__ = ["SwapSettings"]


@dataclass(frozen=True, kw_only=True)
class SwapSettings(Settings):
    """What the rows of one swaps job depend on: the map, d, n and the map"s options, the encoder, the
    reviews and word positions (the same at every n: drawn below ``n_min``, reviews with ``n_max``
    tokens), the top words kept, the vocabulary, the screen and its sample, the continuous searches
    (their step cap; ``sqrt_d``: also at radius sqrt(d)), the device, the seed and the numerics version."""

    map: str
    d: int
    n: int
    options: Mapping[str, Any]
    model: str
    reviews: int
    positions: int | str
    n_min: int
    n_max: int
    top_k: int
    vocabulary: str
    screen: int
    sample: int
    sqrt_d: bool
    max_steps: int
    device: str
    seed: int
    numerics_version: str
