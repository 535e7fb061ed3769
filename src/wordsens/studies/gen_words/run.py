"""The generalisation experiment with real words on reviews (docs/studies.md, the gen_words study): a task drawn
from texts through an encoder's own embedding layer (``word_task``), one simulation in the settings of
``wordsens.generalisation.comparison`` (``gen_word_simulation``) and its rows with the words as text
(``word_rows``). The samples are those of the swaps study (``EmbeddingLayer.sample`` of ``review_tokens``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ...data.inputs import sample_keys
from ...data.vocabulary import EmbeddingLayer, context, review_tokens, swap_positions
from ...generalisation.comparison import WordSimulation, word_simulation
from ...generalisation.core import prepare
from ...seeds import derive_seed, generator
from ..swaps.run import Vocabulary

if TYPE_CHECKING:
    from . import GenWordsJob

Tensor = torch.Tensor


@dataclass
class WordTask:
    """A training set ``X_train`` (N, n, d) with labels ``y_train`` (+-1), the new sample ``X`` (n, d) with
    label ``y`` and token ids ``ids``; ``review``: the new sample's index in the texts, ``train``: the
    training samples' indices."""

    X_train: Tensor
    y_train: Tensor
    X: Tensor
    y: float
    ids: list[int]
    review: int
    train: list[int]


def _samples(tokenizer: Any, layer: EmbeddingLayer, texts: Sequence[str], n: int, d: int) -> tuple[Tensor, list]:
    """The samples (m, n, d) of ``texts`` and their token ids, through the embedding layer (one formula)."""
    ids = [review_tokens(tokenizer, text, n) for text in texts]
    flat = np.asarray(ids, dtype=np.int64).reshape(-1)
    rows = layer.rows(flat, np.tile(np.arange(n), len(ids)), d)
    return rows.reshape(len(ids), n, d), ids


def word_task(
    tokenizer: Any,
    layer: EmbeddingLayer,
    texts: Sequence[str],
    labels: Sequence[int],
    *,
    review: int,
    N: int,
    n: int,
    d: int,
    seed: int,
) -> WordTask:
    """The new sample: text ``review`` (labels 0/1 become -1/+1); the training set: the first N of the
    other texts in a seeded random order whose samples differ from the new one's and each other's
    (bitwise). ValueError naming the setting when the texts cannot give it."""
    if not 0 <= review < len(texts):
        raise ValueError(f"review {review} is not in [0, {len(texts) - 1}] ({len(texts)} reviews)")
    if not 1 <= N < len(texts):
        raise ValueError(f"N = {N} training reviews and the new one need N + 1 <= {len(texts)} reviews: lower N")
    X, ids = _samples(tokenizer, layer, [texts[review]], n, d)
    others = [j for j in range(len(texts)) if j != review]
    order = torch.randperm(len(others), generator=generator(derive_seed(seed, "gen-words-reviews"))).tolist()
    seen = set(sample_keys(X.numpy()))
    train: list[int] = []
    chunks: list[Tensor] = []
    for start in range(0, len(order), 256):  # 256 texts at a time: their layer outputs in float64
        picked = [others[j] for j in order[start : start + 256]]
        S, _ = _samples(tokenizer, layer, [texts[j] for j in picked], n, d)
        keep = []
        for j, (row, key) in enumerate(zip(picked, sample_keys(S.numpy()), strict=True)):
            if key not in seen and len(train) < N:
                seen.add(key)
                train.append(row)
                keep.append(j)
        chunks.append(S[keep])
        if len(train) == N:
            break
    if len(train) < N:
        raise ValueError(
            f"the texts give only {len(train)} samples distinct from each other and the new one at n = {n}: lower N"
        )
    y_train = torch.tensor([2.0 * float(labels[j]) - 1.0 for j in train], dtype=torch.float64)
    y = 2.0 * float(labels[review]) - 1.0
    return WordTask(torch.cat(chunks), y_train, X[0], y, ids[0], review, train)


