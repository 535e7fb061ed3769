"""The typed settings of a trained job: what its rows depend on (its Snakemake params, ``Settings.params``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..jobs import Settings

__all__ = ["TrainedSettings"]


@dataclass(frozen=True, kw_only=True)
class TrainedSettings(Settings):
    """What the rows of one layer's job depend on: the encoder and its layer, its heads, the n, reviews,
    conventions, trained maps, moved rows (``positions`` word rows, ``specials``), the counterparts'
    draws, the per-head searches (at ``head_n`` on ``head_reviews`` reviews; None: none), the search's
    step cap, the seed, the numerics version and whether each map is searched on the word rows alone too
    (``word_keys``; off, it is no param: a run without it re-runs nothing)."""

    OMIT_WHEN: ClassVar[Mapping[str, Any]] = {"word_keys": False}

    model: str
    layer: int
    heads: int
    n: tuple[int, ...]
    reviews: int
    conventions: tuple[str, ...]
    maps: tuple[str, ...]
    positions: int | str
    specials: bool
    draws: int
    head_n: int | None
    head_reviews: int | None
    max_steps: int
    seed: int
    numerics_version: str
    word_keys: bool = False
