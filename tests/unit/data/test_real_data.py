"""The real IMDb reviews and BERT-Base vocabulary, where this workplace provides them.

They live outside the project (``../shared/data`` or ``$WORDSENS_SHARED_DATA``) and are never
needed: these tests skip when the files are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wordsens.data import reviews as imdb

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("WORDSENS_SHARED_DATA", ROOT.parent / "shared" / "data"))
IMDB = SHARED / "imdb"
BERT = SHARED / "bert-base-uncased"
pytestmark = pytest.mark.skipif(
    not (IMDB / "train.parquet").exists() or not (BERT / "vocab.txt").exists(),
    reason=f"no real IMDb/BERT-Base files at {SHARED}",
)


def test_real_imdb_parquet_and_pool():
    from transformers import BertTokenizerFast

    reviews = imdb.load_reviews("parquet", path=str(IMDB), split="train")
    assert len(reviews) == 25_000 and int(reviews["label"].sum()) == 12_500
    # the Hub's order: negatives first, then positives, each by file id
    assert reviews["label"].is_monotonic_increasing
    for _, part in reviews.groupby("label"):
        assert part["file_id"].is_monotonic_increasing
    tokenizer = BertTokenizerFast(vocab=str(BERT / "vocab.txt"), do_lower_case=True)  # vocab_file= is ignored
    assert tokenizer.vocab_size == 30_522
    pool = imdb.select_pool(reviews, tokenizer, pool_size=200, max_tokens=240, seed=0)
    assert len(pool) == 200 and pool["label"].sum() == 100 and (pool["tokens"] < 240).all()
    again = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in pool["text"][:20]]
    assert again == list(pool["tokens"][:20])
