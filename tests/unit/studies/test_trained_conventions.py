"""The trained study's conventions and inputs (``wordsens.studies.trained.run``, ``wordsens.maps.trained``,
the counterparts' weights in ``wordsens.maps.checkpoint``, the checks in ``wordsens.data.inputs``): the
moved rows are words, the scale-matched counterparts keep the trained singular values, the LN-matched
block is the formula it says, the model's convention is a ball of radius ||x_i||, the entropies are
those of transformers' attention, and the study refuses a tokenizer that does not know the words and
near-duplicate samples. On tiny BERTs built here (offline), one of them with a checkpoint-like layer:
non-trivial LayerNorms (gamma, beta, eps 1e-6) and biases."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pandas as pd
import pytest
import torch
from search_reference import fast_problem, full_value

from wordsens import maps
from wordsens.data import demo, embed, inputs, models, pretrained
from wordsens.maps import checkpoint
from wordsens.maps.trained import attention_entropy
from wordsens.search import estimate
from wordsens.studies.trained import NUMERICS, TrainedJob
from wordsens.studies.trained.run import check_tokenizer, layer_rows, layer_table, moved_rows

LONG = "a good film with a great cast and a sad story " * 3
OTHER = "the worst movie, bad acting and a dull plot " * 3
MINILM = models.PACKAGED_MODELS["minilm"]


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


@pytest.fixture(scope="module")
def shaped_bert(tmp_path_factory) -> str:
    """The demo's tiny BERT (2 layers, width 64, 4 heads) with a trained-looking layer: LayerNorm gamma
    around 1, beta and every bias non-zero, eps 1e-6 (the demo's are 1, 0, 0 and 1e-12)."""
    from transformers import BertModel

    folder = demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "shaped")
    model = BertModel.from_pretrained(folder)
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "LayerNorm.weight" in name:
                param.copy_(1.0 + 0.3 * torch.randn(param.shape, generator=gen))
            elif name.endswith("bias"):
                param.copy_(0.2 * torch.randn(param.shape, generator=gen))
    model.config.layer_norm_eps = 1e-6
    model.save_pretrained(folder)
    return str(folder)


# --------------------------------------------------------------------------- the moved rows


def test_word_rows_never_include_cls_or_sep():
    for n in (3, 4, 9, 16, 128):
        words = list(range(1, n - 1))
        for count in sorted({1, min(3, n - 2), n - 2}):
            for seed in range(40):
                rows = moved_rows(n, count, specials=False, seed=seed)
                positions = [i for i, _ in rows]
                assert len(set(positions)) == count and set(positions) <= set(words), (n, count, seed)
                assert {token for _, token in rows} == {"word"} and positions == sorted(positions)
        assert moved_rows(n, "all", specials=False, seed=0) == [(i, "word") for i in words]
        with_specials = moved_rows(n, 1, specials=True, seed=5)
        assert with_specials[1:] == [(0, "[CLS]"), (n - 1, "[SEP]")] and with_specials[0][1] == "word"
    # the draw depends on the seed: 40 seeds at n = 128 do not all pick the same row
    assert len({moved_rows(128, 1, specials=False, seed=s)[0] for s in range(40)}) > 10
    for bad in (0, 15, "some", True):
        with pytest.raises(ValueError, match=r"trained.positions must be 'all' or an integer in \[1, 14\]"):
            moved_rows(16, bad, specials=False, seed=0)


def test_the_rows_a_job_moves_hold_words_of_the_review(shaped_bert):
    tokenizer, encoder = pretrained.load_encoder(shaped_bert, "cpu")
    rows = layer_rows(
        tokenizer,
        encoder,
        [LONG, OTHER],
        model=shaped_bert,
        layer=1,
        ns=[12],
        conventions=["paper"],
        maps_=["trained_attention"],
        positions=3,
        specials=True,
        draws=1,
        max_steps=5,
    )
    specials = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
    for review, text in enumerate([LONG, OTHER]):
        ids = tokenizer(text, max_length=12, truncation=True)["input_ids"]
        mine = [r for r in rows if r["review"] == review]
        assert {(r["position"], r["token"]) for r in mine if r["token"] != "word"} == {(0, "[CLS]"), (11, "[SEP]")}
        assert ids[0] == tokenizer.cls_token_id and ids[11] == tokenizer.sep_token_id
        words = {r["position"] for r in mine if r["token"] == "word"}
        assert len(words) == 3 and not {ids[i] for i in words} & specials


