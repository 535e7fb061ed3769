"""Garbage in is caught (docs/inputs.md): a tokenizer that does not know the words or does not fit the
model, a store with duplicate samples or NaN hidden states, and a generalisation task with duplicate
samples are refused with their cause named; the demo and the packaged MiniLM pass the same checks."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from wordsens import compute, pipeline
from wordsens import generalisation as G
from wordsens.data import demo, embed, inputs, models, pretrained
from wordsens.data import reviews as imdb
from wordsens.data.store import EmbeddingStore, save_embeddings
from wordsens.io import write_json
from wordsens.pipeline import store_dir

ROOT = Path(__file__).resolve().parents[3]
BASE, DEMO = ROOT / "config.yaml", ROOT / "config" / "demo.yaml"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MINILM = models.PACKAGED_MODELS["minilm"]
SHARED = Path(os.environ.get("WORDSENS_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _tiny_vocabulary_tokenizer(folder: Path):
    """The tokenizer of the issue: its special tokens only, as transformers 5 saves a
    ``BertTokenizerFast(vocab_file=...)`` (it ignores the file). Built here from a 5-token vocabulary
    on purpose, so that the test does not depend on that bug."""
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(SPECIALS) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(folder)
    return tokenizer


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return demo.make_corpus(tmp_path_factory.mktemp("corpus"), per_label=30, seed=3)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny", hidden=32, layers=2, heads=2)


# ----------------------------------------------------------------------------- the tokenizer
def test_vocabulary_against_the_embedding_rows():
    assert "= the model's word-embedding rows" in inputs.check_vocabulary(117, 117, "m")
    assert "fewer than the model's 30522" in inputs.check_vocabulary(5, 30522, "m")  # named, not refused
    assert "not known" in inputs.check_vocabulary(5, None, "m")
    with pytest.raises(inputs.InputError, match=r"has 30522 tokens but the model has 117 word-embedding rows"):
        inputs.check_vocabulary(30522, 117, "some/folder")


def test_embedding_rows_are_read_from_config_json_without_the_weights(tiny_bert, tmp_path):
    rows = json.loads((tiny_bert / "config.json").read_text())["vocab_size"]
    assert models.model_vocab_size(str(tiny_bert)) == rows
    assert models.model_vocab_size("minilm") == MINILM.vocab_size
    assert models.model_vocab_size(str(tmp_path / "nothing-here")) is None


def test_a_tokenizer_that_belongs_to_another_model_is_refused(tiny_bert, tmp_path):
    """A model/tokenizer mismatch: the demo tokenizer (117 tokens) beside a model of 50 rows."""
    from transformers import AutoTokenizer

    folder = tmp_path / "mismatch"
    folder.mkdir()
    config = json.loads((tiny_bert / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 50}))
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    tokenizer.save_pretrained(folder)
    with pytest.raises(inputs.InputError, match=rf"{folder} has {len(tokenizer)} tokens but the model has 50"):
        inputs.check_vocabulary(len(tokenizer), models.model_vocab_size(str(folder)), str(folder))


def test_the_pool_counts_unknown_tokens_per_review(corpus, tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    reviews = imdb.load_reviews("aclimdb", path=str(corpus))
    reviews.loc[reviews.index[:5], "text"] = "zyxw qqq great movie"  # two words the demo vocabulary lacks
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    pool = imdb.select_pool(reviews, tokenizer, pool_size=60, max_tokens=200, seed=1)
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in pool["text"]]
    assert list(pool["unk"]) == [row.count(tokenizer.unk_token_id) for row in ids]
    assert pool["unk"].sum() > 0 and list(pool.columns) == ["review_id", "label", "tokens", "unk", "text"]


def test_a_tokenizer_with_a_tiny_vocabulary_is_refused_at_pool_time(corpus, tiny_bert, tmp_path):
    from transformers import AutoTokenizer

    reviews = imdb.load_reviews("aclimdb", path=str(corpus))
    good = AutoTokenizer.from_pretrained(tiny_bert)
    pool = imdb.select_pool(reviews, good, pool_size=20, max_tokens=200, seed=1)
    line = inputs.check_unk_share(pool["tokens"], pool["unk"], limit=0.05, tokenizer=str(tiny_bert), unk_token="[UNK]")
    assert line.startswith("[UNK] share 0.00%")  # holds

    folder = tmp_path / "broken"
    _tiny_vocabulary_tokenizer(folder)
    broken = AutoTokenizer.from_pretrained(folder)
    assert len(broken) == 5
    pool = imdb.select_pool(reviews, broken, pool_size=20, max_tokens=200, seed=1)
    assert (pool["unk"] > 0.5 * pool["tokens"]).all()  # words are [UNK], punctuation too
    rows = models.model_vocab_size(str(tiny_bert))
    assert "5 tokens, fewer than the model's" in inputs.check_vocabulary(len(broken), rows, str(folder))
    with pytest.raises(inputs.InputError) as err:
        inputs.check_unk_share(
            pool["tokens"],
            pool["unk"],
            limit=0.05,
            tokenizer=str(folder),
            unk_token=broken.unk_token,
            tokenizer_size=len(broken),
            embedding_rows=rows,
        )
    text = str(err.value)
    share = pool["unk"].sum() / pool["tokens"].sum()
    assert f"maps {share:.1%} of the pool's tokens to its unknown token [UNK]" in text
    assert str(folder) in text and "data.max_unk_share = 5%" in text
    assert f"Its vocabulary has 5 tokens for the model's {rows} word-embedding rows" in text
    assert "vocab_file=" in text and "vocab=path" in text
    # a tokenizer without an unknown token (byte-level BPE) has nothing unknown
    assert "no unknown token" in inputs.check_unk_share([10], [0], limit=0.05, tokenizer="t", unk_token=None)


# ----------------------------------------------------------------------------- the store
def _store(reviews: int = 40, positions: int = 12, width: int = 6, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(reviews, positions, width)).astype(np.float16)


def test_distinct_samples_at_every_n_match_a_direct_count():
    hidden = _store(30, 9, 4)
    hidden[3] = hidden[4]  # an identical review
    hidden[7, :5] = hidden[8, :5]  # two reviews identical in their first 5 rows
    hidden[10, :2] = hidden[11, :2] = hidden[12, :2]
    hidden[13:16, 6:] = hidden[20, 6:]  # [PAD]-like tails after distinct starts do not make duplicates
    curve = inputs.distinct_curve(hidden)
    direct = [len({hidden[i, :n].tobytes() for i in range(30)}) for n in range(1, 10)]
    assert list(curve) == direct == [26, 26, 28, 28, 28, 29, 29, 29, 29]
    steps = inputs.distinct_steps(curve)
    assert steps == [[1, 26], [3, 28], [6, 29]]
    assert [inputs.distinct_at(steps, n) for n in range(1, 10)] == direct
    with pytest.raises(ValueError):
        inputs.distinct_at(steps, 0)


def test_a_store_with_duplicated_reviews_is_refused_with_the_count():
    hidden = _store(100, 12, 6)
    checks = inputs.check_store(hidden, [4, 8], min_share=0.99, tokens=[10] * 100, unk=[0] * 100)  # holds
    assert checks["distinct_samples"] == {"4": 100, "8": 100, "12": 100} and checks["unk_share"] == 0
    hidden[50:60] = hidden[40]  # ten copies of one review
    with pytest.raises(inputs.InputError) as err:
        inputs.check_store(hidden, [4, 8], min_share=0.99, store="the main store")
    text = str(err.value)
    assert "only 90 of its 100 reviews give distinct samples at n = 4" in text
    assert "n = 8" in text and "n = 12" in text and "duplicate samples" in text and "nothing was stored" in text
    # a lower threshold accepts it, and the counts say what it holds
    assert inputs.check_store(hidden, [4], min_share=0.9)["distinct_samples"]["4"] == 90


def test_reviews_identical_up_to_a_small_n_are_refused_at_that_n_only():
    hidden = _store(100, 12, 6)
    hidden[1:3, :3] = hidden[0, :3]  # three reviews with the same first three rows
    assert inputs.check_store(hidden, [4, 8], min_share=0.99)["distinct_samples"]["4"] == 100
    with pytest.raises(inputs.InputError, match=r"only 98 of its 100 reviews give distinct samples at n = 3"):
        inputs.check_store(hidden, [3, 8], min_share=0.99)


def test_nan_hidden_states_are_refused_before_anything_is_stored(tmp_path, tiny_bert):
    hidden = _store(6, 10, 5)
    hidden[4, 7, 2] = np.nan
    index = pd.DataFrame({"review_id": range(6), "label": [0, 1] * 3, "length": [5] * 6})
    with pytest.raises(inputs.InputError, match=r"1 review\(s\) hold NaN or Inf values \(first: row 4\)"):
        save_embeddings(tmp_path / "store", hidden, index, {"model": "x"})
    assert not (tmp_path / "store").exists()
    hidden[4, 7, 2] = np.inf
    with pytest.raises(inputs.InputError, match="NaN or Inf"):
        inputs.check_store(hidden, [4], min_share=0.99)
    hidden[4, 7, 2] = 0
    save_embeddings(tmp_path / "store", hidden, index, {"model": "x"})  # holds

    # a model with a NaN word embedding: the batch holding that word stops the embedding
    tokenizer, model = pretrained.load_encoder(str(tiny_bert), "cpu")
    texts = ["the movie was great", "i love her smile", "a boring plot", "the worst film"]
    embed.hidden_states(tokenizer, model, texts, layer=0, max_length=8, batch_size=2, progress=False)  # holds
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("boring")] = float("nan")
    with pytest.raises(inputs.InputError, match=r"first: row 2\).*float16 overflow.*NaN in the model's weights"):
        embed.hidden_states(tokenizer, model, texts, layer=0, max_length=8, batch_size=2, progress=False)


def test_store_problems_and_the_plan_summary_give_the_verdict():
    meta = {"max_length": 12, "reviews": 100, "distinct_steps": [[1, 1], [2, 90], [4, 100]], "unk_share": 0.0}
    meta["tokens"] = 1000
    assert inputs.store_problems(meta, [4, 8], 0.99) == []
    (line,) = inputs.store_summary(meta, [4, 8], 0.99, "main store")
    assert "[UNK] share 0.00% of 1000 pool tokens" in line and "reviews: n=4: 100, n=8: 100 (" in line
    assert "(at least 99% distinct)" in line
    (problem,) = inputs.store_problems(meta, [2, 8], 0.99, "the main store")
    assert "only 90 of its 100 reviews give distinct samples at n = 2" in problem
    assert "below data.min_distinct_share" in inputs.store_summary(meta, [2, 8], 0.99, "main store")[0]
    assert "reviews: n=12: 100 (" in inputs.store_summary(meta, [], 0.99, "main store")[0]  # no job reads it
    old = {"max_length": 12, "reviews": 100}  # a store written before the counts were recorded
    assert inputs.store_problems(old, [2], 0.99) == []
    assert "re-embed to check it" in inputs.store_summary(old, [2], 0.99, "main store")[0]


def _demo_config(changes: dict | None = None) -> dict:
    config = pipeline.merge(yaml.safe_load(BASE.read_text()), yaml.safe_load(DEMO.read_text()))
    return pipeline.validate(pipeline.merge(config, changes or {}))


def test_the_grid_names_the_n_each_store_serves():
    config = _demo_config()
    ws = {n for grid in config["ws"]["maps"].values() for n in grid["n"]}
    gen = {n for figure in ("fig4", "fig5") for ns in config["gen"][figure]["maps"].values() for n in ns}
    assert pipeline.store_ns(config, "main") == sorted(ws | gen | {config["positions"]["n"]})
    assert pipeline.store_ns(config, "long") == [8, 32, 64]  # long_context.n up to its max_length
    assert pipeline.store_ns(_demo_config({"ws": {"data": "synthetic"}, "gen": {"data": ["synthetic"]}}), "main") == [
        config["positions"]["n"]
    ]


def test_wordsens_plan_prints_the_inputs_of_an_existing_store(tmp_path):
    config = _demo_config({"resources": str(tmp_path / "resources")})
    limits = compute.Limits(cpu=16 * 1024**3, gpu=None)
    assert "store:" not in pipeline.describe(config, limits)  # no store yet: nothing to say
    meta = {"max_length": 48, "reviews": 40, "distinct_steps": [[1, 1], [2, 29], [3, 39], [4, 40]]}
    write_json(Path(store_dir(config)) / "meta.json", {**meta, "unk_share": 0.0, "tokens": 2694})
    text = pipeline.describe(config, limits)
    assert "main store: [UNK] share 0.00% of 2694 pool tokens; distinct samples of 40 reviews: n=4: 40" in text
    assert "(at least 99% distinct)" in text
    write_json(Path(store_dir(config)) / "meta.json", {**meta, "distinct_steps": [[1, 1], [2, 29], [5, 40]]})
    text = pipeline.describe(config, limits)
    assert "n=4: 29" in text and "[UNK] share not recorded" in text and "below data.min_distinct_share" in text


# ----------------------------------------------------------------------------- generalisation tasks
def test_duplicates_of_a_task_are_counted():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(6, 3, 2))
    assert not inputs.duplicates(train, rng.normal(size=(3, 2)))
    train[4] = train[1]
    found = inputs.duplicates(train, train[2])
    assert (found.repeated, found.equal_new) == (3, 1)
    assert found.describe(6) == (
        "duplicate samples: 3 of the N = 6 training samples equal another one or the new sample "
        "(1 equal the new sample)"
    )


def _store_of(hidden: np.ndarray) -> EmbeddingStore:
    rows = hidden.shape[0]
    index = pd.DataFrame(
        {"review_id": np.arange(100, 100 + rows), "label": np.arange(rows) % 2, "length": [hidden.shape[1]] * rows}
    )
    return EmbeddingStore(hidden=hidden, index=index, meta={}, path=Path("."))


def _legacy_draw(store: EmbeddingStore, N: int, n: int, d: int, seed: int):
    """draw_task before duplicates were checked: the first N + 1 reviews of the seeded permutation."""
    from wordsens.data.samples import review_samples
    from wordsens.seeds import derive_seed, generator

    order = torch.randperm(len(store), generator=generator(derive_seed(seed, "gen-reviews")))[: N + 1].numpy()
    rows = np.sort(order)
    samples = review_samples(store, rows, n, d)
    test = int(torch.randint(0, N + 1, (1,), generator=generator(derive_seed(seed, "gen-test"))))
    keep = [i for i in range(N + 1) if i != test]
    return rows, samples[keep], samples[test]


def test_a_drawn_task_skips_duplicate_samples_and_is_unchanged_without_them():
    hidden = _store(30, 6, 4).astype(np.float32)
    store = _store_of(hidden)
    for seed in range(3):  # without duplicates: the same task as before the check
        Xt, _, X, _, _ = G.draw_task(store, 12, 5, 3, seed=seed)
        _, Xt_old, X_old = _legacy_draw(store, 12, 5, 3, seed)
        assert torch.equal(Xt, Xt_old) and torch.equal(X, X_old)
    # duplicates among the first N + 1 candidates: later distinct reviews take their place
    rows, _, _ = _legacy_draw(store, 12, 5, 3, 0)
    copy = hidden.copy()
    copy[rows[1]] = copy[rows[0]]
    copy[rows[2], :5] = copy[rows[0], :5]  # identical within n = 5, different beyond
    _, Xt_old, X_old = _legacy_draw(_store_of(copy), 12, 5, 3, 0)
    assert inputs.duplicates(Xt_old.numpy(), X_old.numpy())  # the old draw had them
    Xt, _, X, _, _ = G.draw_task(_store_of(copy), 12, 5, 3, seed=0)
    assert not inputs.duplicates(Xt.numpy(), X.numpy())
    # too few distinct samples: refused before any Gram matrix, with the counts
    copy[:] = copy[0]
    copy[:5, 1] += np.arange(1, 6, dtype=np.float32)[:, None]  # 6 distinct samples: 5 changed, the rest
    with pytest.raises(ValueError, match=r"duplicate samples: the store's 30 eligible reviews give only 6 distinct"):
        G.draw_task(_store_of(copy), 12, 5, 3, seed=4)


def test_a_task_with_duplicate_samples_is_refused_by_name():
    Xt, _, X, _ = G.synthetic_task(8, 4, 6, seed=1)
    G.check_distinct(Xt, X)  # holds
    Xt[3] = X
    with pytest.raises(ValueError, match=r"duplicate samples: 1 of the N = 8 .* \(1 equal the new sample\)"):
        G.check_distinct(Xt, X)


@pytest.mark.parametrize("map_name", ["raf", "rf"])
def test_the_in_span_error_names_duplicate_samples(map_name):
    Xt, yt, X, y = G.synthetic_task(20, 4, 6, seed=2)
    Xt[5] = Xt[9] = X  # the new sample twice among the training samples
    with pytest.raises(ValueError) as err:
        G.prepare(map_name, Xt, yt, X, y, seed=0)
    text = str(err.value)
    assert "lies in the span of the N = 20 training feature vectors" in text
    assert "duplicate samples: 2 of the N = 20 training samples equal another one or the new sample" in text
    assert "(2 equal the new sample)" in text and "fewer training samples than features" not in text


def test_the_in_span_error_without_duplicates_names_the_feature_count():
    Xt, yt, X, y = G.synthetic_task(30, 4, 6, seed=2)
    with pytest.raises(ValueError) as err:
        G.prepare("rf", Xt, yt, X, y, seed=0, k=8)  # 8 features for 30 samples
    text = str(err.value)
    assert "(p = 8 features)" in text and "use fewer training samples than features" in text
    assert "duplicate samples" not in text


# ----------------------------------------------------------------------------- the packaged MiniLM
@pytest.mark.skipif(importlib.util.find_spec(MINILM.module) is None, reason=f"{MINILM.distribution} is not installed")
def test_the_packaged_minilm_passes_the_checks(corpus, tmp_path):
    folder = pretrained.extract_packaged_model(tmp_path / "minilm", "minilm")
    tokenizer, model = pretrained.load_encoder(str(folder), "cpu")
    rows = models.model_vocab_size(str(folder))
    assert rows == model.get_input_embeddings().num_embeddings == len(tokenizer) == MINILM.vocab_size
    assert "= the model's word-embedding rows" in inputs.check_vocabulary(len(tokenizer), rows, str(folder))
    real = SHARED / "imdb" / "train.parquet"
    if real.is_file():  # the real reviews where this workplace has them; the demo corpus elsewhere
        reviews = imdb.load_reviews("parquet", path=str(real)).sample(400, random_state=0)
    else:
        reviews = imdb.load_reviews("aclimdb", path=str(corpus))
    pool = imdb.select_pool(reviews, tokenizer, pool_size=40, max_tokens=240, seed=0)
    line = inputs.check_unk_share(pool["tokens"], pool["unk"], limit=0.05, tokenizer=str(folder), unk_token="[UNK]")
    assert line.startswith("[UNK] share")
    hidden, _ = embed.hidden_states(tokenizer, model, list(pool["text"]), layer=0, max_length=32, progress=False)
    checks = inputs.check_store(hidden, [4, 8, 16], min_share=0.99)
    assert checks["distinct_samples"]["32"] == 40


# ----------------------------------------------------------------------------- the workflow
def _broken_model(folder: Path) -> Path:
    """A local model folder as in the issue: a real (tiny) BERT, random weights, and a tokenizer that
    knows only its 5 special tokens."""
    demo.make_tiny_bert(folder, hidden=32, layers=1, heads=2)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    _tiny_vocabulary_tokenizer(folder)
    return folder


@pytest.mark.slow
def test_a_tokenizer_that_maps_every_word_to_unk_stops_the_workflow_at_the_pool(tmp_path):
    """The pool step stops the run, naming the [UNK] share and the tokenizer; nothing downstream
    (embedding, WS or generalisation on IMDb) starts. Asserted on the rules that started, not on
    wall time (a loaded machine may take longer)."""
    from workflow_utils import copy_workflow, snakemake, write_config

    workdir = copy_workflow(tmp_path / "wf")
    model = _broken_model(tmp_path / "my-bert")
    cf = write_config(
        workdir,
        "broken.yaml",
        "config/demo.yaml",
        {
            "results": "results/broken",
            "resources": "resources/broken",
            "model": {"name": str(model)},
            "ws": {"maps": {"rf": {"d": [16], "n": [8]}, "drf": None, "raf": None, "relu_raf": None}},
            "gen": {"data": ["imdb"], "fig4": {"maps": {"raf": [8]}, "N": [6]}, "fig5": None},
            "probes": {"enabled": False, "lm": {"enabled": False}},
            "variants": None,
            "long_context": None,
            "positions": None,
            "trained": None,
        },
    )
    out = snakemake(workdir, "--cores", "2", "--configfile", cf, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "Error in rule pool" in text, text[-3000:]
    started_rules = {
        line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith(("rule ", "localrule "))
    }
    assert started_rules <= {"demo_corpus", "reviews", "pool"}, started_rules
    log = next((workdir / "results" / "broken" / "logs" / "pool").glob("*.log")).read_text()
    assert f"the tokenizer of {model} maps 100.0% of the pool's tokens to its unknown token [UNK]" in log
    assert "data.max_unk_share = 5%" in log and "Its vocabulary has 5 tokens" in log and "vocab_file=" in log
    assert not list((workdir / "resources" / "broken").rglob("pool.parquet"))


@pytest.mark.slow
def test_the_demo_store_passes_the_checks_and_the_plan_prints_them(demo_run):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    for store in sorted((demo_run / config["resources"] / "embeddings").rglob("meta.json")):
        meta = json.loads(store.read_text())
        assert meta["unk_share"] == 0 and meta["tokens"] > 0
        assert meta["vocabulary"]["tokenizer"] == meta["vocabulary"]["embedding_rows"]
        assert set(meta["distinct_samples"]) == {str(n) for n in meta["checked_ns"]} | {str(meta["max_length"])}
        assert all(count >= 0.99 * meta["reviews"] for count in meta["distinct_samples"].values())
    out = subprocess.run(
        [sys.executable, "-m", "wordsens.cli", "plan", "--configfile", "config/demo.yaml"],
        cwd=demo_run,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "main store: [UNK] share 0.00%" in out.stdout and "long store: [UNK] share 0.00%" in out.stdout
    assert "(at least 99% distinct)" in out.stdout


@pytest.mark.slow
def test_an_existing_store_is_checked_against_a_changed_grid(tmp_path):
    """A grid that gains an n at which the store's reviews repeat stops the planning (dry run)."""
    from workflow_utils import copy_workflow, snakemake, write_config

    workdir = copy_workflow(tmp_path / "wf")
    cf = write_config(workdir, "store.yaml", "config/demo.yaml", {"resources": "resources/store"})
    config = _demo_config({"resources": "resources/store"})
    meta = Path(workdir) / store_dir(config) / "meta.json"
    write_json(meta, {"max_length": 48, "reviews": 40, "distinct_steps": [[1, 1], [2, 29], [3, 39], [4, 40]]})
    snakemake(workdir, "-n", "--configfile", cf)  # holds: the grid's smallest n is 4
    raf = {"d": [16], "n": [3, 8]}
    bad = write_config(
        workdir, "bad.yaml", "config/demo.yaml", {"resources": "resources/store", "ws": {"maps": {"raf": raf}}}
    )
    out = snakemake(workdir, "-n", "--configfile", bad, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "only 39 of its 40 reviews give distinct samples at n = 3" in text and "delete the store folder" in text
