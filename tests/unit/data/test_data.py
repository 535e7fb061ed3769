"""Data sources, review selection, embeddings and the embedding store, on generated corpora."""

from __future__ import annotations

import math
import os
import stat
import tarfile

import numpy as np
import pandas as pd
import pytest
import torch

from wordsens.data import demo, embed, hub, models, pretrained, samples
from wordsens.data import reviews as imdb
from wordsens.data.store import EmbeddingStore, load_embeddings, save_embeddings
from wordsens.io import CorruptCache, atomic_path, concatenate, current_umask, write_json, write_table


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return demo.make_corpus(root, per_label=30, seed=3)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", hidden=32, layers=2, heads=2)


def test_aclimdb_folder_reader(corpus):
    reviews = imdb.load_reviews("aclimdb", path=str(corpus))
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
    folder = imdb.load_reviews("aclimdb", path=str(corpus))
    from_tar = imdb.load_reviews("tarball", path=str(tarball))
    pd.testing.assert_frame_equal(folder, from_tar)
    parquet = tmp_path / "imdb"
    parquet.mkdir()
    folder.drop(columns=["review_id"]).sample(frac=1, random_state=0).to_parquet(parquet / "train.parquet")
    from_parquet = imdb.load_reviews("parquet", path=str(parquet))
    pd.testing.assert_frame_equal(folder, from_parquet)
    single = imdb.load_reviews("parquet", path=str(parquet / "train.parquet"))
    pd.testing.assert_frame_equal(folder, single)


def test_reader_errors(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"unknown data.source"):
        imdb.load_reviews("ftp")
    with pytest.raises(ValueError, match=r"needs data.path"):
        imdb.load_reviews("aclimdb")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        imdb.load_reviews("aclimdb", path=str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="test/neg"):
        imdb.load_reviews("aclimdb", path=str(corpus), split="test")
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(ValueError, match="not a readable aclImdb tarball"):
        imdb.load_reviews("tarball", path=str(bad))
    frame = tmp_path / "x.parquet"
    pd.DataFrame({"review": ["a"], "label": [0]}).to_parquet(frame)
    with pytest.raises(ValueError, match="text"):
        imdb.load_reviews("parquet", path=str(frame))
    pd.DataFrame({"text": ["a"], "label": [3]}).to_parquet(frame)
    with pytest.raises(ValueError, match="labels must be 0"):
        imdb.load_reviews("parquet", path=str(frame))


def _offline(monkeypatch, offline: bool = True) -> None:
    """Hugging Face's offline mode as its libraries decide it (their constants are read at import)."""
    import datasets.config
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", offline)


