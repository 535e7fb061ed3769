"""Generalisation tasks: a training set and a new sample, synthetic (Gaussian rows, a random linear teacher)
or N + 1 reviews with distinct samples from an embedding store, and their checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import maps
from ..data.inputs import duplicates, sample_keys
from ..data.samples import eligible_reviews, review_samples, synthetic_sample
from ..seeds import derive_seed, generator

Tensor = torch.Tensor


def check_task(X_train: Tensor, y_train: Tensor, X: Tensor, y: float) -> tuple[int, int, int]:
    """Validate a training set (N, n, d) with labels +-1 and a new sample (n, d); return (N, n, d)."""
    if not isinstance(X_train, Tensor) or X_train.ndim != 3:
        raise ValueError(f"X_train must have shape (N, n, d), got {getattr(X_train, 'shape', type(X_train))}")
    N, n, d = X_train.shape
    if N < 1:
        raise ValueError("the training set needs N >= 1 samples")
    maps.check_sample(X_train, "X_train")
    maps.check_sample(X, "X")
    if tuple(X.shape) != (n, d):
        raise ValueError(f"X has shape {tuple(X.shape)} but the training samples are ({n}, {d})")
    y_train = torch.as_tensor(y_train, dtype=torch.float64)
    if y_train.shape != (N,):
        raise ValueError(f"y_train must have shape (N,) = ({N},), got {tuple(y_train.shape)}")
    if not bool(((y_train == 1) | (y_train == -1)).all()) or y not in (1, -1, 1.0, -1.0):
        raise ValueError("labels must be +1 or -1")
    return N, n, d


def synthetic_task(N: int, n: int, d: int, seed: int) -> tuple[Tensor, Tensor, Tensor, float]:
    """Gaussian rows of norm sqrt(d) labelled ``sign(<flat(X), u>)`` (a random unit teacher ``u``):
    ``(X_train, y_train, X, y)``."""
    if N < 1:
        raise ValueError(f"N must be >= 1, got {N}")
    samples = synthetic_sample(n, d, derive_seed(seed, "gen-samples"), batch=(N + 1,))
    teacher = torch.randn(n * d, generator=generator(derive_seed(seed, "gen-teacher")), dtype=torch.float64)
    teacher /= torch.linalg.vector_norm(teacher)
    labels = torch.sign(samples.reshape(N + 1, -1) @ teacher)
    labels[labels == 0] = 1
    return samples[:N], labels[:N], samples[N], float(labels[N])


def draw_task(
    source: Any, N: int, n: int, d: int, seed: int, *, min_tokens: bool = False
) -> tuple[Tensor, Tensor, Tensor, float, dict[str, Any]]:
    """``(X_train, y_train, X, y, info)`` from ``"synthetic"`` or an embedding store (the first N + 1 reviews
    with distinct samples in a seeded order, labels 0/1 as -1/+1)."""
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise ValueError(f"N must be an integer >= 1, got {N!r}")
    if isinstance(source, str):
        if source != "synthetic":
            raise ValueError(f"unknown data source {source!r}; use 'synthetic' or an embedding store")
        Xt, yt, X, y = synthetic_task(N, n, d, seed)
        return Xt, yt, X, y, {"review_id": -1}
    eligible = eligible_reviews(source, n, d, min_tokens=min_tokens, needed=N + 1)
    order = torch.randperm(eligible.size, generator=generator(derive_seed(seed, "gen-reviews"))).numpy()
    rows = np.sort(distinct_rows(source.hidden, eligible[order], N + 1, n, d))
    samples = review_samples(source, rows, n, d)
    index = source.index
    labels = torch.as_tensor(2.0 * np.asarray(index["label"])[rows] - 1.0, dtype=torch.float64)
    test = int(torch.randint(0, N + 1, (1,), generator=generator(derive_seed(seed, "gen-test"))))
    keep = [i for i in range(N + 1) if i != test]
    check_distinct(samples[keep], samples[test])
    info = {"review_id": int(index["review_id"].iloc[rows[test]])}
    return samples[keep], labels[keep], samples[test], float(labels[test]), info


def distinct_rows(hidden: np.ndarray, candidates: np.ndarray, count: int, n: int, d: int) -> np.ndarray:
    """The first ``count`` rows of ``candidates`` (store rows, in order) whose samples ``hidden[row, :n, :d]``
    differ bitwise from those taken before; ``ValueError`` when fewer are distinct."""
    taken: list[int] = []
    seen: set[bytes] = set()
    start, step = 0, count
    while len(taken) < count and start < candidates.size:
        chunk = candidates[start : start + step]
        for row, key in zip(chunk, sample_keys(np.asarray(hidden[np.asarray(chunk), :n, :d])), strict=True):
            if key not in seen:
                seen.add(key)
                taken.append(int(row))
                if len(taken) == count:
                    break
        start, step = start + chunk.size, max(64, count - len(taken))
    if len(taken) < count:
        raise ValueError(
            f"duplicate samples: the store's {candidates.size} eligible reviews give only {len(taken)} distinct "
            f"samples at n = {n}, d = {d}, and the task needs N + 1 = {count}; the store's meta.json "
            "(distinct_samples, unk_share) tells whether the tokenizer maps the words to [UNK] "
            "(docs/inputs.md); otherwise lower N or use larger n"
        )
    return np.asarray(taken, dtype=np.int64)


def check_distinct(X_train: Tensor, X: Tensor) -> None:
    """``ValueError`` naming the duplicate samples of a task, before any Gram matrix is built."""
    found = duplicates(X_train.detach().cpu().numpy(), X.detach().cpu().numpy())
    if found:
        raise ValueError(
            f"{found.describe(X_train.shape[0])}: the task cannot carry the experiment (a new sample equal "
            "to a training sample lies in the span of the training features); draw distinct samples"
        )
