"""Real-word substitutions (wordsens.data.vocabulary, wordsens.search.swaps) and the radius of the
continuous search (wordsens.search.estimate): every map's fast scores against a naive forward per word,
the exhaustive maximum against the naive maximum, the first-order screen's Gram matrix against an
autograd Jacobian."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import maps
from wordsens.data.vocabulary import EmbeddingLayer, candidate_ids, review_tokens
from wordsens.maps import registry
from wordsens.search import estimate
from wordsens.search.swaps import first_order_gram, prepare_problem, scan, substitution

pytestmark = pytest.mark.usefixtures("one_thread")


def _layer(vocab: int, width: int, seed: int = 0) -> EmbeddingLayer:
    """An embedding layer with random weights (a BERT layer's shapes): words as rows of a sample."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=g, dtype=torch.float64)

    return EmbeddingLayer(
        randn(vocab, width), randn(64, width), randn(width), 1 + 0.1 * randn(width), 0.1 * randn(width), 1e-12
    )


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    from wordsens.data.demo import make_tiny_bert
    from wordsens.data.pretrained import load_encoder

    folder = make_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert")
    tokenizer, encoder = load_encoder(str(folder), "cpu")
    return folder, tokenizer, encoder


def _options(name: str) -> dict:
    return {"heads": 4} if "heads" in registry.get(name).options else {}


RANDOM_MAPS = [name for name in registry.names() if not registry.get(name).checkpoint]


def _naive(name: str, X: torch.Tensor, rows: torch.Tensor, i: int, weights) -> torch.Tensor:
    """The relative change of every substitution by one forward of the plain map per word (batched)."""
    moved = X.expand(rows.shape[0], -1, -1).clone()
    moved[:, i] = rows
    base = maps.apply(name, X, weights)
    return torch.linalg.vector_norm((maps.apply(name, moved, weights) - base).flatten(1), dim=-1) / float(
        torch.linalg.vector_norm(base)
    )


def test_candidate_ids_leave_out_specials_and_pieces(tiny_bert):
    _, tokenizer, _ = tiny_bert
    vocab = tokenizer.get_vocab()
    words = candidate_ids(tokenizer)
    tokens = candidate_ids(tokenizer, "tokens")
    names = {index: token for token, index in vocab.items()}
    assert not any(names[i].startswith("##") or names[i].startswith("[") for i in words)
    assert {names[i] for i in set(tokens) - set(words)} == {t for t in vocab if t.startswith("##")}
    assert not set(tokenizer.all_special_ids) & set(tokens)
    assert len(candidate_ids(tokenizer, rows=20)) < len(words)
    with pytest.raises(ValueError, match="unknown vocabulary"):
        candidate_ids(tokenizer, "pieces")


def test_embedding_layer_gives_the_models_layer0(tiny_bert):
    from wordsens.data.embed import hidden_states
    from wordsens.data.samples import normalise

    _, tokenizer, encoder = tiny_bert
    text = "a great movie with a boring plot and superb acting"
    ids = review_tokens(tokenizer, text, 16)
    hidden, _ = hidden_states(tokenizer, encoder, [text], layer=0, max_length=16, dtype=np.float64, progress=False)
    layer = EmbeddingLayer.of(encoder)
    # the model runs in float32: its layer 0 against the float64 formula
    assert torch.allclose(layer.sample(ids, 32), normalise(hidden[0], 16, 32), atol=1e-5)
    # a word at a position by the same formula as the sample's row there
    assert torch.equal(layer.rows([ids[5]], 5, 32)[0], layer.sample(ids, 32)[5])
    with pytest.raises(ValueError, match="BERT-family"):
        EmbeddingLayer.of(torch.nn.Linear(2, 2))


def test_word_rows_at_a_position_are_the_layers_rows():
    layer = _layer(500, 48, seed=4)
    ids = np.arange(3, 400, 2)
    words = layer.words(ids)
    for position, d in ((0, 48), (7, 16), (63, 5)):
        assert torch.allclose(words.at(position, d), layer.rows(ids, position, d), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="positions"):
        words.at(64, 16)


@pytest.mark.parametrize("name", RANDOM_MAPS)
def test_fast_scores_equal_a_naive_forward(name):
    """1,000 random words: the problem's value (float64) against one plain forward per word."""
    n, d, i = 8, 16, 3
    layer = _layer(1200, 32)
    X = layer.sample(list(range(40, 40 + n)), d)
    rows = layer.rows(np.arange(1000), i, d)
    weights = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **_options(name))
    problem, _, _ = prepare_problem(
        name, X, i, seed=0, vocab=1000, weights=weights, options=_options(name), dtype=torch.float64, device="cpu"
    )
    found = scan(problem, rows, X[i], exhaustive=True, top_k=5)
    naive = _naive(name, X, rows, i, weights)
    fast = torch.as_tensor(found.scores)
    # word 43 is the original one: S = 0 but for rounding, which the square root lifts to ~1e-8 in the fast
    # forms that expand a squared norm (attention's)
    others = torch.arange(1000) != 40 + i
    assert torch.allclose(fast[others], naive[others], rtol=1e-6, atol=0)
    assert float(fast[~others].max()) < 1e-6 and float(naive[~others].max()) < 1e-6
    assert found.top[0] == int(torch.argmax(naive))
    assert math.isclose(found.top_scores[0], float(naive.max()), rel_tol=1e-12)


