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
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..data import embed, samples
from ..maps import registry
from ..search import estimate
from ..seeds import derive_seed

Tensor = torch.Tensor

__all__ = ["RANDOM_COUNTERPARTS", "layer_inputs", "layer_rows", "layer_table", "pick_reviews", "trained_rows"]

# the random model of each trained map, at the same d and number of heads (the registry's table)
RANDOM_COUNTERPARTS = registry.TRAINED_RANDOM_MODELS


def pick_reviews(tokenizer: Any, texts: Sequence[str], *, n: int, count: int) -> list[int]:
    """The indices of the first ``count`` texts (in their order) that the tokenizer turns into at least
    ``n`` tokens, ``[CLS]`` and ``[SEP]`` included; ValueError naming the fix where too few have."""
    found: list[int] = []
    for index, text in enumerate(texts):
        if len(tokenizer(str(text), truncation=False)["input_ids"]) >= n:
            found.append(index)
            if len(found) == count:
                return found
    raise ValueError(
        f"only {len(found)} of {len(texts)} reviews have at least n = {n} tokens, {count} needed: lower the "
        "largest n (trained.n) or the number of reviews (trained.reviews), or give the pool longer reviews "
        "(data.max_tokens, data.pool_size)"
    )


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


def layer_rows(
    tokenizer: Any,
    encoder: Any,
    texts: Sequence[str],
    *,
    model: str,
    layer: int,
    ns: Sequence[int],
    normalise: Sequence[bool] = (True, False),
    maps: Sequence[str] = ("trained_attention", "trained_layer"),
    head_n: int | None = None,
    head_reviews: int = 1,
    seed: int = 0,
    max_steps: int = 1000,
    log: Any = None,
) -> list[dict[str, Any]]:
    """Every row of the trained study at one layer (the ``trained`` rule's job): for each review of
    ``texts`` (each with at least max(ns) tokens: ``pick_reviews``), n of ``ns`` and normalisation of
    ``normalise``, the rows of ``trained_rows`` for ``maps``; then, at ``head_n`` (None: none) on the
    first ``head_reviews`` reviews, row-normalised, the trained attention of every head. ``model``
    is what the maps load (``encoder``'s folder or name); ``log`` (a callable) gets a line per sample."""
    heads = int(encoder.config.num_attention_heads)
    rows: list[dict[str, Any]] = []
    passes = [(norm, n, len(texts), False) for norm in normalise for n in sorted(ns)]
    if head_n is not None:
        passes.append((True, head_n, head_reviews, True))
    for norm, n, count, per_head in passes:
        X = layer_inputs(tokenizer, encoder, texts[:count], layer=layer, n=n, normalise=norm)
        for review in range(count):
            started = time.perf_counter()
            rows += trained_rows(
                X[review],
                model=model,
                layer=layer,
                heads=heads,
                seed=seed,
                review=review,
                normalise=norm,
                per_head=per_head,
                maps=() if per_head else maps,
                max_steps=max_steps,
            )
            if log is not None:
                what = "head by head" if per_head else f"normalise={norm}"
                log(f"layer {layer} n = {n} {what} review {review}: {time.perf_counter() - started:.1f} s")
    return rows


def layer_table(tokenizer: Any, encoder: Any, pool: Any, job: dict[str, Any], *, source: str, log: Any = None) -> Any:
    """The table of one job of the ``trained`` rule (``job``: its params, ``wordsens.pipeline.TrainedJob``):
    the rows of ``layer_rows`` on the pool's first ``reviews`` reviews (its seeded order) with at least
    max(n) tokens (the same reviews at every layer), with the encoder's name (``model``), each review's
    ``review_id`` in the pool, the job's ``config_hash`` and the provenance of every row. ``source``:
    the folder or name the encoder is loaded from."""
    import pandas as pd

    from .rows import config_hash, provenance

    chosen = pick_reviews(tokenizer, [str(t) for t in pool["text"]], n=max(job["n"]), count=job["reviews"])
    rows = layer_rows(
        tokenizer,
        encoder,
        [str(pool["text"].iloc[i]) for i in chosen],
        model=source,
        layer=job["layer"],
        ns=job["n"],
        normalise=job["normalise"],
        maps=job["maps"],
        head_n=job["head_n"],
        head_reviews=job["head_reviews"] or 0,
        seed=job["seed"],
        max_steps=job["max_steps"],
        log=log,
    )
    frame = pd.DataFrame(rows)
    frame.insert(0, "model", job["model"])
    frame.insert(2, "review_id", [int(pool["review_id"].iloc[chosen[r]]) for r in frame["review"]])
    frame["config_hash"] = config_hash(job)
    for key, value in provenance("trained").items():
        frame[key] = value
    return frame