# --------------------------------------------------------------------------- the counterparts


def _svd(W: torch.Tensor) -> torch.Tensor:
    return torch.linalg.svdvals(W.double())


@pytest.mark.parametrize("model", ["shaped", pytest.param("minilm", marks=pytest.mark.slow)])
def test_the_scale_matched_counterparts_have_the_trained_singular_values(shaped_bert, model):
    if model == "minilm" and importlib.util.find_spec(MINILM.module) is None:
        pytest.skip(f"{MINILM.distribution} is not installed")
    name = shaped_bert if model == "shaped" else "minilm"
    trained = checkpoint.layer_weights(name, 2)
    d = int(trained["Wo"].shape[0])
    matched = checkpoint.matched_layer_weights(3, 8, d, model=name, layer=2)
    attention = checkpoint.matched_attention_weights(3, 8, d, model=name, layer=2)
    for weights in (matched, attention):
        for key in ("Wq", "Wk", "Wv", "Wo", "W1", "W2"):
            if key not in weights:
                continue
            pairs = (
                zip(trained[key], weights[key], strict=True)
                if key in ("Wq", "Wk", "Wv")
                else [(trained[key], weights[key])]
            )
            for W, M in pairs:
                s = _svd(W)
                assert float((_svd(M) - s).abs().max() / s.max()) <= 1e-6, key
                assert not torch.allclose(M, W, atol=1e-3 * float(W.abs().max()))  # new singular vectors
        for key in ("bq", "bk", "bv", "bo", "b1", "b2"):
            if key in weights:
                torch.testing.assert_close(weights[key].norm(dim=-1), trained[key].norm(dim=-1), rtol=1e-6, atol=0)
    for key in ("ln1_w", "ln1_b", "ln2_w", "ln2_b", "eps"):
        assert torch.equal(matched[key], trained[key])
    # seeded: the same seed gives the same weights, another seed others
    again = checkpoint.matched_layer_weights(3, 8, d, model=name, layer=2)
    assert all(torch.equal(again[k], matched[k]) for k in matched)
    other = checkpoint.matched_layer_weights(4, 8, d, model=name, layer=2)
    assert not torch.equal(other["Wq"], matched["Wq"])