@pytest.mark.parametrize("name", ["trained_attention", "trained_layer"])
def test_trained_maps_at_layer_1_equal_a_naive_forward(name, tiny_bert):
    folder, _, encoder = tiny_bert
    n, i, d = 8, 2, int(encoder.config.hidden_size)
    layer = _layer(1200, d, seed=1)
    X = layer.sample(list(range(n)), d)
    rows = layer.rows(np.arange(1000), i, d)
    options = {"model": str(folder), "layer": 1}
    weights = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **options)
    problem, _, _ = prepare_problem(
        name, X, i, seed=0, vocab=1000, weights=weights, options=options, dtype=torch.float64, device="cpu"
    )
    found = scan(problem, rows, X[i], exhaustive=True, top_k=3)
    naive = _naive(name, X, rows, i, weights)
    others = torch.arange(1000) != i  # word i is the original one (S = 0 but for rounding)
    assert torch.allclose(torch.as_tensor(found.scores)[others], naive[others], rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["rf", "raf", "relu_raf", "mh_raf", "sigmoid_raf", "linear_raf", "drf", "block"])
def test_the_maximum_over_a_vocabulary_is_the_naive_maximum(name, tiny_bert):
    """On the tiny BERT's own vocabulary: the exhaustive scan (the screened one scoring every word,
    for the screened maps) finds the naive maximum and its value, and its statistics are the naive
    scores' (the original word left out)."""
    _, tokenizer, encoder = tiny_bert
    n, d, i = 12, 16, 4
    layer = EmbeddingLayer.of(encoder)
    ids = review_tokens(tokenizer, "a great movie with a boring plot and superb acting", n)
    X = layer.sample(ids, d)
    words = candidate_ids(tokenizer)
    rows = layer.rows(words, i, d)
    exclude = int(np.flatnonzero(words == ids[i])[0])
    weights = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **_options(name))
    naive = _naive(name, X, rows, i, weights)
    from wordsens.compute.swap_costs import exhaustive

    result = substitution(
        name, X, rows, position=i, seed=3, weights=weights, options=_options(name), device="cpu",
        screen=len(words), sample=len(words), exclude=exclude, max_steps=50,
    )  # fmt: skip
    assert result.scan.exhaustive == exhaustive(registry.get(name), n, d, _options(name), vocab=len(words))
    assert result.scan.exhaustive  # the tiny vocabulary is cheap for every map: scored whole
    assert result.scan.top[0] == int(torch.argmax(naive))
    assert math.isclose(result.best, float(naive.max()), rel_tol=1e-9)
    others = np.delete(naive.numpy(), exclude)
    assert math.isclose(result.scan.mean, float(others.mean()), rel_tol=1e-5)
    assert math.isclose(result.scan.p99, float(np.quantile(others, 0.99)), rel_tol=1e-5)
    assert math.isclose(result.radius, float(torch.linalg.vector_norm(rows[result.scan.top[0]] - X[i])), rel_tol=1e-12)
    assert result.continuous > 0


