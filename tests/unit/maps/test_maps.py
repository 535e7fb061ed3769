"""The four feature maps against independent float64 formulas (numpy loops), gradients, samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import normalise, synthetic_sample


def _np_relu(a):
    return np.maximum(a, 0.0)


def _np_rf(X, V):
    return _np_relu(V @ X.reshape(-1))


def _np_drf(X, Vs):
    h = X.reshape(-1)
    for V in Vs:
        h = _np_relu(V @ h)
    return h


def _np_attention(X, W, kind):
    n, d = X.shape
    out = np.zeros_like(X)
    for j in range(n):
        scores = np.array([X[j] @ W @ X[k] / math.sqrt(d) for k in range(n)])
        if kind == "softmax":
            e = np.exp(scores - scores.max())
            a = e / e.sum()
        else:
            r = _np_relu(scores)
            a = r / r.sum() if r.sum() > 0 else r
        out[j] = sum(a[k] * X[k] for k in range(n))
    return out


@pytest.fixture
def sample():
    return synthetic_sample(5, 4, seed=11)


def test_rf_matches_formula(sample):
    V = maps.rf_weights(3, 5, 4, k=7, dtype=torch.float64)
    np.testing.assert_allclose(maps.rf(sample, V).numpy(), _np_rf(sample.numpy(), V.numpy()), rtol=1e-12, atol=1e-12)


def test_drf_matches_formula(sample):
    Vs = maps.drf_weights(3, 5, 4, L=3, dtype=torch.float64)
    np.testing.assert_allclose(
        maps.drf(sample, Vs).numpy(), _np_drf(sample.numpy(), [V.numpy() for V in Vs]), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("name,kind", [("raf", "softmax"), ("relu_raf", "relu")])
def test_attention_maps_match_formula(sample, name, kind):
    W = maps.attention_weights(5, 4, dtype=torch.float64)
    got = maps.feature_map(name)(sample, W)
    assert got.shape == sample.shape
    np.testing.assert_allclose(got.numpy(), _np_attention(sample.numpy(), W.numpy(), kind), rtol=1e-12, atol=1e-12)


def test_maps_accept_batches(sample):
    W = maps.attention_weights(5, 4, dtype=torch.float64)
    batch = torch.stack([sample, 2 * sample])
    for f in (maps.raf, maps.relu_raf):
        out = f(batch, W)
        torch.testing.assert_close(out[1], f(2 * sample, W))


@pytest.mark.parametrize("name", ["rf", "drf", "raf", "relu_raf"])
def test_gradcheck(name):
    X = synthetic_sample(3, 4, seed=2).requires_grad_(True)
    weights = maps.sample_weights(name, 1, 3, 4, L=2, dtype=torch.float64)
    f = maps.feature_map(name)
    assert torch.autograd.gradcheck(lambda x: f(x, weights), (X,), eps=1e-6, atol=1e-5)


def test_softmax_is_stable_for_huge_scores():
    X = torch.tensor([[1e3, 0.0], [0.0, 1e3], [-1e3, 1e3]], dtype=torch.float64)
    W = torch.eye(2, dtype=torch.float64) * 1e3
    assert torch.isfinite(maps.raf(X, W)).all()
    assert torch.isfinite(maps.raf(X.float(), W.float())).all()


def test_relu_raf_zero_rows_stay_zero():
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    W = -torch.eye(2, dtype=torch.float64)  # every score <= 0: every ReLU row sums to zero
    out = maps.relu_raf(X, W)
    assert torch.equal(out, torch.zeros_like(X))
    X.requires_grad_(True)
    maps.relu_raf(X, W).sum().backward()
    assert torch.isfinite(X.grad).all()


def test_weight_laws_and_blocks():
    n, d = 6, 5
    V = maps.rf_weights(9, n, d)
    assert V.shape == (n * d, n * d) and V.dtype == torch.float32
    for j in range(n):
        torch.testing.assert_close(V[:, j * d : (j + 1) * d], maps.rf_block(9, j, n, d), rtol=0, atol=0)
    # variances: 1/D for RF, 2/D for DRF, 1/d for attention (900 or more entries: 5 standard errors)
    big = maps.rf_weights(1, 30, 30, k=1000)
    assert abs(big.var().item() * 900 - 1) < 5 * math.sqrt(2 / big.numel())
    layer = maps.drf_layer(1, 2, 30, 30)
    assert abs(layer.var().item() * 900 / 2 - 1) < 5 * math.sqrt(2 / layer.numel())
    W = maps.attention_weights(1, 300)
    assert abs(W.var().item() * 300 - 1) < 5 * math.sqrt(2 / W.numel())


def test_weights_are_reproducible_and_dtype_independent():
    a = maps.rf_weights(4, 3, 2)
    b = maps.rf_weights(4, 3, 2, dtype=torch.float64)
    torch.testing.assert_close(a.double(), b, rtol=0, atol=0)
    assert not torch.equal(a, maps.rf_weights(5, 3, 2))
    Vs = maps.drf_weights(4, 3, 2, L=2)
    assert not torch.equal(Vs[0], Vs[1])
    gen = torch.Generator().manual_seed(0)
    assert maps.attention_weights(gen, 3).shape == (3, 3)


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: maps.rf(torch.zeros(3), torch.zeros(2, 3)), "shape"),
        (lambda: maps.rf(torch.zeros(2, 3), torch.zeros(4, 5)), "k, n\\*d"),
        (lambda: maps.raf(torch.ones(2, 3), torch.ones(2, 2)), "expected \\(3, 3\\)"),
        (lambda: maps.raf(torch.tensor([[float("nan"), 1.0]]), torch.ones(2, 2)), "NaN"),
        (lambda: maps.relu_raf(torch.tensor([[float("inf"), 1.0]]), torch.ones(2, 2)), "NaN or Inf"),
        (lambda: maps.drf(torch.ones(2, 2), []), "non-empty"),
        (lambda: maps.drf(torch.ones(2, 2), [torch.ones(3, 3)]), "expected \\(4, 4\\)"),
        (lambda: maps.raf(torch.ones(0, 3), torch.ones(3, 3)), "n >= 1"),
        (lambda: maps.raf(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2)), "floating-point"),
        (lambda: maps.feature_map("gelu"), "unknown map"),
        (lambda: maps.rf_weights(0, 0, 3), "n must be a positive integer"),
        (lambda: maps.attention_weights(0, -1), "d must be a positive integer"),
        (lambda: maps.rf_block(0, 5, 3, 2), "outside"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_normalise():
    E = torch.randn(2, 10, 7, dtype=torch.float64)
    X = normalise(E, 4, 3)
    assert X.shape == (2, 4, 3)
    torch.testing.assert_close(
        torch.linalg.vector_norm(X, dim=-1), torch.full((2, 4), math.sqrt(3), dtype=torch.float64)
    )
    # rows keep their direction
    torch.testing.assert_close(X[0, 1] / X[0, 1].norm(), E[0, 1, :3] / E[0, 1, :3].norm())
    with pytest.raises(ValueError, match="only 10"):
        normalise(E, 11, 3)
    with pytest.raises(ValueError, match="width 7"):
        normalise(E, 4, 8)
    with pytest.raises(ValueError, match="all zeros"):
        normalise(torch.zeros(3, 3), 2, 2)
    with pytest.raises(ValueError, match="NaN"):
        normalise(torch.full((3, 3), float("nan")), 2, 2)
    S = synthetic_sample(4, 9, seed=1)
    torch.testing.assert_close(S.norm(dim=-1), torch.full((4,), 3.0, dtype=torch.float64))
    torch.testing.assert_close(S, synthetic_sample(4, 9, seed=1), rtol=0, atol=0)


def _scaled_forward(X: torch.Tensor, weights: dict) -> torch.Tensor:
    """A map with a scalar weight, written for tensors: ``exp(t) tanh(X W)``."""
    return weights["t"].exp() * torch.tanh(X @ weights["W"])


def test_a_scalar_weight_may_be_a_python_number_or_a_0d_tensor():
    """A map whose shapes name a scalar (shape ``()``) takes it as a Python number or a 0-d tensor:
    the checks pass both, the forward sees a 0-d tensor, the full-map search takes both; a scalar that
    is not finite, a bool or a vector is refused with the key named."""
    with maps.registry.isolated():
        maps.register(
            maps.MapSpec(
                "scaled",
                "scaled tanh",
                "exp(t) tanh(X W)",
                "W (d, d), t a scalar",
                forward=_scaled_forward,
                sample=lambda seed, n, d, **kw: {"W": torch.eye(d), "t": torch.tensor(0.0)},
                shapes=lambda n, d: {"W": (d, d), "t": ()},
                settings=maps.SearchSettings(restarts=2, keep=1, patience=5, tol=1e-6, momentum=0.0, polish=False),
                reference=(10.0, 20),
            )
        )
        X = synthetic_sample(4, 3, seed=0)
        W = 0.3 * torch.eye(3, dtype=torch.float64)
        expected = math.exp(0.5) * np.tanh(X.numpy() @ W.numpy())  # independent formula
        for t in (0.5, np.float64(0.5), torch.tensor(0.5, dtype=torch.float64)):
            phi = maps.apply("scaled", X, {"W": W, "t": t}, check=True)
            np.testing.assert_allclose(phi.numpy(), expected, rtol=1e-14)
        for t in (1, 1.0):  # an int is a number too
            maps.check_weights("scaled", {"W": W, "t": t}, 4, 3)
        by_number = search.estimate("scaled", X, seed=0, weights={"W": W, "t": 0.5}, max_steps=30, device="cpu")
        by_tensor = search.estimate(
            "scaled", X, seed=0, weights={"W": W, "t": torch.tensor(0.5)}, max_steps=30, device="cpu"
        )
        assert by_number.lower == by_tensor.lower > 0
        for t, message in (
            (float("nan"), r"weight 't' is nan; give a finite number"),
            (True, r"weight 't' has shape bool, expected \(\) \(a number or a 0-d tensor\)"),
            (torch.ones(1), r"weight 't' has shape \(1,\), expected \(\)"),
            (torch.tensor(float("inf")), r"weight 't' contains NaN or Inf"),
        ):
            with pytest.raises(ValueError, match=message):
                maps.apply("scaled", X, {"W": W, "t": t}, check=True)
