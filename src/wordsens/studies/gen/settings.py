"""The typed settings of a gen job: what its rows depend on (its Snakemake params, ``Settings.params``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..jobs import Settings
from ..sensitivity import SearchOptions

__all__ = ["GenRun", "GenSettings"]


@dataclass(frozen=True, kw_only=True)
class GenRun(Settings):
    """How one job"s simulations run: the moved position, the device, whether reviews need n tokens
    (``min_tokens``), the Delta searches" settings and the map"s options."""

    OMIT_WHEN: ClassVar[Mapping[str, Any]] = {"options": {}}

    position: int
    device: str
    min_tokens: bool
    search: SearchOptions
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class GenSettings(Settings):
    """What a generalisation job"s rows depend on: its figure, map, n, N, d, data (and its label), its
    simulations, every (training, loss, penalty) search each simulation runs, the seed, how they run
    and the numerics version."""

    figure: str
    map: str
    n: int
    N: int
    d: int
    data: str
    data_label: str
    simulations: tuple[int, ...]
    searches: tuple[tuple[str, str, float], ...]
    seed: int
    settings: GenRun
    numerics_version: str