@pytest.mark.parametrize("name", ["drf", "block", "raf"])
def test_first_order_gram_is_the_jacobians(name):
    n, d, i = 6, 12, 2
    X = _layer(50, 24).sample(list(range(n)), d)
    weights = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **_options(name))
    problem, _, _ = prepare_problem(
        name, X, i, seed=0, vocab=1, weights=weights, options=_options(name), dtype=torch.float64, device="cpu"
    )
    onehot = torch.zeros((n, 1), dtype=torch.float64)
    onehot[i] = 1.0
    J = torch.autograd.functional.jacobian(
        lambda delta: maps.apply(name, X + onehot * delta, weights).flatten(), torch.zeros(d, dtype=torch.float64)
    )
    G = first_order_gram(problem, rows=5)
    assert torch.allclose(G, J.T @ J, rtol=1e-10, atol=1e-12 * float((J.T @ J).abs().max()))


def test_a_screened_scan_finds_a_strong_word_and_samples_its_statistics():
    n, d, i = 8, 16, 3
    layer = _layer(600, 32, seed=2)
    X = layer.sample(list(range(n)), d)
    rows = layer.rows(np.arange(600), i, d)
    weights = maps.sample_weights("drf", 1, n, d, dtype=torch.float64)
    problem, _, _ = prepare_problem("drf", X, i, seed=1, vocab=600, weights=weights, dtype=torch.float64, device="cpu")
    naive = _naive("drf", X, rows, i, weights)
    screened = scan(problem, rows, X[i], exhaustive=False, screen=64, sample=100, seed=5)
    assert screened.screened == 64 and screened.stats_words == 100 and screened.scores is None
    rank = int((naive > screened.top_scores[0] * (1 + 1e-9)).sum())  # words beyond the one found
    assert rank <= 5
    assert math.isclose(screened.top_scores[0], float(naive[screened.top[0]]), rel_tol=1e-9)
    assert 0.5 < screened.mean / float(naive.mean()) < 2.0


def test_the_radius_of_the_continuous_search():
    from wordsens.data.samples import synthetic_sample

    n, d = 6, 12
    X = synthetic_sample(n, d, 0)
    default = estimate("raf", X, seed=0, position=1, device="cpu")
    same = estimate("raf", X, seed=0, position=1, device="cpu", radius=math.sqrt(d))
    assert same.lower == default.lower and default.radius == math.sqrt(d)
    small = estimate("raf", X, seed=0, position=1, device="cpu", radius=0.5)
    assert small.radius == 0.5 and small.delta_norm <= 0.5 * (1 + 1e-9)
    assert small.lower < default.lower
    rf = estimate("rf", X, seed=0, position=1, device="cpu", radius=1.0)
    rf_default = estimate("rf", X, seed=0, position=1, device="cpu")
    assert math.isclose(rf.upper * math.sqrt(d), rf_default.upper, rel_tol=1e-9)  # the certificate scales with r
    assert rf.delta_norm <= 1.0 * (1 + 1e-9)
    with pytest.raises(ValueError, match="radius must be a positive number"):
        estimate("raf", X, seed=0, radius=0.0)
    with pytest.raises(ValueError, match="reference method"):
        estimate("raf", X, seed=0, method="reference", radius=1.0)
