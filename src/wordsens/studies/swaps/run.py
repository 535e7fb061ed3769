"""The swaps study's rows (docs/studies.md): per (map, review, word position), every word of the vocabulary put
there through the encoder's embedding layer and scored (``wordsens.search.swaps.substitution``), beside the
continuous search on the same weights at the radius the best word moves. A map's weights come from a seed of the
review (the same at every position and n of it, where their shape allows).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...data.vocabulary import EmbeddingLayer, candidate_ids, context, review_tokens, swap_positions
from ...seeds import derive_seed

if TYPE_CHECKING:
    from . import SwapJob


class Vocabulary:
    """The candidate words of the real-word studies: the ``vocabulary``'s ids (``candidate_ids``), their rows
    at any position of the embedding ``layer``, their names, and the special tokens of the tokenizer."""

    def __init__(self, tokenizer: Any, layer: EmbeddingLayer, vocabulary: str) -> None:
        self.tokenizer = tokenizer
        self.layer = layer
        self.ids = candidate_ids(tokenizer, vocabulary, rows=int(self.layer.word.shape[0]))
        self.index = {int(w): j for j, w in enumerate(self.ids)}
        self.rows = self.layer.words(self.ids)
        self.names = tokenizer.convert_ids_to_tokens([int(w) for w in self.ids])
        self.specials = [int(i) for i in tokenizer.all_special_ids]


def _positions(job: SwapJob, ids: Sequence[int], specials: Sequence[int], review_id: int) -> list[int]:
    """The job's word positions of a review (``swap_positions``, seeded by the review: the same for every map)."""
    seed = derive_seed(job.seed, "swaps", review_id)
    return swap_positions(ids, specials, count=job.positions, n_min=int(job.n_min), seed=seed)


def _row(job: SwapJob, result: Any, words: Vocabulary, ids: Sequence[int], review: int, review_id: int) -> dict:
    """One row of the study's table from a ``SwapResult``."""
    found, position = result.scan, result.position
    top_words = [words.names[j] for j in found.top]
    return {
        "map": job.map,
        "d": int(job.d),
        "n": int(job.n),
        "review": review,
        "review_id": review_id,
        "position": position,
        "original": words.tokenizer.convert_ids_to_tokens([int(ids[position])])[0],
        "best_word": top_words[0],
        "s_words": result.best,
        "continuous": result.continuous,
        "ratio": result.ratio,
        "radius": result.radius,
        "continuous_sqrt_d": math.nan if result.continuous_sqrt_d is None else result.continuous_sqrt_d,
        "mean": found.mean,
        "median": found.median,
        "p99": found.p99,
        "mean_over_best": found.mean / result.best if result.best > 0 else math.nan,
        "stats_words": found.stats_words,
        "vocab": len(words.ids),
        "exhaustive": found.exhaustive,
        "screened": found.screened or 0,
        "top_words": json.dumps(top_words),
        "top_scores": json.dumps([round(s, 8) for s in found.top_scores]),
        "context": context(words.tokenizer, ids, position, top_words[0]),
        "phi_norm": found.phi_norm,
        "device": result.device,
        "dtype": result.dtype,
        "seconds": found.seconds,
        "continuous_seconds": result.continuous_seconds,
        "seed": derive_seed(job.seed, "swaps", job.map, review_id),
        "options": json.dumps({k: v for k, v in result.options.items() if k != "model"}, sort_keys=True),
    }


def swap_rows(
    tokenizer: Any,
    encoder: Any,
    texts: Sequence[str],
    job: SwapJob,
    *,
    model: str,
    review_ids: Sequence[int] | None = None,
    positions: Sequence[int] | None = None,
    chunk_mb: float = 64.0,
    log: Callable[[str], Any] | None = None,
) -> list[dict[str, Any]]:
    """The rows of one ``SwapJob`` on ``texts`` (each with at least ``job.n_max`` tokens): per review and word
    position (``swap_positions``, or ``positions`` of every text), the substitution with weights from a seed of
    the map and the review. ``model``: where the encoder came from (a checkpoint map loads its layer from it);
    ``review_ids``: each text's id in the pool (default its index); ``chunk_mb``: a chunk of words' arrays."""
    from ...maps import registry
    from ...search.swaps import substitution

    name, d, n = job.map, int(job.d), int(job.n)
    options = dict(job.options or {})
    if registry.get(name).checkpoint:
        options["model"] = model
    words = Vocabulary(tokenizer, EmbeddingLayer.of(encoder), job.vocabulary)
    rows: list[dict[str, Any]] = []
    for review, text in enumerate(texts):
        review_id = int(review_ids[review]) if review_ids is not None else review
        ids = review_tokens(tokenizer, text, n)
        X = words.layer.sample(ids, d)
        where = list(positions) if positions is not None else _positions(job, ids, words.specials, review_id)
        bad = [p for p in where if not 0 <= p < n]
        if bad:
            raise ValueError(f"positions {bad} are outside the n = {n} tokens of the sample: choose in [0, {n - 1}]")
        for position in where:
            started = time.perf_counter()
            result = substitution(
                name,
                X,
                words.rows.at(position, d),
                position=position,
                seed=derive_seed(job.seed, "swaps", name, review_id),
                options=options,
                device=job.device,
                top_k=int(job.top_k),
                chunk_mb=chunk_mb,
                screen=int(job.screen),
                sample=int(job.sample),
                exclude=words.index.get(int(ids[position])),
                max_steps=int(job.max_steps),
                sqrt_d=bool(job.sqrt_d),
            )
            rows.append(_row(job, result, words, ids, review, review_id))
            if log is not None:
                row = rows[-1]
                log(
                    f"{name} d = {d} n = {n} review {review_id} position {position}: {row['original']} -> "
                    f"{row['best_word']} S_words {result.best:.4g}, continuous {result.continuous:.4g} at "
                    f"r = {result.radius:.3g} ({time.perf_counter() - started:.1f} s)"
                )
    return rows


def swap_table(tokenizer: Any, encoder: Any, pool: Any, job: SwapJob, *, source: str, **kwargs: Any) -> Any:
    """The table of one job of the ``swaps`` rule: ``swap_rows`` on the pool's first ``job.reviews``
    reviews (its seeded order) with at least ``job.n_max`` tokens (the same reviews for every map
    and n), with the encoder's name (``model``), the job's ``config_hash`` and the provenance of every
    row. ``source``: the folder or name the encoder is loaded from; ``kwargs`` go to ``swap_rows``."""
    import pandas as pd

    from ...data.reviews import pick_reviews

    texts = [str(t) for t in pool["text"]]
    chosen = pick_reviews(tokenizer, texts, n=int(job.n_max), count=int(job.reviews), section="swaps")
    ids = [int(pool["review_id"].iloc[i]) for i in chosen]
    rows = swap_rows(tokenizer, encoder, [texts[i] for i in chosen], job, model=source, review_ids=ids, **kwargs)
    frame = pd.DataFrame(rows)
    frame.insert(0, "study", "swaps")
    frame.insert(1, "model", job.model)
    return frame.assign(**job.stamp())