def _no_connections(monkeypatch) -> None:
    """Any attempt to open a network connection fails the test: an offline error must come from the
    decision not to connect, not from a timeout (which would take ~25 s of retries)."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_hub_reachable_follows_hugging_face_settings(monkeypatch):
    import socket

    from huggingface_hub import constants

    _offline(monkeypatch, False)
    with socket.socket() as server:  # a local endpoint (HF_ENDPOINT) that answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub.hub_reachable(timeout=5)
        assert hub.hub_reachable(timeout=5, for_datasets=True)
        # offline mode wins over a reachable endpoint; HF_DATASETS_OFFLINE only concerns datasets
        import datasets.config

        monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
        assert hub.hub_reachable(timeout=5) and not hub.hub_reachable(timeout=5, for_datasets=True)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        assert not hub.hub_reachable(timeout=5)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with socket.socket() as closed:  # a port nobody listens on: refused at once
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    assert not hub.hub_reachable(timeout=5)


def test_no_network_fails_fast_with_the_local_keys(monkeypatch):
    _offline(monkeypatch)
    _no_connections(monkeypatch)
    with pytest.raises(hub.NoNetwork, match=r"data.source") as err:
        imdb.load_reviews("hub")
    assert "data.path" in str(err.value)


def test_pool_is_balanced_short_and_seeded(corpus, tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    reviews = imdb.load_reviews("aclimdb", path=str(corpus))
    pool = imdb.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=1)
    assert len(pool) == 20 and pool["label"].sum() == 10
    assert (pool["tokens"] < 100).all()
    counted = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in pool["text"]]
    assert counted == list(pool["tokens"])
    again = imdb.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=1)
    pd.testing.assert_frame_equal(pool, again)
    other = imdb.select_pool(reviews, tokenizer, pool_size=20, max_tokens=100, seed=2)
    assert set(other["review_id"]) != set(pool["review_id"])
    with pytest.raises(ValueError, match=r"lower data.pool_size"):
        imdb.select_pool(reviews, tokenizer, pool_size=60, max_tokens=20, seed=1)
    with pytest.raises(ValueError, match="even"):
        imdb.select_pool(reviews, tokenizer, pool_size=7, max_tokens=20, seed=1)


def test_long_pool_keeps_long_reviews_only(corpus, tiny_bert):
    """The long-context pool: reviews of at least min_tokens tokens and no upper bound; errors name
    the long_context keys."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    reviews = imdb.load_reviews("aclimdb", path=str(corpus))
    length = 62
    pool = imdb.select_pool(
        reviews,
        tokenizer,
        pool_size=10,
        max_tokens=None,
        min_tokens=imdb.tokens_to_fill(length),
        seed=1,
        section="long_context",
    )
    assert len(pool) == 10 and pool["label"].sum() == 5
    assert (pool["tokens"] >= 60).all()
    # at max_length = 62 every review fills every position: [CLS], its words, [SEP]; no [PAD]
    encoded = tokenizer(list(pool["text"]), max_length=length, padding="max_length", truncation=True)["input_ids"]
    assert all(tokenizer.pad_token_id not in ids and ids[-1] == tokenizer.sep_token_id for ids in encoded)
    with pytest.raises(ValueError, match="special tokens"):
        imdb.tokens_to_fill(2)
    counted = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in pool["text"]]
    assert counted == list(pool["tokens"])
    short = imdb.select_pool(reviews, tokenizer, pool_size=10, max_tokens=60, seed=1)
    assert not set(short["review_id"]) & set(pool["review_id"])
    with pytest.raises(ValueError, match=r"at least 100000 tokens.*lower long_context.pool_size"):
        imdb.select_pool(
            reviews, tokenizer, pool_size=10, max_tokens=None, min_tokens=100_000, seed=1, section="long_context"
        )


def test_hidden_states_of_a_local_model(tiny_bert):
    tokenizer, model = pretrained.load_encoder(str(tiny_bert), "cpu")
    texts = ["the movie was great", "i love her smile . really very much"]
    hidden, lengths = embed.hidden_states(
        tokenizer, model, texts, layer=0, max_length=12, batch_size=1, dtype=np.float32, progress=False
    )
    assert hidden.shape == (2, 12, 32)
    assert list(lengths) == [6, 10]  # [CLS] + words + [SEP]
    with torch.no_grad():
        enc = embed.encode(tokenizer, texts, 12)
        expected = model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"]).numpy()
    np.testing.assert_allclose(hidden, expected, rtol=1e-5, atol=1e-5)
    last, _ = embed.hidden_states(tokenizer, model, texts, layer=2, max_length=12, progress=False)
    assert not np.allclose(last.astype(np.float32), hidden, atol=1e-2)
    with pytest.raises(ValueError, match=r"model.layer"):
        embed.hidden_states(tokenizer, model, texts, layer=3, max_length=12, progress=False)


TEXTS = ["the movie was great", "i love her smile . really very much", "boring"]  # padded: unequal lengths


def _full(model, batch) -> tuple:
    with torch.no_grad():
        return model(**batch, output_hidden_states=True).hidden_states


def test_hidden_states_run_only_the_layers_they_need(tiny_bert):
    """Layer l runs the embedding module and l encoder layers; the result is the full forward
    pass's ``hidden_states[l]`` (padding and its attention mask included)."""
    tokenizer, model = pretrained.load_encoder(str(tiny_bert), "cpu")
    layers = model.encoder.layer
    full = _full(model, embed.encode(tokenizer, TEXTS, 12))
    calls: list[int] = []
    handles = [m.register_forward_hook(lambda *_args, i=i: calls.append(i)) for i, m in enumerate(layers)]
    try:
        for layer in (0, 1, 2):
            calls.clear()
            hidden, _ = embed.hidden_states(
                tokenizer, model, TEXTS, layer=layer, max_length=12, batch_size=2, dtype=np.float32, progress=False
            )
            np.testing.assert_allclose(hidden, full[layer].numpy(), rtol=1e-5, atol=1e-6)
            assert sorted(set(calls)) == list(range(layer))  # later layers never ran
    finally:
        for handle in handles:
            handle.remove()
    assert model.encoder.layer is layers and len(layers) == 2  # the model is whole again


