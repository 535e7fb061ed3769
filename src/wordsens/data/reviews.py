"""IMDb reviews from the Hub or a local copy (``data.source``: docs/configuration.md), and the seeded
selection of a review pool. Every source yields the Hub copy's table in its order (negatives, then
positives, each by file id); ``review_id`` is the row number in that order, the same whatever the source.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..seeds import derive_seed
from .hub import LOCAL_DATA_EXAMPLE, NoNetwork, hub_reachable

SOURCES = ("hub", "aclimdb", "tarball", "parquet")
_NAME = re.compile(r"^(\d+)_(\d+)\.txt$")
_LOCAL_HELP = (
    "set data.source to 'aclimdb' (an extracted aclImdb/ folder), 'tarball' (aclImdb_v1.tar.gz) or "
    "'parquet' (files with text/label columns) and data.path to its location, e.g. "
    f"{LOCAL_DATA_EXAMPLE}; the encoder needs the Hub too unless model.name is a local folder, in the "
    "Hugging Face cache or the packaged encoder (--configfile config/pretrained.yaml)"
)


def _frame(rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    """Canonical order (negatives, then positives, each by file id) and review ids."""
    rows.sort(key=lambda r: (r[0], r[1]))
    frame = pd.DataFrame(rows, columns=["label", "file_id", "text"])
    frame.insert(0, "review_id", np.arange(len(frame), dtype=np.int64))
    return frame


def _read_aclimdb(path: Path, split: str) -> pd.DataFrame:
    rows: list[tuple[int, int, str]] = []
    for label, folder in ((0, "neg"), (1, "pos")):
        directory = path / split / folder
        if not directory.is_dir():
            raise FileNotFoundError(
                f"{directory} does not exist: data.path must point at an extracted aclImdb/ "
                f"folder holding {split}/neg and {split}/pos"
            )
        for file in directory.iterdir():
            match = _NAME.match(file.name)
            if match:
                rows.append((label, int(match.group(1)), file.read_text(encoding="utf-8", errors="replace")))
    return _frame(rows)


def _read_tarball(path: Path, split: str) -> pd.DataFrame:
    rows: list[tuple[int, int, str]] = []
    pattern = re.compile(rf"(?:^|/)aclImdb/{re.escape(split)}/(neg|pos)/(\d+)_(\d+)\.txt$")
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                match = pattern.search(member.name)
                if match and member.isfile():
                    handle = tar.extractfile(member)
                    assert handle is not None
                    text = handle.read().decode("utf-8", errors="replace")
                    rows.append((int(match.group(1) == "pos"), int(match.group(2)), text))
    except (tarfile.TarError, EOFError, OSError) as err:
        raise ValueError(f"{path} is not a readable aclImdb tarball ({err}); check data.path") from None
    if not rows:
        raise ValueError(f"{path} holds no aclImdb/{split}/{{neg,pos}}/*.txt reviews; check data.path and data.split")
    return _frame(rows)


def _read_parquet(path: Path, split: str) -> pd.DataFrame:
    if path.is_dir():
        candidates = (
            sorted(path.glob(f"{split}.parquet"))
            or sorted(path.glob(f"{split}-*.parquet"))
            or sorted(path.glob(f"{split}*.parquet"))
        )
        if not candidates:
            raise FileNotFoundError(
                f"no {split}.parquet in {path}; data.path must be a Parquet file or a folder holding <split>.parquet"
            )
        frame = pd.concat([pd.read_parquet(p) for p in candidates], ignore_index=True)
    else:
        frame = pd.read_parquet(path)
    missing = {"text", "label"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path} lacks the column(s) {sorted(missing)}; IMDb Parquet files need text and label")
    file_id = frame["file_id"] if "file_id" in frame.columns else pd.Series(np.arange(len(frame)))
    rows = list(zip(frame["label"].astype(int), file_id.astype(int), frame["text"].astype(str), strict=False))
    return _frame(rows)


def _read_hub(name: str, split: str) -> pd.DataFrame:
    if not hub_reachable(for_datasets=True):
        raise NoNetwork(f"the Hugging Face Hub is not reachable, so {name!r} cannot be downloaded; {_LOCAL_HELP}")
    import datasets

    try:
        ds = datasets.load_dataset(name, split=split)
    except Exception as err:  # datasets raises many types for network and cache problems
        raise NoNetwork(
            f"downloading {name!r} from the Hub failed ({type(err).__name__}: {err}); {_LOCAL_HELP}"
        ) from err
    frame = ds.to_pandas()
    # the Hub copy is already in canonical order; file ids are not part of it
    pairs = zip(frame["label"], frame["text"], strict=True)
    rows = [(int(label), i, str(text)) for i, (label, text) in enumerate(pairs)]
    return _frame(rows)


def load_reviews(
    source: str, *, path: str | None = None, split: str = "train", hub_name: str = "stanfordnlp/imdb"
) -> pd.DataFrame:
    """All labelled reviews of ``split``: columns ``review_id``, ``label`` (0 neg, 1 pos), ``file_id``, ``text``."""
    if source not in SOURCES:
        raise ValueError(f"unknown data.source {source!r}; choose one of {', '.join(SOURCES)}")
    if source == "hub":
        frame = _read_hub(hub_name, split)
    else:
        if not path:
            raise ValueError(f"data.source {source!r} needs data.path (the location of the local copy)")
        p = Path(path).expanduser()
        if not p.exists():
            raise FileNotFoundError(f"data.path {p} does not exist")
        frame = {"aclimdb": _read_aclimdb, "tarball": _read_tarball, "parquet": _read_parquet}[source](p, split)
    if len(frame) == 0:
        raise ValueError(f"no reviews found for split {split!r} in data source {source!r}")
    bad = set(frame["label"].unique()) - {0, 1}
    if bad:
        raise ValueError(f"labels must be 0 (negative) or 1 (positive), found {sorted(bad)}")
    return frame


def tokens_to_fill(max_length: int, specials: int = 2) -> int:
    """The fewest WordPiece tokens a review needs to fill every one of ``max_length`` positions with
    its words and the ``specials`` tokens a BERT input adds ([CLS] and [SEP]): no [PAD] row at any n
    (the long-context pool's ``min_tokens``)."""
    if max_length <= specials:
        raise ValueError(f"max_length must exceed the {specials} special tokens, got {max_length}")
    return max_length - specials


def select_pool(
    reviews: pd.DataFrame,
    tokenizer,
    *,
    pool_size: int,
    max_tokens: int | None,
    seed: int,
    min_tokens: int = 0,
    section: str = "data",
    batch_size: int = 256,
) -> pd.DataFrame:
    """A balanced, seeded pool of reviews with at least ``min_tokens`` and fewer than ``max_tokens`` (None: no
    bound) WordPiece tokens, specials not counted: each label's reviews visited in a seeded order, tokenised in
    batches, until ``pool_size / 2`` are found. Columns ``review_id``, ``label``, ``tokens``, ``unk`` (the
    unknown tokens), ``text``, labels interleaved; ``section``: the configuration section errors name."""
    if pool_size < 2 or pool_size % 2:
        raise ValueError(f"{section}.pool_size must be an even number >= 2 (half per label), got {pool_size}")
    if max_tokens is not None and max_tokens <= max(min_tokens, 0):
        raise ValueError(f"{section}.max_tokens must be > {max(min_tokens, 0)}, got {max_tokens}")
    half = pool_size // 2
    unk_id = getattr(tokenizer, "unk_token_id", None)
    picked: dict[int, list[tuple[int, int, int, int, str]]] = {0: [], 1: []}
    for label in (0, 1):
        subset = reviews[reviews["label"] == label]
        order = np.random.default_rng(derive_seed(seed, "pool", label) % 2**32).permutation(len(subset))
        subset = subset.iloc[order]
        for start in range(0, len(subset), batch_size):
            chunk = subset.iloc[start : start + batch_size]
            ids = tokenizer(list(chunk["text"]), add_special_tokens=False, truncation=False)["input_ids"]
            for (rid, text), tokens in zip(zip(chunk["review_id"], chunk["text"], strict=False), ids, strict=False):
                if min_tokens <= len(tokens) and (max_tokens is None or len(tokens) < max_tokens):
                    unknown = tokens.count(unk_id) if unk_id is not None else 0
                    picked[label].append((int(rid), label, len(tokens), unknown, text))
                    if len(picked[label]) == half:
                        break
            if len(picked[label]) == half:
                break
        if len(picked[label]) < half:
            which = "positive" if label else "negative"
            bound, fix = (
                (f"at least {min_tokens}", f"{section}.max_length")
                if min_tokens > 0
                else (f"fewer than {max_tokens}", f"raise {section}.max_tokens")
            )
            raise ValueError(
                f"only {len(picked[label])} {which} reviews have {bound} tokens, {half} needed; lower "
                f"{section}.pool_size or {fix}"
            )
    rows = [row for pair in zip(picked[0], picked[1], strict=False) for row in pair]
    return pd.DataFrame(rows, columns=["review_id", "label", "tokens", "unk", "text"])


def pick_reviews(tokenizer: Any, texts: Sequence[str], *, n: int, count: int, section: str) -> list[int]:
    """The indices of the first ``count`` texts (in their order) that the tokenizer turns into at least
    ``n`` tokens, ``[CLS]`` and ``[SEP]`` included; ValueError naming the fix (in the configuration
    ``section`` that asked for them: its ``n`` and ``reviews``) where too few have."""
    found: list[int] = []
    for index, text in enumerate(texts):
        if len(tokenizer(str(text), truncation=False)["input_ids"]) >= n:
            found.append(index)
            if len(found) == count:
                return found
    raise ValueError(
        f"only {len(found)} of {len(texts)} reviews have at least n = {n} tokens, {count} needed: lower the "
        f"largest n ({section}.n) or the number of reviews ({section}.reviews), or give the pool longer reviews "
        "(data.max_tokens, data.pool_size)"
    )