def check_word_position(tokenizer: Any, ids: Sequence[int], position: int) -> None:
    """ValueError unless ``position`` holds a word of the sample ``ids`` (not [CLS], [SEP], [PAD] or another
    special token), naming the token and the word positions there are."""
    n = len(ids)
    specials = set(int(i) for i in tokenizer.all_special_ids)
    words = [p for p in range(n) if int(ids[p]) not in specials]
    where = f"word positions of this sample: {words[0]}..{words[-1]}" if words else "the sample has no word"
    if not 0 <= position < n:
        raise ValueError(f"position {position} is outside the n = {n} tokens of the sample; {where}")
    if int(ids[position]) in specials:
        token = tokenizer.convert_ids_to_tokens([int(ids[position])])[0]
        raise ValueError(f"position {position} holds {token}, not a word: the change must be a word's; {where}")


def gen_word_simulation(
    tokenizer: Any,
    layer: EmbeddingLayer,
    task: WordTask,
    map_name: str,
    *,
    seed: int,
    position: int | None = None,
    vocabulary: str = "words",
    options: dict[str, Any] | None = None,
    device: str = "cpu",
    **kwargs: Any,
) -> tuple[WordSimulation, dict[str, Any]]:
    """One simulation of ``task``: the map prepared at the word ``position`` (None: one drawn as the swaps
    study draws its positions, seeded by ``seed``) with [CLS] reachable, every word of the ``vocabulary``
    (``candidate_ids``) scored there and the continuous settings beside (``word_simulation``; ``kwargs`` go
    to it). Returns the simulation and what its rows need: the candidates' names, the position, the
    original word's candidate index and the context of the substitution."""
    n, d = task.X.shape
    if position is None:
        specials = [int(i) for i in tokenizer.all_special_ids]
        position = swap_positions(task.ids, specials, count=1, n_min=n, seed=derive_seed(seed, "gen-words"))[0]
    check_word_position(tokenizer, task.ids, position)
    words = Vocabulary(tokenizer, layer, vocabulary)
    setup = prepare(
        map_name, task.X_train, task.y_train, task.X, task.y, seed=seed, position=position, also=(0,),
        options=options, device=device,
    )  # fmt: skip
    exclude = words.index.get(int(task.ids[position]))
    sim = word_simulation(setup, words.rows.at(position, d), exclude=exclude, seed=seed, **kwargs)
    info = {
        "names": words.names,
        "position": position,
        "original": tokenizer.convert_ids_to_tokens([int(task.ids[position])])[0],
        "context": context(tokenizer, task.ids, position, "?"),
        "prepare_seconds": setup.seconds,
        "fit": setup.fit,
    }
    return sim, info