def test_the_ln_matched_block_is_block_with_the_trained_layernorms_and_gelu(shaped_bert):
    n, d, h = 7, 64, 4
    W = maps.sample_weights("ln_block", 5, n, d, dtype=torch.float64, model=shaped_bert, layer=2)
    block = maps.sample_weights("block", 5, n, d, dtype=torch.float64, heads=h)
    trained = checkpoint.layer_weights(shaped_bert, 2)
    assert all(torch.equal(W[key], block[key]) for key in block)  # block's very weights, same seed
    for key in ("ln1_w", "ln1_b", "ln2_w", "ln2_b"):
        assert torch.equal(W[key], trained[key].double())
    assert float(W["eps"]) == pytest.approx(1e-6) and all(float(W[k].abs().max()) == 0 for k in ("bq", "bo", "b1"))
    X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) * 1.5

    def ln(Z, gamma, beta):  # by hand: biased variance over the last axis, eps 1e-6
        mean = Z.mean(-1, keepdim=True)
        var = ((Z - mean) ** 2).mean(-1, keepdim=True)
        return (Z - mean) / torch.sqrt(var + 1e-6) * gamma + beta

    heads = []
    for k in range(h):
        Q, K, V = X @ block["Wq"][k], X @ block["Wk"][k], X @ block["Wv"][k]
        S = Q @ K.T / math.sqrt(d // h)
        A = torch.exp(S - S.max(-1, keepdim=True).values)
        heads.append((A / A.sum(-1, keepdim=True)) @ V)
    Y = ln(X + torch.cat(heads, dim=-1) @ block["Wo"], trained["ln1_w"].double(), trained["ln1_b"].double())
    U = Y @ block["W1"]
    gelu = 0.5 * U * (1 + torch.special.erf(U / math.sqrt(2)))
    expected = ln(Y + gelu @ block["W2"], trained["ln2_w"].double(), trained["ln2_b"].double())
    torch.testing.assert_close(maps.apply("ln_block", X, W), expected, rtol=0, atol=1e-12)
    # and not block: the trained LayerNorms and GELU change it
    assert not torch.allclose(maps.apply("block", X, block), expected, atol=1e-2)


# --------------------------------------------------------------------------- the model's convention


def test_the_model_convention_searches_a_ball_of_radius_the_moved_rows_norm(shaped_bert):
    """At the model's own scale the ball has the moved row's norm as radius: the move found lies in it,
    changes the map by the WS reported, and a move of the paper's radius sqrt(d) is a different search."""
    from wordsens.studies.trained.run import layer_inputs, trained_rows

    tokenizer, encoder = pretrained.load_encoder(shaped_bert, "cpu")
    X = layer_inputs(tokenizer, encoder, [LONG], layer=2, n=10, normalise=False)[0] * 0.37  # rows far from sqrt(d)
    rows = trained_rows(
        X, model=shaped_bert, layer=2, heads=4, seed=1, review=0, conventions=["model"], draws=1, specials=False
    )
    row = next(r for r in rows if r["map"] == "trained_attention")
    i = row["position"]
    assert row["radius"] == pytest.approx(float(X[i].norm())) and row["radius"] < 8.0 / 2
    W = maps.sample_weights("trained_attention", row["seed"], 10, 64, dtype=torch.float64, model=shaped_bert, layer=2)
    options = {"model": shaped_bert, "layer": 2}
    result = estimate(
        "trained_attention", X, seed=row["seed"], position=i, weights=W, options=options, radius=row["radius"]
    )
    assert result.lower == pytest.approx(row["ws"], rel=1e-9)
    assert float(result.delta.norm()) <= row["radius"] * (1 + 1e-9)
    moved = X.clone()
    moved[i] += result.delta.double()
    base = maps.apply("trained_attention", X, W)
    assert float((maps.apply("trained_attention", moved, W) - base).norm() / base.norm()) == pytest.approx(
        row["ws"], rel=1e-6
    )
    paper_ball = estimate("trained_attention", X, seed=row["seed"], position=i, weights=W, options=options)
    assert paper_ball.lower > row["ws"] * 1.01  # the ball sqrt(d) is larger here: another number


def test_attention_entropy_is_that_of_transformers_attention(shaped_bert):
    tokenizer, _ = pretrained.load_encoder(shaped_bert, "cpu")
    encoder = checkpoint.load_checkpoint(shaped_bert, attentions=True)
    batch = embed.encode(tokenizer, [LONG, OTHER], 11)
    with torch.no_grad():
        out = encoder(**batch, output_hidden_states=True, output_attentions=True)
    for layer in (1, 2):
        P = out.attentions[layer - 1].double()  # (reviews, heads, n, n)
        expected = -(P * torch.log(P)).sum(-1)
        W = checkpoint.layer_weights(shaped_bert, layer)
        got = attention_entropy(out.hidden_states[layer - 1], W)
        torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)
    uniform = attention_entropy(torch.ones(5, 64), {"Wq": torch.zeros(2, 64, 32), "Wk": torch.zeros(2, 64, 32)})
    torch.testing.assert_close(uniform, torch.full((2, 5), math.log(5)))


# --------------------------------------------------------------------------- the study's inputs


def test_the_tokenizer_check_refuses_a_review_with_too_many_unknown_words(shaped_bert):
    tokenizer, _ = pretrained.load_encoder(shaped_bert, "cpu")
    known = "a film with a great story and the worst movie plot"  # every word in the demo's vocabulary
    assert tokenizer.unk_token_id not in tokenizer(known, add_special_tokens=False)["input_ids"]
    words = len(tokenizer(known, add_special_tokens=False)["input_ids"])
    texts = [
        " ".join([known] * 4),
        " ".join([known] * 3 + ["xylophone"] * 2),
    ]  # 2 unknown words among 3 * 10 known: 6.2%
    ids = tokenizer(texts[1], add_special_tokens=False)["input_ids"]
    share = ids.count(tokenizer.unk_token_id) / len(ids)
    assert share == pytest.approx(2 / (3 * words + 2)) and share >= 0.05
    with pytest.raises(inputs.InputError) as err:
        check_tokenizer(tokenizer, texts, ["review_id 3", "review_id 8"], limit=0.05, key="trained.model 'tiny'")
    text = str(err.value)
    assert text.startswith("trained.model 'tiny': the tokenizer of") and f"review_id 8 ({share:.1%})" in text
    assert "review_id 3" not in text and "data.max_unk_share = 5%" in text and "vocab=path" in text
    # holds: below the limit
    line = check_tokenizer(tokenizer, texts, ["review_id 3", "review_id 8"], limit=0.1, key="trained.model")
    assert f"at most {share:.2%} per review" in line