@pytest.mark.parametrize("model_type", models.TRUNCATABLE)
def test_every_truncatable_type_gives_the_full_hidden_states(model_type):
    """Each architecture that ``embed.truncated`` shortens gives the full forward pass's hidden
    states (random weights, padded batch); the list in ``models.TRUNCATABLE`` rests on this test."""
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.for_model(
        model_type,
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=40,
    )
    if model_type == "electra":
        config.embedding_size = 16  # ELECTRA projects smaller embeddings up to the hidden size
    torch.manual_seed(0)
    model = AutoModel.from_config(config).eval()
    ids = torch.randint(5, 99, (3, 10), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 6:], mask[2, 3:] = 0, 0
    batch = {"input_ids": ids, "attention_mask": mask}
    full = _full(model, batch)
    for layer in range(4):
        with embed.truncated(model, layer) as short, torch.no_grad():
            assert short
            out = model(**batch).last_hidden_state
        torch.testing.assert_close(out, full[layer], rtol=1e-5, atol=1e-6)
    assert len(model.encoder.layer) == 3


def test_unknown_architectures_run_the_full_forward_pass(tmp_path):
    """A model that ``truncated`` does not know (GPT-2) is left whole and still gives ``hidden_states[l]``."""
    from transformers import AutoModel

    path = demo.make_tiny_causal_lm(tmp_path / "gpt2")
    tokenizer = pretrained.load_tokenizer(str(path))
    model = AutoModel.from_pretrained(str(path)).eval()
    with embed.truncated(model, 1) as short:
        assert not short
    full = _full(model, embed.encode(tokenizer, TEXTS, 12))
    hidden, _ = embed.hidden_states(tokenizer, model, TEXTS, layer=1, max_length=12, dtype=np.float32, progress=False)
    np.testing.assert_allclose(hidden, full[1].numpy(), rtol=1e-5, atol=1e-6)


def test_the_tokenizer_loads_without_the_weights(tiny_bert, tmp_path):
    import shutil

    folder = tmp_path / "no-weights"
    shutil.copytree(tiny_bert, folder)
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    tokenizer = pretrained.load_tokenizer(str(folder))
    expected = pretrained.load_tokenizer(str(tiny_bert))("i love her smile")["input_ids"]
    assert tokenizer("i love her smile")["input_ids"] == expected
    with pytest.raises(ValueError, match=r"model.name"):
        pretrained.load_encoder(str(folder), "cpu")


def test_a_missing_packaged_model_names_the_extra(monkeypatch, tmp_path):
    """Without its Python package, extracting a packaged model says how to install it."""
    from dataclasses import replace

    ghost = replace(models.PACKAGED_MODELS["minilm"], module="wordsens_no_such_model", distribution="no-such-model")
    monkeypatch.setitem(models.PACKAGED_MODELS, "ghost", ghost)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[pretrained\]"'):
        pretrained.extract_packaged_model(tmp_path / "ghost", "ghost")
    assert not (tmp_path / "ghost").exists()
    with pytest.raises(ValueError, match="unknown packaged model"):
        pretrained.extract_packaged_model(tmp_path / "x", "bert-large")
    spec = models.PACKAGED_MODELS["minilm"]  # what configs may rely on
    assert (spec.width, spec.layers, spec.max_positions) == (384, 6, 512)


