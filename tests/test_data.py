"""Data sources, review selection, embeddings and the embedding store, on generated corpora."""

from __future__ import annotations

import math
import tarfile
import time

import numpy as np
import pandas as pd
import pytest
import torch

from wordsens import data, demo, embed, preprocess
from wordsens.io import CorruptCache, EmbeddingStore, load_embeddings, save_embeddings


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return demo.make_corpus(root, per_label=30, seed=3)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", hidden=32, layers=2, heads=2)


def test_aclimdb_folder_reader(corpus):
    reviews = data.load_reviews("aclimdb", path=str(corpus))
    assert len(reviews) == 60 and list(reviews.columns) == ["review_id", "label", "file_id", "text"]
    # canonical order: negatives first, then positives, each by file id; ids are row numbers
    assert list(reviews["label"]) == [0] * 30 + [1] * 30
    assert list(reviews["file_id"][:30]) == list(range(30))
    assert list(reviews["review_id"]) == list(range(60))
    assert reviews["text"].str.len().min() > 0


def test_tarball_and_parquet_readers_agree_with_the_folder(corpus, tmp_path):
    tarball = tmp_path / "aclImdb_v1.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(corpus, arcname="aclImdb")
    folder = data.load_reviews("aclimdb", path=str(corpus))
    from_tar = data.load_reviews("tarball", path=str(tarball))
    pd.testing.assert_frame_equal(folder, from_tar)
    parquet = tmp_path / "imdb"
    parquet.mkdir()
    folder.drop(columns=["review_id"]).sample(frac=1, random_state=0).to_parquet(parquet / "train.parquet")
    from_parquet = data.load_reviews("parquet", path=str(parquet))
    pd.testing.assert_frame_equal(folder, from_parquet)
    single = data.load_reviews("parquet", path=str(parquet / "train.parquet"))
    pd.testing.assert_frame_equal(folder, single)


def test_reader_errors(corpus, tmp_path):
    with pytest.raises(ValueError, match="unknown data.source"):
        data.load_reviews("ftp")
    with pytest.raises(ValueError, match="needs data.path"):
        data.load_reviews("aclimdb")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        data.load_reviews("aclimdb", path=str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="test/neg"):
        data.load_reviews("aclimdb", path=str(corpus), split="test")
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(ValueError, match="not a readable aclImdb tarball"):
        data.load_reviews("tarball", path=str(bad))
    frame = tmp_path / "x.parquet"
    pd.DataFrame({"review": ["a"], "label": [0]}).to_parquet(frame)
    with pytest.raises(ValueError, match="text"):
        data.load_reviews("parquet", path=str(frame))
    pd.DataFrame({"text": ["a"], "label": [3]}).to_parquet(frame)
    with pytest.raises(ValueError, match="labels must be 0"):
        data.load_reviews("parquet", path=str(frame))


def test_no_network_fails_fast_with_the_local_keys(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.time()
    with pytest.raises(data.NoNetwork, match="data.source") as err:
        data.load_reviews("hub")
    assert "data.path" in str(err.value)
    assert time.time() - started < 60


def test_pool_is_balanced_short_and_seeded(corpus, tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    reviews = data.load_reviews("aclimdb", path=str(corpus))
    pool = data.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=1)
    assert len(pool) == 20 and pool["label"].sum() == 10
    assert (pool["tokens"] < 100).all()
    counted = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in pool["text"]]
    assert counted == list(pool["tokens"])
    again = data.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=1)
    pd.testing.assert_frame_equal(pool, again)
    other = data.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=2)
    assert set(other["review_id"]) != set(pool["review_id"])
    with pytest.raises(ValueError, match="lower data.pool_size"):
        data.select_pool(reviews, tokenizer, pool_size=60, max_tokens=20, seed=1)
    with pytest.raises(ValueError, match="even"):
        data.select_pool(reviews, tokenizer, pool_size=7, max_tokens=20, seed=1)


def test_hidden_states_of_a_local_model(tiny_bert):
    tokenizer, model = embed.load_encoder(str(tiny_bert), "cpu")
    texts = ["the movie was great", "i love her smile . really very much"]
    hidden, lengths = embed.hidden_states(tokenizer, model, texts, layer=0, max_length=12, batch_size=1,
                                          dtype=np.float32, progress=False)
    assert hidden.shape == (2, 12, 32)
    assert list(lengths) == [6, 10]  # [CLS] + words + [SEP]
    with torch.no_grad():
        enc = embed.encode(tokenizer, texts, 12)
        expected = model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"]).numpy()
    np.testing.assert_allclose(hidden, expected, rtol=1e-5, atol=1e-5)
    last, _ = embed.hidden_states(tokenizer, model, texts, layer=2, max_length=12, progress=False)
    assert not np.allclose(last.astype(np.float32), hidden, atol=1e-2)
    with pytest.raises(ValueError, match="model.layer"):
        embed.hidden_states(tokenizer, model, texts, layer=3, max_length=12, progress=False)


def test_missing_model_fails_clearly(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="local folder"):
        embed.load_encoder("no-such-org/no-such-model", "cpu")


def test_store_round_trip_and_samples(tmp_path):
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(6, 10, 5)).astype(np.float16)
    index = pd.DataFrame({"review_id": [10, 11, 12, 13, 14, 15], "label": [0, 1] * 3, "length": [3, 10, 4, 9, 8, 5]})
    save_embeddings(tmp_path / "store", hidden, index, {"model": "x", "layer": 0})
    store = load_embeddings(tmp_path / "store" / "meta.json")
    assert isinstance(store, EmbeddingStore) and len(store) == 6 and store.width == 5
    X, info = preprocess.draw_sample(store, 7, 4, seed=3)
    assert X.shape == (7, 4)
    torch.testing.assert_close(X.norm(dim=-1), torch.full((7,), 2.0, dtype=torch.float64))
    row = list(index["review_id"]).index(info["review_id"])
    torch.testing.assert_close(X, preprocess.normalise(hidden[row].astype(np.float64), 7, 4))
    picked = {preprocess.draw_sample(store, 9, 4, seed=s, min_tokens=True)[1]["review_id"] for s in range(30)}
    assert picked == {11, 13}
    index.loc[:, "length"] = [3, 4, 4, 5, 8, 5]
    short = EmbeddingStore(hidden=hidden, index=index, meta={}, path=tmp_path)
    with pytest.raises(ValueError, match="at least n = 9"):
        preprocess.draw_sample(short, 9, 4, seed=0, min_tokens=True)
    with pytest.raises(ValueError, match="max_length"):
        preprocess.draw_sample(store, 11, 4, seed=0)
    with pytest.raises(ValueError, match="model width"):
        preprocess.draw_sample(store, 5, 6, seed=0)
    (tmp_path / "store" / "index.parquet").unlink()
    with pytest.raises(CorruptCache, match="index.parquet"):
        load_embeddings(tmp_path / "store")
    with pytest.raises(FileNotFoundError):
        load_embeddings(tmp_path / "nothing")


def test_synthetic_draw_sample():
    X, info = preprocess.draw_sample("synthetic", 5, 3, seed=0)
    assert X.shape == (5, 3) and info["review_id"] == -1
    assert math.isclose(float(X[0].norm()), math.sqrt(3))
    with pytest.raises(ValueError, match="unknown data source"):
        preprocess.draw_sample("imdb", 5, 3, seed=0)
