"""The embedding job's body (wordsens.data.embed.embed_pool) on a tiny BERT built locally: the store it
returns against the hidden states computed directly, and the refusals of its checks (docs/inputs.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wordsens.data import demo, embed, pretrained
from wordsens.data.inputs import InputError
from wordsens.data.store import load_embeddings, save_embeddings

TEXT = "the movie was great and the actors were very good but the plot was too slow i love her smile"
WORDS = TEXT.split(" ")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", hidden=32, layers=2, heads=4)
    return str(path), *pretrained.load_encoder(str(path), "cpu")


def _pool(texts: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "review_id": np.arange(100, 100 + len(texts)),
            "label": np.arange(len(texts)) % 2,
            "text": texts,
            "tokens": [len(t.split()) for t in texts],
            "unk": 0,
        }
    )


def test_the_store_holds_the_pools_hidden_states_and_its_checks(tiny, tmp_path):
    source, tokenizer, model = tiny
    texts = [" ".join(WORDS[i : i + 6 + i % 5]) for i in range(8)]
    lines: list[str] = []
    store = embed.embed_pool(
        tokenizer,
        model,
        _pool(texts),
        source=source,
        model_name="my-bert",
        layer=1,
        max_length=12,
        ns=[8, 4, 8],
        min_share=0.5,
        batch_size=3,
        dtype="float32",
        store="the main store",
        pool_path="pool.parquet",
        log=lines.append,
    )
    hidden, lengths = embed.hidden_states(tokenizer, model, texts, layer=1, max_length=12, dtype=np.float32)
    np.testing.assert_allclose(store.hidden, hidden, rtol=1e-5, atol=1e-6)  # batches of 3 against 16
    assert store.hidden.dtype == np.float32 and store.hidden.shape == (8, 12, 32)
    assert store.index["review_id"].tolist() == list(range(100, 108))
    assert store.index["length"].tolist() == list(lengths)
    meta = store.meta
    assert (meta["model"], meta["layer"], meta["max_length"], meta["pool"]) == ("my-bert", 1, 12, "pool.parquet")
    assert meta["checked_ns"] == [4, 8] and set(meta["distinct_samples"]) == {"4", "8", "12"}
    assert meta["reviews"] == 8 and meta["unk_share"] == 0.0
    rows = model.get_input_embeddings().num_embeddings
    assert meta["vocabulary"] == {"tokenizer": len(tokenizer), "embedding_rows": rows}
    assert len(lines) == 1 and lines[0].startswith(f"tokenizer {source}")
    save_embeddings(tmp_path / "store", store.hidden, store.index, store.meta)  # what the rule writes reads back
    assert load_embeddings(tmp_path / "store" / "meta.json").hidden.shape == (8, 12, 32)


def test_a_pool_of_identical_samples_is_refused_naming_the_threshold(tiny):
    source, tokenizer, model = tiny
    texts = ["the movie was great and the plot was slow"] * 6 + ["i love her smile", "too slow"]
    common = {"source": source, "model_name": "m", "layer": 0, "max_length": 10, "dtype": "float32"}
    with pytest.raises(InputError, match=r"only 3 of its 8 reviews give distinct samples at n = 8.*min_distinct_share"):
        embed.embed_pool(tokenizer, model, _pool(texts), ns=[8], min_share=0.5, **common)
    store = embed.embed_pool(tokenizer, model, _pool(texts), ns=[8], min_share=0.3, **common)  # 3 of 8 >= 30%
    assert store.meta["distinct_samples"]["8"] == 3