def word_rows(sim: WordSimulation, names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (training, loss, penalty, setting): the words' best word (as text, with its top words and
    the loss's statistics over the vocabulary) and each continuous search, with D0, D1, Err, gamma_min, the
    alignment ``a`` and the move's norm."""
    words = sim.words
    rows = []
    for c in words.choices:
        key = {"training": c.training, "loss": c.loss, "penalty": c.penalty}
        rows.append(
            {
                **key,
                "setting": "words",
                "word": names[c.index],
                "value": c.value,
                "D0": c.D0,
                "D1": c.D1,
                "err": c.err,
                "gamma_min": c.gamma_min,
                "alignment": c.alignment,
                "radius": c.radius,
                "top_words": json.dumps([names[j] for j in c.top]),
                "top_values": json.dumps(c.top_values),
                "mean": c.mean,
                "median": c.median,
                "p01": c.p01,
                "stats_words": c.stats_words,
                "words": words.words,
            }
        )
        for setting in ("cls", "position", "word_radius"):
            if not sim.continuous:
                break
            found = sim.search(setting, c.training, c.loss, c.penalty)
            res = found.result
            rows.append(
                {
                    **key,
                    "setting": setting,
                    "word": None,
                    "value": math.nan,
                    "D0": res.D0,
                    "D1": res.D1,
                    "err": res.err,
                    "gamma_min": res.gamma_min,
                    "alignment": res.alignment,
                    "radius": res.delta_norm,
                    "ball": found.radius,
                    "moved": found.position,
                }
            )
    return rows


def _reached(row: dict[str, Any]) -> bool:
    """Whether a row's move learns the opposite label while the first stage stays unsure: Err < 1 with
    gamma_min <= 1 (for the words: some word of the vocabulary, ``frontier_err_at_1``)."""
    err = row.get("frontier_err_at_1", row["err"])
    return bool(err < 1.0 and (row["setting"] == "words" or row["gamma_min"] <= 1.0))


def _simulation_rows(
    tokenizer: Any, layer: EmbeddingLayer, texts: list[str], labels: list[int], ids: list[int],
    job: GenWordsJob, simulation: int, *, chunk_mb: float,
) -> tuple[list[dict[str, Any]], str]:  # fmt: skip
    """The rows of one simulation: its review (the first of a seeded order with at least n tokens), its
    training set, its word position and the data (none of them depending on the map: the maps' simulations
    of one index share them), the map's weights from a seed of the map."""
    from ...data.reviews import pick_reviews

    base = derive_seed(job.seed, "gen_words", job.n, job.N, job.d, simulation)
    order = torch.randperm(len(texts), generator=generator(derive_seed(base, "review"))).tolist()
    (first,) = pick_reviews(tokenizer, [texts[i] for i in order], n=job.n, count=1, section="gen_words")
    review = order[first]
    task = word_task(tokenizer, layer, texts, labels, review=review, N=job.N, n=job.n, d=job.d, seed=base)
    specials = [int(i) for i in tokenizer.all_special_ids]
    (position,) = swap_positions(task.ids, specials, count=1, n_min=job.n, seed=derive_seed(base, "position"))
    sim, info = gen_word_simulation(
        tokenizer, layer, task, job.map, seed=derive_seed(base, job.map), position=position,
        vocabulary=job.vocabulary, options=dict(job.options) or None, device=job.device, penalties=job.penalties,
        continuous=job.continuous, top_k=job.top_k, chunk_mb=chunk_mb, search=dict(job.search),
    )  # fmt: skip
    words = sim.words
    head = {
        "map": job.map,
        "d": job.d,
        "n": job.n,
        "N": job.N,
        "simulation": simulation,
        "review_id": ids[review],
        "position": position,
        "original": info["original"],
        "context": info["context"],
        "y": words.y,
        "t0": words.t0,
        "vocab": words.vocab,
        "scan_dtype": words.dtype,
    }
    rows = []
    for row in word_rows(sim, info["names"]):
        if row["setting"] == "words":
            row["frontier_err_at_1"] = words.frontier(row["training"]).best_err(1.0)
        row["reaches"] = _reached(row)
        rows.append({**head, **row, "seed": derive_seed(base, job.map), "seconds": sum(sim.seconds.values())})
    best = words.choice("retrain", "direct")
    line = (
        f"{job.map} n = {job.n} N = {job.N} simulation {simulation} review {ids[review]} position {position} "
        f"({info['original']}): {words.words} words, best direct word (re-trained) {info['names'][best.index]} "
        f"Err {best.err:.4g}"
    )
    return rows, line


def words_table(
    tokenizer: Any, encoder: Any, pool: Any, job: GenWordsJob, *, chunk_mb: float = 64.0, log: Any = None
) -> Any:
    """The table of one job of the ``gen_words`` rule (``job``: its settings): per simulation of
    ``job.simulations`` the rows of ``_simulation_rows`` on the pool's reviews (labels from the pool), with
    the encoder's name (``model``), the job's ``config_hash`` and the provenance of every row."""
    import pandas as pd

    texts = [str(t) for t in pool["text"]]
    labels = [int(v) for v in pool["label"]]
    ids = [int(v) for v in pool["review_id"]]
    layer = EmbeddingLayer.of(encoder)
    rows = []
    for simulation in job.simulations:
        found, line = _simulation_rows(tokenizer, layer, texts, labels, ids, job, simulation, chunk_mb=chunk_mb)
        rows += found
        if log is not None:
            log(line)
    frame = pd.DataFrame(rows)
    frame.insert(0, "model", job.model)
    for column in ("word", "top_words", "top_values"):
        frame[column] = frame[column].astype("object") if column in frame else None
    return frame.assign(**job.stamp())