def test_the_packaged_models_are_known_without_torch():
    """The workflow's planning reads ``models.PACKAGED_MODELS`` and must stay torch-free."""
    import subprocess
    import sys

    code = (
        "import sys, wordsens.data.models as m; assert m.PACKAGED_MODELS['minilm'].width == 384; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_model_fails_clearly(monkeypatch, tmp_path):
    _offline(monkeypatch)
    _no_connections(monkeypatch)
    with pytest.raises(ValueError, match="local folder"):
        pretrained.load_encoder("no-such-org/no-such-model", "cpu")
    with pytest.raises(ValueError, match=r"probes.model"):
        pretrained.load_tokenizer("no-such-org/no-such-model", setting="probes.model")
    with pytest.raises(ValueError, match="extract_packaged_model"):  # a packaged model's name, not extracted
        pretrained.load_encoder("minilm", "cpu")
    with pytest.raises(ValueError, match="kind must be"):
        pretrained.load_pretrained(str(tmp_path), "seq2seq")


def test_store_round_trip_and_samples(tmp_path):
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(6, 10, 5)).astype(np.float16)
    index = pd.DataFrame({"review_id": [10, 11, 12, 13, 14, 15], "label": [0, 1] * 3, "length": [3, 10, 4, 9, 8, 5]})
    save_embeddings(tmp_path / "store", hidden, index, {"model": "x", "layer": 0})
    store = load_embeddings(tmp_path / "store" / "meta.json")
    assert isinstance(store, EmbeddingStore) and len(store) == 6 and store.width == 5
    X, info = samples.draw_sample(store, 7, 4, seed=3)
    assert X.shape == (7, 4)
    torch.testing.assert_close(X.norm(dim=-1), torch.full((7,), 2.0, dtype=torch.float64))
    row = list(index["review_id"]).index(info["review_id"])
    torch.testing.assert_close(X, samples.normalise(hidden[row].astype(np.float64), 7, 4))
    picked = {samples.draw_sample(store, 9, 4, seed=s, min_tokens=True)[1]["review_id"] for s in range(30)}
    assert picked == {11, 13}
    index.loc[:, "length"] = [3, 4, 4, 5, 8, 5]
    short = EmbeddingStore(hidden=hidden, index=index, meta={}, path=tmp_path)
    with pytest.raises(ValueError, match="at least n = 9"):
        samples.draw_sample(short, 9, 4, seed=0, min_tokens=True)
    with pytest.raises(ValueError, match="max_length"):
        samples.draw_sample(store, 11, 4, seed=0)
    with pytest.raises(ValueError, match="model width"):
        samples.draw_sample(store, 5, 6, seed=0)
    (tmp_path / "store" / "index.parquet").unlink()
    with pytest.raises(CorruptCache, match=r"index.parquet"):
        load_embeddings(tmp_path / "store")
    with pytest.raises(FileNotFoundError):
        load_embeddings(tmp_path / "nothing")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_outputs_have_the_mode_the_umask_allows_and_stay_atomic(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        assert current_umask() == umask
        table = write_table(tmp_path / "t.parquet", pd.DataFrame({"a": [1, 2]}))
        info = write_json(tmp_path / "deep" / "x.json", {"a": 1})
        save_embeddings(tmp_path / "store", np.zeros((2, 3, 4), np.float16), pd.DataFrame({"review_id": [0, 1]}), {})
        written = [table, info, *sorted((tmp_path / "store").iterdir())]

        def broken(path):
            path.write_text("half")
            raise RuntimeError("killed mid-write")

        with pytest.raises(RuntimeError, match="killed"):
            atomic_path(tmp_path / "never.csv", broken)
    finally:
        os.umask(old)
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in written} == {f.name: mode for f in written}
    assert not list(tmp_path.glob("*never*")) and not list(tmp_path.glob(".*"))  # no file, no temporary left


def test_a_chunk_with_fewer_rows_than_its_job_ran_is_refused(tmp_path):
    rows = pd.DataFrame({"trial": [0, 1, 2], "lower": [0.1, 0.2, 0.3], "phi_norm": 1.0, "delta_norm": 1.0})
    whole, short = write_table(tmp_path / "chunk0.parquet", rows), write_table(tmp_path / "chunk1.parquet", rows[:2])
    assert len(concatenate([whole, short], rows=[3, 2])) == 5
    assert len(concatenate([whole, short])) == 5  # no promise: stacked as they are
    with pytest.raises(CorruptCache, match=r"chunk1.parquet holds 2 rows but its job ran 3.*delete it and re-run"):
        concatenate([whole, short], rows=[3, 3])
    with pytest.raises(ValueError, match="2 result files but 1 row counts"):
        concatenate([whole, short], rows=[3])


def test_synthetic_draw_sample():
    X, info = samples.draw_sample("synthetic", 5, 3, seed=0)
    assert X.shape == (5, 3) and info["review_id"] == -1
    assert math.isclose(float(X[0].norm()), math.sqrt(3))
    with pytest.raises(ValueError, match="unknown data source"):
        samples.draw_sample("imdb", 5, 3, seed=0)