def test_a_tokenizer_that_maps_every_word_to_unk_stops_the_job_naming_trained_model(shaped_bert, tmp_path):
    """The issue's case: a 99%-[UNK] tokenizer gave identical samples that the study accepted."""
    from transformers import BertTokenizerFast

    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    broken = BertTokenizerFast(vocab=str(tmp_path / "vocab.txt"), do_lower_case=True)
    _, encoder = pretrained.load_encoder(shaped_bert, "cpu")
    pool = pd.DataFrame({"review_id": [10, 11, 12], "text": [LONG, OTHER, LONG + OTHER]})
    job = TrainedJob(
        study="trained", model="tiny", layer=1, heads=4, n=(8,), reviews=3, conventions=("paper",),
        maps=("trained_attention",), positions=1, specials=False, draws=1, head_n=None, head_reviews=None,
        max_steps=10, seed=0, numerics_version=NUMERICS[1],
    )  # fmt: skip
    with pytest.raises(inputs.InputError, match=r"^trained.model 'tiny': .* 3 of 3 reviews .* review_id 10 \(100.0%\)"):
        layer_table(broken, encoder, pool, job, source=shaped_bert, key="trained.model 'tiny'")


def test_near_duplicate_samples_are_refused_with_the_reviews_named(shaped_bert):
    gen = np.random.default_rng(0)
    A, B = gen.normal(size=(10, 8)), gen.normal(size=(10, 8))
    near = A + 1e-3 * gen.normal(size=A.shape)  # cosine 1 - 5e-7
    apart = A + 0.02 * gen.normal(size=A.shape)  # cosine about 1 - 2e-4: below the threshold
    cosine = float((A * apart).sum() / np.linalg.norm(A) / np.linalg.norm(apart))
    assert 0.999 < cosine < 0.9999
    inputs.check_near_duplicates(np.stack([A, B, apart]), ["r1", "r2", "r3"], what="layer 1 at n = 10")  # holds
    with pytest.raises(
        inputs.InputError, match=r"layer 1 at n = 10, cosine similarity >= 0.9999\): r1 and r3 \(0.99999"
    ):
        inputs.check_near_duplicates(np.stack([A, B, near]), ["r1", "r2", "r3"], what="layer 1 at n = 10")
    tokenizer, encoder = pretrained.load_encoder(shaped_bert, "cpu")
    with pytest.raises(inputs.InputError, match="review_id 4 and review_id 9"):
        layer_rows(
            tokenizer,
            encoder,
            [LONG, OTHER, LONG],
            model=shaped_bert,
            layer=2,
            ns=[8],
            names=["review_id 4", "review_id 5", "review_id 9"],
            max_steps=5,
        )


# --------------------------------------------------------------------------- the layers' fast search


@pytest.mark.parametrize("name", ["trained_layer", "ln_block", "matched_layer"])
def test_the_layer_search_has_the_values_and_gradients_of_the_plain_map(shaped_bert, name):
    n, d = 7, 64
    X = torch.randn(n, d, dtype=torch.float64, generator=torch.Generator().manual_seed(8)) * 1.3
    options = {"model": shaped_bert, "layer": 2}
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    prepare = fast_problem(name, X, W, options)
    gen = torch.Generator().manual_seed(4)
    base = maps.apply(name, X, W)
    for position in (0, 3, n - 1):
        problem = prepare(position)
        D = 3 * torch.randn(5, d, dtype=torch.float64, generator=gen)
        D[0] = 0.0
        Dg = D.clone().requires_grad_(True)
        full = full_value(name, X, W, position, Dg)
        (g_full,) = torch.autograd.grad(full.sum(), Dg)
        value, grad = problem.value_and_grad(D)
        torch.testing.assert_close(value, full.detach(), rtol=1e-9, atol=1e-11)
        torch.testing.assert_close(grad[1:], g_full[1:], rtol=1e-7, atol=1e-9)
        assert problem.phi_norm == pytest.approx(float(base.norm()), rel=1e-12)
    # the search reaches at least the authors' algorithm on the same instance
    ours = estimate(name, X, seed=0, weights=W, options=options, device="cpu", max_steps=300)
    ref = estimate(name, X, seed=0, weights=W, options=options, method="reference", device="cpu")
    assert ours.lower >= ref.lower * (1 - 1e-9) and ours.delta_norm <= 8.0 * (1 + 1e-12)
