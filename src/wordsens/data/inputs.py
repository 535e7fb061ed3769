"""Checks that the experiments' inputs can carry them (docs/inputs.md), torch-free and pandas-free (the
planner reads the same verdicts): the tokenizer at pool time (``check_vocabulary``, ``check_unk_share``,
``check_review_unk``, ``check_tokenizer_files``), the store when it is written (``check_finite``,
``store_problems``, ``check_near_duplicates``) and a generalisation task's ``duplicates``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# What a tokenizer that knows no word suggests, in every message about [UNK] and vocabularies.
_TOKENIZER_FIX = (
    "re-save the tokenizer with its full vocabulary (AutoTokenizer.from_pretrained on the original "
    "model, or BertTokenizerFast(vocab=path): transformers 5 ignores vocab_file= and keeps only the "
    "special tokens), or point model.name at a folder whose tokenizer matches the model"
)


class InputError(ValueError):
    """Input data that cannot carry the experiments; the message names the cause and the fix."""


# two samples at least this similar (cosine of the flattened samples) are near-duplicates
NEAR_DUPLICATE = 0.9999


# ----------------------------------------------------------------------------- the tokenizer
def check_vocabulary(tokenizer_size: int, embedding_rows: int | None, tokenizer: str) -> str:
    """One line on the tokenizer's vocabulary against the model's word-embedding rows (None: not known, not
    checked); ``InputError`` where the tokenizer has more tokens (its largest ids would index past the table).
    Fewer are named, not refused (models pad their tables; the ``[UNK]`` share decides)."""
    if embedding_rows is None:
        return f"tokenizer {tokenizer}: {tokenizer_size} tokens (the model's word-embedding rows are not known here)"
    if tokenizer_size > embedding_rows:
        raise InputError(
            f"the tokenizer of {tokenizer} has {tokenizer_size} tokens but the model has {embedding_rows} "
            f"word-embedding rows (config.json vocab_size): ids {embedding_rows} and above have no "
            f"embedding. The tokenizer belongs to another model: {_TOKENIZER_FIX}"
        )
    if tokenizer_size < embedding_rows:
        return (
            f"tokenizer {tokenizer}: {tokenizer_size} tokens, fewer than the model's {embedding_rows} "
            f"word-embedding rows (a mismatch: the [UNK] share below tells whether it knows the words)"
        )
    return f"tokenizer {tokenizer}: {tokenizer_size} tokens = the model's word-embedding rows"


# Files that hold a tokenizer's vocabulary, one of which a model folder needs (BERT-family: vocab.txt
# or tokenizer.json; BPE: vocab.json with merges.txt; SentencePiece: its .model file).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model")


def check_tokenizer_files(
    tokens: Iterable[str], specials: Iterable[str], *, setting: str, folder: str, files: Sequence[str]
) -> None:
    """``InputError`` where a tokenizer loaded from ``folder`` (named by ``setting``) knows no token but its
    ``specials`` and the folder holds none of ``TOKENIZER_FILES`` (``files``: what it holds): from such a
    folder ``transformers`` builds a tokenizer of the special tokens alone, silently."""
    special = set(specials)
    vocabulary = list(tokens)
    if any(token not in special for token in vocabulary) or set(files) & set(TOKENIZER_FILES):
        return
    raise InputError(
        f"cannot use the tokenizer of {setting}: the tokenizer files are missing from {folder} (it "
        f"holds {', '.join(sorted(files)) or 'nothing'}; a tokenizer needs one of {', '.join(TOKENIZER_FILES)}, "
        f"with tokenizer_config.json), and transformers built a tokenizer of its {len(vocabulary)} special tokens "
        f"only, which knows no word. Save the model's tokenizer there (tokenizer.save_pretrained(folder)) or point "
        f"{setting} at a folder that has it"
    )


def _total(counts: Iterable[int]) -> int:
    return int(np.sum(np.asarray(list(counts), dtype=np.int64)))


def unk_share(tokens: Iterable[int], unk: Iterable[int]) -> float:
    """The share of unknown tokens among all tokens (per-review counts summed); 0 for no tokens."""
    total = _total(tokens)
    return _total(unk) / total if total else 0.0


def check_unk_share(
    tokens: Sequence[int],
    unk: Sequence[int],
    *,
    limit: float,
    tokenizer: str,
    unk_token: str | None,
    tokenizer_size: int | None = None,
    embedding_rows: int | None = None,
) -> str:
    """The pool's ``[UNK]`` share from its per-review counts: one line for the log, or ``InputError`` above
    ``limit`` (naming ``tokenizer_size`` and ``embedding_rows``); ``unk_token`` None: nothing is unknown."""
    total, unknown, share = _total(tokens), _total(unk), unk_share(tokens, unk)
    if unk_token is None:
        return f"[UNK] share 0 of {total} tokens: the tokenizer {tokenizer} has no unknown token"
    if share > limit:
        vocabulary = ""
        if tokenizer_size is not None:
            rows = f" for the model's {embedding_rows} word-embedding rows" if embedding_rows else ""
            vocabulary = f"Its vocabulary has {tokenizer_size} tokens{rows}. "
        raise InputError(
            f"the tokenizer of {tokenizer} maps {share:.1%} of the pool's tokens to its unknown token {unk_token} "
            f"({unknown} of {total} tokens of {len(tokens)} reviews; data.max_unk_share = {limit:.0%}): it does "
            f"not know the reviews' words, so their samples would differ little more than by their length. "
            f"{vocabulary}Likely fix: {_TOKENIZER_FIX}; raise data.max_unk_share only if so many unknown words "
            "are expected"
        )
    return f"{unk_token} share {share:.2%} ({unknown} of {total} tokens of {len(tokens)} reviews)"


def check_review_unk(
    tokens: Sequence[int],
    unk: Sequence[int],
    *,
    reviews: Sequence[Any],
    limit: float,
    tokenizer: str,
    unk_token: str | None,
) -> str:
    """``check_unk_share`` review by review: one line for the log, or ``InputError`` naming every review
    (``reviews``: their names, in the order of the counts) with more than ``limit`` of its tokens
    mapped to the unknown token."""
    if unk_token is None:
        return f"[UNK] share 0: the tokenizer {tokenizer} has no unknown token"
    shares = [unk_share([t], [u]) for t, u in zip(tokens, unk, strict=True)]
    above = [f"{name} ({share:.1%})" for name, share in zip(reviews, shares, strict=True) if share > limit]
    if above:
        raise InputError(
            f"the tokenizer of {tokenizer} maps more than data.max_unk_share = {limit:.0%} of the tokens of "
            f"{len(above)} of {len(shares)} reviews to its unknown token {unk_token}: {', '.join(above)}. It does not "
            f"know the reviews' words, so their samples would differ little more than by their length. Likely fix: "
            f"{_TOKENIZER_FIX}"
        )
    worst = max(shares, default=0.0)
    return f"{unk_token} share at most {worst:.2%} per review ({len(shares)} reviews, {int(np.sum(unk))} of them)"


def check_near_duplicates(
    samples: np.ndarray, reviews: Sequence[Any], *, what: str, threshold: float = NEAR_DUPLICATE
) -> None:
    """``InputError`` naming every pair of reviews (``reviews``: the names of the samples along the
    leading axis) whose samples (flattened) have a cosine similarity of at least ``threshold``; ``what``
    says where (a layer, an n)."""
    flat = np.asarray(samples, dtype=np.float64).reshape(len(reviews), -1)
    norms = np.linalg.norm(flat, axis=1)
    unit = flat / np.where(norms > 0, norms, 1.0)[:, None]
    cosine = unit @ unit.T
    pairs = [
        f"{reviews[i]} and {reviews[j]} ({cosine[i, j]:.6f})"
        for i in range(len(reviews))
        for j in range(i + 1, len(reviews))
        if cosine[i, j] >= threshold
    ]
    if pairs:
        raise InputError(
            f"near-duplicate samples ({what}, cosine similarity >= {threshold}): {'; '.join(pairs)}. Reviews that "
            "give (almost) the same sample are one unit counted twice: check the tokenizer (trained.model: does it "
            "know the words?) and drop repeated reviews from the data"
        )


# ----------------------------------------------------------------------------- the store
def check_finite(hidden: np.ndarray, what: str = "hidden states", *, first_row: int = 0) -> None:
    """``InputError`` naming the reviews (rows of the leading axis, counted from ``first_row``) with
    NaN or Inf values."""
    bad = ~np.isfinite(hidden).reshape(hidden.shape[0], -1).all(axis=1)
    if bad.any():
        rows = np.flatnonzero(bad) + first_row
        raise InputError(
            f"the {what} of {rows.size} review(s) hold NaN or Inf values (first: row {int(rows[0])}): float16 "
            "overflow (set model.dtype: float32) or NaN in the model's weights (check the model folder); "
            "nothing was stored"
        )


def _row_ids(hidden: np.ndarray) -> np.ndarray:
    """(reviews, positions) integers, equal where the stored rows are bitwise equal."""
    reviews, positions = hidden.shape[:2]
    rows = np.ascontiguousarray(hidden).reshape(reviews * positions, -1)
    keys = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel()
    return np.unique(keys, return_inverse=True)[1].reshape(reviews, positions).astype(np.int64)


def distinct_curve(hidden: np.ndarray) -> np.ndarray:
    """Distinct samples among the reviews of ``hidden`` (reviews, positions, width) at every context
    length: entry ``n - 1`` counts the distinct first-``n``-rows samples (bitwise), n = 1..positions."""
    ids = _row_ids(hidden)
    groups = np.zeros(ids.shape[0], dtype=np.int64)
    counts = np.empty(ids.shape[1], dtype=np.int64)
    for t in range(ids.shape[1]):
        pairs = groups * (int(ids[:, t].max()) + 1) + ids[:, t]
        groups = np.unique(pairs, return_inverse=True)[1].astype(np.int64)
        counts[t] = int(groups.max()) + 1
    return counts


def distinct_steps(curve: Sequence[int] | np.ndarray) -> list[list[int]]:
    """The curve as ``[n, count]`` pairs where the count changes (compact for meta.json)."""
    steps: list[list[int]] = []
    for n, count in enumerate(np.asarray(curve).tolist(), start=1):
        if not steps or steps[-1][1] != count:
            steps.append([n, int(count)])
    return steps


def distinct_at(steps: Sequence[Sequence[int]], n: int) -> int:
    """The count of distinct samples at context length ``n`` from ``distinct_steps``."""
    if not steps or n < steps[0][0]:
        raise ValueError(f"no distinct-sample count at n = {n}")
    return int([count for start, count in steps if start <= n][-1])


def check_store(
    hidden: np.ndarray,
    ns: Iterable[int],
    *,
    min_share: float,
    store: str = "the store",
    tokens: Sequence[int] | None = None,
    unk: Sequence[int] | None = None,
) -> dict[str, Any]:
    """What meta.json records about a store about to be written: ``distinct_samples`` (n -> count, at every
    n of ``ns`` and at the stored length), ``distinct_steps`` (the whole curve) and, given the pool's
    per-review counts, ``tokens``, ``unk_tokens`` and ``unk_share``. Refused (``InputError``) on NaN/Inf
    and where ``store_problems`` finds any: what the embedding job calls before it saves."""
    check_finite(hidden)
    curve = distinct_curve(hidden)
    lengths = sorted({int(n) for n in ns if 1 <= int(n) <= hidden.shape[1]} | {int(hidden.shape[1])})
    checks: dict[str, Any] = {
        "reviews": int(hidden.shape[0]),
        "distinct_samples": {str(n): int(curve[n - 1]) for n in lengths},
        "distinct_steps": distinct_steps(curve),
    }
    if tokens is not None and unk is not None:
        checks |= {"tokens": _total(tokens), "unk_tokens": _total(unk), "unk_share": unk_share(tokens, unk)}
    problems = store_problems({**checks, "max_length": hidden.shape[1]}, ns, min_share, store)
    if problems:
        raise InputError("the embedding store is refused, nothing was stored:\n  " + "\n  ".join(problems))
    return checks


def _counts(meta: Mapping[str, Any], ns: Iterable[int]) -> dict[int, int]:
    """Distinct samples at each n of ``ns`` (within the stored length) and at the stored length."""
    steps, length = meta["distinct_steps"], int(meta["max_length"])
    return {n: distinct_at(steps, n) for n in sorted({int(n) for n in ns if int(n) <= length} | {length})}


def store_problems(meta: Mapping[str, Any], ns: Iterable[int], min_share: float, store: str = "the store") -> list[str]:
    """The context lengths at which fewer than ``min_share`` of a store's reviews give distinct
    samples, one line each with the count and the fix; none for a store without the counts (written
    before they were recorded)."""
    if "distinct_steps" not in meta:
        return []
    reviews = int(meta["reviews"])
    out = []
    for n, count in _counts(meta, ns).items():
        if count < min_share * reviews:
            unk = f"; the pool's [UNK] share is {meta['unk_share']:.1%}" if "unk_share" in meta else ""
            out.append(
                f"{store}: only {count} of its {reviews} reviews give distinct samples at n = {n} "
                f"({count / reviews:.1%} < data.min_distinct_share = {min_share:.0%}): duplicate samples "
                f"(reviews identical in their first n - 1 tokens, or a tokenizer that maps their words to "
                f"[UNK]{unk}). Check the tokenizer (docs/inputs.md), use larger n, or lower "
                "data.min_distinct_share if the repetition is expected"
            )
    return out


def store_summary(meta: Mapping[str, Any], ns: Iterable[int], min_share: float, store: str) -> list[str]:
    """What ``wordsens plan`` prints about an existing store, in one line: the pool's [UNK] share, the
    distinct samples at the grid's smallest and largest n (the count only grows with n; the stored
    length when no job reads the store), and the verdict of ``store_problems`` over every n."""
    if "distinct_steps" not in meta:
        return [f"{store}: written before its inputs were checked (no distinct-sample counts); re-embed to check it"]
    reviews = int(meta["reviews"])
    unk = (
        f"[UNK] share {meta['unk_share']:.2%} of {meta['tokens']} pool tokens"
        if "unk_share" in meta
        else "[UNK] share not recorded"
    )
    ns = [int(n) for n in ns]
    shown = _counts(meta, [min(ns), max(ns)] if ns else [])
    if ns:
        shown = {n: count for n, count in shown.items() if n in (min(ns), max(ns))}
    counts = ", ".join(f"n={n}: {count}" for n, count in shown.items())
    problems = store_problems(meta, ns, min_share, store)
    verdict = f"below data.min_distinct_share = {min_share:.0%}" if problems else f"at least {min_share:.0%} distinct"
    return [f"{store}: {unk}; distinct samples of {reviews} reviews: {counts} ({verdict})"]


# ----------------------------------------------------------------------------- samples of a task
def sample_keys(samples: np.ndarray) -> list[bytes]:
    """One digest per sample (the leading axis): equal digests <=> bitwise-equal samples."""
    flat = np.ascontiguousarray(samples).reshape(samples.shape[0], -1)
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in flat]


@dataclass(frozen=True)
class Duplicates:
    """Training samples that equal another one or the new sample (``repeated``, which counts each
    sample of a repeated group), and those equal to the new sample (``equal_new``)."""

    repeated: int
    equal_new: int

    def __bool__(self) -> bool:
        return self.repeated > 0

    def describe(self, N: int) -> str:
        return (
            f"duplicate samples: {self.repeated} of the N = {N} training samples equal another one or the "
            f"new sample ({self.equal_new} equal the new sample)"
        )


def duplicates(train: np.ndarray, new: np.ndarray) -> Duplicates:
    """Count the duplicates of a task: ``train`` (N, ...) and the new sample ``new`` (...)."""
    train_keys = sample_keys(np.asarray(train))  # no concatenation: a task can hold GBs of samples
    new_key = sample_keys(np.asarray(new)[None])[0]
    seen: dict[bytes, int] = {}
    for key in [*train_keys, new_key]:
        seen[key] = seen.get(key, 0) + 1
    repeated = sum(1 for key in train_keys if seen[key] > 1)
    return Duplicates(repeated=repeated, equal_new=sum(1 for key in train_keys if key == new_key))
