"""Word sensitivity of a pre-trained encoder's own layers against their random-feature models.

For a review and an encoder layer ``l`` (1-based), the sample is the layer's real input: the first
n rows of ``hidden_states[l - 1]`` when the model reads the review's first n tokens (``[CLS]``
... ``[SEP]``), optionally row-normalised as in the paper (``wordsens.data.samples.normalise``:
rows of norm sqrt(d)). On that very sample the rows hold the word sensitivity of the trained
attention sublayer (``trained_attention``) and the trained layer (``trained_layer``) next to their
random counterparts at the same d and heads (``mh_raf``, ``block``), and optionally of every head
of the trained attention alone. The perturbation ball has radius sqrt(d) in both cases: with the
normalisation the rows have that norm (the paper's definition); without it the rows keep the
model's own scale, recorded per row (``row_norm``), and the ball is the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..data import embed, samples
from ..search import estimate
from ..seeds import derive_seed

Tensor = torch.Tensor

__all__ = ["RANDOM_COUNTERPARTS", "layer_inputs", "trained_rows"]

# the random model of each trained map, at the same d and number of heads
RANDOM_COUNTERPARTS = {"trained_attention": "mh_raf", "trained_layer": "block"}


def layer_inputs(tokenizer: Any, encoder: Any, texts: Sequence[str], *, layer: int, n: int, normalise: bool) -> Tensor:
    """The samples (reviews, n, d), float64, that enter encoder layer ``layer`` (1-based) when the
    model reads each text's first n tokens; ``normalise``: rows rescaled to norm sqrt(d)."""
    hidden, lengths = embed.hidden_states(
        tokenizer, encoder, texts, layer=layer - 1, max_length=n, dtype=np.float32, progress=False
    )
    short = [i for i, length in enumerate(lengths) if length < n]
    if short:
        raise ValueError(
            f"reviews {short} have fewer than n = {n} tokens: their last rows would be padding; choose longer reviews"
        )
    width = hidden.shape[-1]
    if normalise:
        return samples.normalise(hidden, n, width)
    return torch.as_tensor(hidden, dtype=torch.float64)


def trained_rows(
    X: Tensor,
    *,
    model: str,
    layer: int,
    heads: int,
    seed: int,
    review: int,
    normalise: bool,
    per_head: bool = False,
    maps: Sequence[str] = ("trained_attention", "trained_layer"),
    max_steps: int = 1000,
) -> list[dict[str, Any]]:
    """One review's rows at one layer: each trained map of ``maps`` and its random counterpart
    (``RANDOM_COUNTERPARTS``, weights drawn from a seed derived from ``seed``, the review and the
    layer) on the sample ``X`` (n, d); with ``per_head`` also ``trained_attention`` of every head
    (1-based ``head``). Word sensitivity at position 0, the maps' default search."""
    n, d = X.shape
    unknown = sorted(set(maps) - set(RANDOM_COUNTERPARTS))
    if unknown:
        raise ValueError(f"unknown trained maps {unknown}; choose among {sorted(RANDOM_COUNTERPARTS)}")
    base = derive_seed(seed, "trained", review, layer)
    jobs: list[tuple[str, str, dict[str, Any], int | None]] = []
    for name in maps:
        jobs.append((name, "trained", {"model": model, "layer": layer}, None))
        jobs.append((RANDOM_COUNTERPARTS[name], "random", {"heads": heads}, None))
    if per_head:
        jobs += [
            ("trained_attention", "trained", {"model": model, "layer": layer, "head": h}, h)
            for h in range(1, heads + 1)
        ]
    row_norm = float(torch.linalg.vector_norm(X, dim=-1).mean())
    rows = []
    for name, kind, options, head in jobs:
        result = estimate(name, X, seed=base, options=options, device="cpu", max_steps=max_steps)
        rows.append(
            {
                "review": review,
                "layer": layer,
                "n": n,
                "d": d,
                "normalise": normalise,
                "map": name,
                "kind": kind,
                "head": head if head is not None else 0,
                "ws": result.lower,
                "phi_norm": result.phi_norm,
                "row_norm": row_norm,
                "radius": math.sqrt(d),
                "steps": result.steps,
                "seconds": result.seconds,
                "seed": base,
            }
        )
    return rows
