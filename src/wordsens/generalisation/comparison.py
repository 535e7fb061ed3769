"""One generalisation simulation in three settings side by side (``word_simulation``; docs/methods.md, "The
settings side by side"): the continuous Delta at ``[CLS]``, at a word position (at radius ``sqrt(d)`` and at
the best word's), and the real words there, on one training set, new sample, weights and first stage.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .core import Setup
from .searches import GenResult, search_many
from .words import CHUNK_MB, PENALTIES, RECHECK, WordScan, scan_words, word_losses

Tensor = torch.Tensor


# the settings of a simulation: the continuous Delta at [CLS] (radius sqrt(d)), at the word position
# (radius sqrt(d)), at the word position with the radius of the loss's best word, and the real words
SETTINGS = ("cls", "position", "word_radius", "words")


@dataclass
class Continuous:
    """One continuous Delta search of a simulation in one of ``SETTINGS``."""

    setting: str
    position: int
    radius: float
    result: GenResult


@dataclass
class WordSimulation:
    """A simulation's real words and its continuous searches (one per continuous setting and ``(training,
    loss, penalty)``; empty when not run), with the ``seconds`` of each setting."""

    words: WordScan
    continuous: list[Continuous]
    seconds: dict[str, float]

    def search(self, setting: str, training: str, loss: str, penalty: float = 0.0) -> Continuous:
        for c in self.continuous:
            res = c.result
            if (c.setting, res.training, res.loss, res.penalty) == (setting, training, loss, float(penalty)):
                return c
        raise KeyError(f"no {setting} search for ({training}, {loss}, {penalty})")


def word_simulation(
    setup: Setup,
    candidates: Tensor,
    *,
    cls: int = 0,
    penalties: Sequence[float] = PENALTIES,
    exclude: int | None = None,
    seed: int = 0,
    continuous: bool = True,
    top_k: int = 10,
    chunk_mb: float = CHUNK_MB,
    recheck: int = RECHECK,
    search: dict[str, Any] | None = None,
) -> WordSimulation:
    """The real words of ``candidates`` scored by ``scan_words`` and, with ``continuous``, the continuous
    searches of every loss of ``word_losses(penalties)`` (``search_many`` with the options ``search``) at
    ``cls`` and at ``setup.position`` (radius ``sqrt(d)``), and at ``setup.position`` at the radius of the
    loss's best word. ``setup``: prepared at the word position with ``also=(cls,)``."""
    if setup.position == cls:
        raise ValueError(f"the words' position {cls} is the [CLS] position: choose a word position")
    at_cls = setup.at(cls) if continuous else None  # before the scan: a setup that cannot move there fails here
    opts = dict(search or {})
    started = time.perf_counter()
    words = scan_words(
        setup, candidates, penalties=penalties, exclude=exclude, top_k=top_k, chunk_mb=chunk_mb, recheck=recheck
    )
    seconds = {"words": time.perf_counter() - started}
    out: list[Continuous] = []
    if at_cls is not None:
        losses = word_losses(penalties)
        root = float(setup.d) ** 0.5
        for setting, at in (("cls", at_cls), ("position", setup)):
            started = time.perf_counter()
            found = search_many(at, losses, seed=seed, **opts)
            out += [Continuous(setting, at.position, root, res) for res in found]
            seconds[setting] = time.perf_counter() - started
        started = time.perf_counter()
        by_radius: dict[float, list[tuple[str, str, float]]] = {}
        for key in losses:
            by_radius.setdefault(words.choice(*key).radius, []).append(key)
        at_radius: dict[tuple[str, str, float], Continuous] = {}
        for radius, keys in by_radius.items():  # one run of searches per distinct radius
            found = search_many(setup, keys, seed=seed, radius=radius, **opts)
            at_radius.update(
                {k: Continuous("word_radius", setup.position, radius, r) for k, r in zip(keys, found, strict=True)}
            )
        out += [at_radius[key] for key in losses]
        seconds["word_radius"] = time.perf_counter() - started
    return WordSimulation(words=words, continuous=out, seconds=seconds)
