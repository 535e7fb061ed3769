"""From raw token embeddings to samples that satisfy the paper's data assumption (every row of a sample
``X`` (n, d) has norm ``sqrt(d)``): the one place where that normalisation is written.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..seeds import generator

Tensor = torch.Tensor


def _check_sizes(n: int, d: int) -> None:
    for key, value in (("n", n), ("d", d)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")


def normalise(embeddings: Tensor | np.ndarray, n: int, d: int, *, dtype: torch.dtype = torch.float64) -> Tensor:
    """The first ``n`` tokens and ``d`` coordinates of ``embeddings`` (..., tokens, width), rows rescaled to
    norm sqrt(d); ``ValueError`` for too few tokens or coordinates, NaN/Inf, or a (truncated) row of norm 0."""
    _check_sizes(n, d)
    E = torch.as_tensor(np.asarray(embeddings) if not isinstance(embeddings, Tensor) else embeddings)
    if E.ndim < 2:
        raise ValueError(f"embeddings must have shape (tokens, width), got {tuple(E.shape)}")
    tokens, width = E.shape[-2], E.shape[-1]
    if n > tokens:
        raise ValueError(f"n = {n} tokens requested but the sequence has only {tokens}; lower n or raise max_length")
    if d > width:
        raise ValueError(f"d = {d} coordinates requested but the embeddings have width {width}; lower d")
    X = E[..., :n, :d].to(dtype)
    if not bool(torch.isfinite(X).all()):
        raise ValueError("embeddings contain NaN or Inf entries")
    norms = torch.linalg.vector_norm(X, dim=-1, keepdim=True)
    if bool((norms == 0).any()):
        raise ValueError(f"a token row is all zeros in its first d = {d} coordinates and cannot be rescaled")
    return X * (math.sqrt(d) / norms)


def synthetic_sample(
    n: int, d: int, seed: int | torch.Generator, *, batch: tuple[int, ...] = (), dtype: torch.dtype = torch.float64
) -> Tensor:
    """A synthetic sample: i.i.d. standard Gaussian rows rescaled to norm sqrt(d), shape (*batch, n, d)."""
    _check_sizes(n, d)
    G = torch.randn((*batch, n, d), generator=generator(seed), dtype=torch.float64)
    return normalise(G, n, d, dtype=dtype)


def draw_sample(
    source: object, n: int, d: int, seed: int, *, min_tokens: bool = False, dtype: torch.dtype = torch.float64
) -> tuple[Tensor, dict[str, object]]:
    """One normalised sample (n, d) and its provenance, from ``"synthetic"`` (Gaussian rows) or a review
    of an embedding store drawn uniformly with ``seed`` (``eligible_reviews``: with ``min_tokens`` only
    reviews of at least ``n`` tokens; otherwise rows past the review are its [SEP]/[PAD] embeddings, as in
    the authors' runs)."""
    if isinstance(source, str):
        if source != "synthetic":
            raise ValueError(f"unknown data source {source!r}; use 'synthetic' or an embedding store")
        return synthetic_sample(n, d, seed, dtype=dtype), {"review_id": -1, "label": 0, "length": n}
    eligible = eligible_reviews(source, n, d, min_tokens=min_tokens)
    gen = generator(seed)
    row = int(eligible[int(torch.randint(0, eligible.size, (1,), generator=gen))])
    X = review_samples(source, row, n, d, dtype=dtype)
    index = source.index  # type: ignore[attr-defined]
    info: dict[str, object] = {
        "review_id": int(index["review_id"].iloc[row]),
        "label": int(index["label"].iloc[row]),
        "length": int(index["length"].iloc[row]),
    }
    return X, info


def eligible_reviews(store: object, n: int, d: int, *, min_tokens: bool = False, needed: int = 1) -> np.ndarray:
    """Rows of an embedding store from which samples (n, d) may be drawn, in store order (with ``min_tokens``
    those of at least ``n`` tokens, ``[CLS]`` and ``[SEP]`` included); ``ValueError`` naming the fix where
    ``n`` or ``d`` exceed the store or fewer than ``needed`` reviews are eligible."""
    hidden = store.hidden  # type: ignore[attr-defined]
    if n > hidden.shape[1]:
        raise ValueError(
            f"n = {n} exceeds the stored max_length {hidden.shape[1]}; lower n or re-embed with a larger max_length"
        )
    if d > hidden.shape[2]:
        raise ValueError(f"d = {d} exceeds the model width {hidden.shape[2]}; lower d")
    lengths = np.asarray(store.index["length"])  # type: ignore[attr-defined]
    eligible = np.flatnonzero(lengths >= n) if min_tokens else np.arange(len(lengths))
    if eligible.size < needed:
        what = f"at least n = {n} tokens" if min_tokens else "reviews"
        raise ValueError(
            f"the review pool has {eligible.size} eligible reviews ({what}), {needed} are needed; "
            "raise data.pool_size" + (", lower n or disable min_tokens" if min_tokens else "")
        )
    return eligible


def review_samples(
    store: object, rows: int | np.ndarray, n: int, d: int, *, dtype: torch.dtype = torch.float64
) -> Tensor:
    """Normalised samples (n, d) of store rows ``rows`` (one row, or an array of rows -> a batch)."""
    hidden = store.hidden  # type: ignore[attr-defined]
    return normalise(np.asarray(hidden[rows, :n, :d], dtype=np.float64), n, d, dtype=dtype)
