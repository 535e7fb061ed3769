"""The attention variants (wordsens.maps.variants): every map against an independent float64 NumPy formula
on the weights its sampler returns, the sampler laws, and bad input. Their searches:
tests/unit/search/test_variant_searches.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry

VARIANTS = ("sigmoid_raf", "linear_raf", "mh_raf", "block")


# --------------------------------------------------------------------------- independent formulas (NumPy loops)


def _np_sigmoid_raf(X, w):
    n, d = X.shape
    W = w["W"]
    out = np.zeros_like(X)
    for j in range(n):
        for k in range(n):
            s = X[j] @ W @ X[k] / math.sqrt(d) - math.log(n)
            out[j] += X[k] / (1 + math.exp(-s))
    return out


def _np_elu1(z):
    return np.where(z > 0, z, np.exp(np.minimum(z, 0)) - 1) + 1


def _np_linear_raf(X, w):
    n, _ = X.shape
    q = [_np_elu1(w["Wq"].T @ X[j]) for j in range(n)]
    k = [_np_elu1(w["Wk"].T @ X[j]) for j in range(n)]
    out = np.zeros_like(X)
    for j in range(n):
        a = np.array([q[j] @ k[m] for m in range(n)])
        out[j] = (a / a.sum()) @ X
    return out


def _np_mh_raf(X, w):
    n = X.shape[0]
    heads, _, dh = w["Wq"].shape
    parts = []
    for h in range(heads):
        Q, K, V = X @ w["Wq"][h], X @ w["Wk"][h], X @ w["Wv"][h]
        head = np.zeros((n, dh))
        for j in range(n):
            s = np.array([Q[j] @ K[m] for m in range(n)]) / math.sqrt(dh)
            e = np.exp(s - s.max())
            head[j] = (e / e.sum()) @ V
        parts.append(head)
    return np.concatenate(parts, axis=1) @ w["Wo"]


def _np_layer_norm(Z):
    mu = Z.mean(axis=-1, keepdims=True)
    var = ((Z - mu) ** 2).mean(axis=-1, keepdims=True)
    return (Z - mu) / np.sqrt(var + 1e-5)


def _np_block(X, w):
    Y = _np_layer_norm(X + _np_mh_raf(X, w))
    return _np_layer_norm(Y + np.maximum(Y @ w["W1"], 0) @ w["W2"])


FORMULAS = {"sigmoid_raf": _np_sigmoid_raf, "linear_raf": _np_linear_raf, "mh_raf": _np_mh_raf, "block": _np_block}
# small instances: (n, d, options)
SMALL = {
    "sigmoid_raf": (6, 5, {}),
    "linear_raf": (6, 5, {}),
    "mh_raf": (6, 8, {"heads": 4}),
    "block": (5, 8, {"heads": 2}),
}


def _np(weights):
    return {key: value.numpy() for key, value in weights.items()}


@pytest.mark.parametrize("name", VARIANTS)
def test_each_map_matches_its_formula(name):
    n, d, options = SMALL[name]
    X = synthetic_sample(n, d, seed=11)
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    expected = FORMULAS[name](X.numpy(), _np(W))
    phi = getattr(maps, name)  # maps.<name>, from the registry
    np.testing.assert_allclose(phi(X, W).numpy(), expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(maps.apply(name, X, W).numpy(), expected, rtol=1e-11, atol=1e-12)
    # leading batch dimensions
    batch = torch.stack([X, synthetic_sample(n, d, seed=12)])
    out = maps.apply(name, batch, W)
    assert out.shape == (2, n, d)
    torch.testing.assert_close(out[1], maps.apply(name, batch[1], W), rtol=1e-12, atol=1e-12)


def test_multi_head_maps_at_the_default_heads():
    n, d = 4, 24  # 12 heads of width 2
    X = synthetic_sample(n, d, seed=2)
    for name in ("mh_raf", "block"):
        W = maps.sample_weights(name, 1, n, d, dtype=torch.float64)
        assert W["Wq"].shape == (12, d, 2)
        np.testing.assert_allclose(
            getattr(maps, name)(X, W).numpy(), FORMULAS[name](X.numpy(), _np(W)), rtol=1e-11, atol=1e-12
        )


def test_block_rows_are_layer_normalised_and_one_head_mh_is_attention_with_projections():
    X = synthetic_sample(5, 8, seed=3)
    out = maps.apply("block", X, maps.sample_weights("block", 0, 5, 8, dtype=torch.float64, heads=4))
    torch.testing.assert_close(out.mean(-1), torch.zeros(5, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(out.pow(2).mean(-1), torch.full((5,), 1.0, dtype=torch.float64), atol=1e-4, rtol=0)
    # one head, Wq Wk^T = W sqrt(d) / sqrt(d), Wv = Wo = I: mh_raf is RAF
    W = maps.attention_weights(1, 8, dtype=torch.float64)
    eye = torch.eye(8, dtype=torch.float64)
    mh = {"Wq": W[None], "Wk": eye[None], "Wv": eye[None], "Wo": eye}
    torch.testing.assert_close(maps.mh_raf(X, mh), maps.raf(X, W), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- samplers


LAWS = {  # tensor -> variance of its entries, as a function of d
    "sigmoid_raf": {"W": lambda d: 1 / d},
    "linear_raf": {"Wq": lambda d: 1 / d, "Wk": lambda d: 1 / d},
    "mh_raf": {key: (lambda d: 1 / d) for key in ("Wq", "Wk", "Wv", "Wo")},
    "block": {
        **{key: (lambda d: 1 / d) for key in ("Wq", "Wk", "Wv", "Wo")},
        "W1": lambda d: 2 / d,
        "W2": lambda d: 1 / (4 * d),
    },
}


@pytest.mark.parametrize("name", VARIANTS)
def test_sampler_laws_shapes_and_seeds(name):
    n, d = 3, 120  # d divisible by the default 12 heads
    W = maps.sample_weights(name, 5, n, d)
    spec = registry.get(name)
    assert spec.shapes is not None
    shapes = spec.shapes(n, d, **spec.option_values())
    assert set(W) == set(shapes) == set(LAWS[name])
    for key, tensor in W.items():
        assert tuple(tensor.shape) == shapes[key] and tensor.dtype == torch.float32
        var = LAWS[name][key](d)
        m = tensor.numel()
        # mean and variance within 5 standard errors of N(0, var)
        assert abs(tensor.double().mean().item()) < 5 * math.sqrt(var / m), key
        assert abs(tensor.double().var().item() / var - 1) < 5 * math.sqrt(2 / m), key
    # reproducible, dtype-independent, one seed per tensor
    again = maps.sample_weights(name, 5, n, d, dtype=torch.float64)
    other = maps.sample_weights(name, 6, n, d)
    for key in W:
        torch.testing.assert_close(again[key], W[key].double(), rtol=0, atol=0)
        assert not torch.equal(other[key], W[key])
    firsts = [tensor.flatten()[:5] for tensor in W.values()]
    assert all(not torch.equal(a, b) for i, a in enumerate(firsts) for b in firsts[i + 1 :])


def test_block_shares_the_attention_weights_of_mh_raf():
    block = maps.sample_weights("block", 9, 4, 24)
    mh = maps.sample_weights("mh_raf", 9, 4, 24)
    for key in mh:
        torch.testing.assert_close(block[key], mh[key], rtol=0, atol=0)
    assert maps.sample_weights("mh_raf", 9, 4, 24, heads=6)["Wq"].shape == (6, 24, 4)


# --------------------------------------------------------------------------- bad input


def test_heads_must_divide_d():
    X = synthetic_sample(4, 10, seed=0)
    for name in ("mh_raf", "block"):
        with pytest.raises(ValueError, match=r"d = 10 is not a multiple of heads = 12.*divisors"):
            maps.sample_weights(name, 0, 4, 10)
        with pytest.raises(ValueError, match="d = 10 is not a multiple of heads = 4"):
            search.estimate(name, X, seed=0, options={"heads": 4})
        with pytest.raises(ValueError, match="heads must be a positive integer"):
            search.estimate(name, X, seed=0, options={"heads": 0})
        with pytest.raises(ValueError, match="no option L"):
            search.estimate(name, X, seed=0, options={"heads": 5, "L": 2})


@pytest.mark.parametrize("name", VARIANTS)
def test_wrong_weight_dicts_are_refused(name):
    n, d, options = SMALL[name]
    X = synthetic_sample(n, d, seed=0)
    W = maps.sample_weights(name, 0, n, d, dtype=torch.float64, **options)
    phi = getattr(maps, name)
    missing = dict(W)
    missing.pop(min(W))
    with pytest.raises(ValueError, match="dict with the tensors"):
        phi(X, missing)
    with pytest.raises(ValueError, match="dict with the tensors"):
        phi(X, {**W, "extra": W[min(W)]})
    with pytest.raises(ValueError, match="dict with the tensors"):
        phi(X, list(W.values()))
    key = max(W)
    with pytest.raises(ValueError, match=f"weight '{key}' has shape"):
        phi(X, {**W, key: W[key][..., :-1]})
    with pytest.raises(ValueError, match="NaN or Inf"):
        phi(X, {**W, key: W[key] * float("nan")})
    with pytest.raises(ValueError, match=f"weight '{key}' has shape"):
        search.estimate(name, X, seed=0, weights={**W, key: W[key][..., :-1]}, options=options)


def test_weights_and_options_must_agree_on_heads():
    X = synthetic_sample(4, 8, seed=0)
    W = maps.sample_weights("mh_raf", 0, 4, 8, dtype=torch.float64, heads=4)
    maps.mh_raf(X, W)  # the heads are read from the weights
    with pytest.raises(ValueError, match="have 4 heads but the map's options say heads = 2"):
        search.estimate("mh_raf", X, seed=0, weights=W, options={"heads": 2})
    with pytest.raises(ValueError, match="weight 'Wk' has shape"):
        maps.mh_raf(X, {**W, "Wk": maps.sample_weights("mh_raf", 0, 4, 8, dtype=torch.float64, heads=2)["Wk"]})
