"""The attention variants (wordsens.maps.variants, wordsens.search.variants): every map against an independent
float64 NumPy formula on the weights its sampler returns, the sampler laws, every fast search against
the plain map (value and gradient), the estimate against the authors' algorithm, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry
from wordsens.search import SearchContext

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


# --------------------------------------------------------------------------- fast searches


def _problem(name, X, W, position, options, dtype=torch.float64):
    spec = registry.get(name)
    ctx = SearchContext(spec=spec, dtype=dtype, device=torch.device("cpu"), options=spec.option_values(options))
    return registry.resolve(spec.fast)(X, 0, W, ctx)(position)


def _full_value(name, X, W, position, D):
    """||phi(X^i(D_r)) - phi(X)||^2 for each row of D, with the plain map (autograd-able)."""
    onehot = torch.zeros((X.shape[0], 1), dtype=X.dtype)
    onehot[position] = 1.0
    moved = X + onehot * D[:, None, :]
    diff = (maps.apply(name, moved, W) - maps.apply(name, X, W)).flatten(1)
    return (diff * diff).sum(-1)


@pytest.mark.parametrize(
    "name,n,d,options",
    [
        ("sigmoid_raf", 7, 6, {}),
        ("sigmoid_raf", 1, 4, {}),
        ("linear_raf", 7, 6, {}),
        ("linear_raf", 1, 4, {}),
        ("mh_raf", 7, 6, {"heads": 3}),
        ("mh_raf", 1, 4, {"heads": 2}),
        ("mh_raf", 5, 12, {}),
        ("block", 5, 8, {"heads": 2}),
    ],
)
def test_fast_value_and_gradient_against_the_full_map(name, n, d, options):
    X = synthetic_sample(n, d, seed=1)
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    gen = torch.Generator().manual_seed(4)
    for position in sorted({0, n // 2, n - 1}):
        problem = _problem(name, X, W, position, options)
        D = 2 * torch.randn(5, d, dtype=torch.float64, generator=gen)
        D[0] = 0.0
        full = _full_value(name, X, W, position, D)
        torch.testing.assert_close(problem.value(D), full, rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(problem.exact(D), full.sqrt(), rtol=1e-12, atol=1e-12)
        value, grad = problem.value_and_grad(D)
        Dg = D.clone().requires_grad_(True)
        (g_full,) = torch.autograd.grad(_full_value(name, X, W, position, Dg).sum(), Dg)
        torch.testing.assert_close(value, full, rtol=1e-9, atol=1e-10)
        torch.testing.assert_close(grad[1:], g_full[1:], rtol=1e-7, atol=1e-8)
        assert problem.phi_norm == pytest.approx(float(maps.apply(name, X, W).norm()), rel=1e-12)


@pytest.mark.parametrize("name", VARIANTS)
def test_starts_lie_in_the_ball_and_include_the_reference_start(name):
    n, d, options = SMALL[name]
    X = synthetic_sample(n, d, seed=5)
    W = maps.sample_weights(name, 3, n, d, dtype=torch.float64, **options)
    problem = _problem(name, X, W, 1, options)
    starts = problem.starts(16, torch.Generator().manual_seed(0))
    norms = torch.linalg.vector_norm(starts, dim=-1)
    assert starts.shape == (16, d) and bool((norms <= math.sqrt(d) * (1 + 1e-12)).all())
    assert bool((norms < 1.0).any())  # the reference's jittered start 0.1 N(0, I)
    xi = X[1] / X[1].norm()
    assert bool(((starts @ xi).abs() > math.sqrt(d) * (1 - 1e-9)).any())  # +-x_i


def test_on_sphere_follows_the_sphere_where_the_gradient_points_out():
    from wordsens.search.variants import OnSphere

    n, d, options = SMALL["sigmoid_raf"]
    X = synthetic_sample(n, d, seed=2)
    W = maps.sample_weights("sigmoid_raf", 3, n, d, dtype=torch.float64)
    problem = _problem("sigmoid_raf", X, W, 1, options)
    wrapped = OnSphere(problem)
    D = torch.randn(6, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    D[:3] *= math.sqrt(d) / D[:3].norm(dim=-1, keepdim=True)  # on the sphere
    D[3:] *= 0.5 / D[3:].norm(dim=-1, keepdim=True)  # inside
    value, grad = problem.value_and_grad(D)
    value_s, grad_s = wrapped.value_and_grad(D)
    torch.testing.assert_close(value_s, value, rtol=0, atol=0)
    outward = (grad * D).sum(-1) > 0
    for r in range(6):
        if r < 3 and outward[r]:  # the tangential part: orthogonal to D, the same tangential component
            assert abs(float(grad_s[r] @ D[r])) < 1e-9 * float(grad[r].norm() * D[r].norm())
            torch.testing.assert_close(grad_s[r] - grad[r], (grad_s[r] - grad[r]) @ D[r] / D[r].norm() ** 2 * D[r])
        else:
            torch.testing.assert_close(grad_s[r], grad[r], rtol=0, atol=0)
    assert bool(outward[:3].any())


# --------------------------------------------------------------------------- estimates against the reference


@pytest.mark.parametrize(
    "name,n,d,options",
    [
        ("sigmoid_raf", 8, 16, {}),
        ("linear_raf", 8, 16, {}),
        ("mh_raf", 8, 16, {"heads": 4}),
        ("block", 5, 8, {"heads": 2}),
    ],
)
def test_estimate_is_at_least_the_reference(name, n, d, options):
    for seed in range(2):
        X = synthetic_sample(n, d, seed=seed)
        W = maps.sample_weights(name, seed, n, d, dtype=torch.float64, **options)
        ours = search.estimate(name, X, seed=seed, weights=W, options=options)
        ref = search.estimate(name, X, seed=seed, weights=W, options=options, method="reference")
        assert ours.lower >= ref.lower * (1 - 1e-9), (name, seed, ours.lower, ref.lower)
        assert ref.steps == 50 * n and ours.options == options
        # both numbers are the map's own relative change at the Delta found
        for res in (ours, ref):
            assert res.delta_norm <= math.sqrt(d) * (1 + 1e-12)
            change = _full_value(name, X, W, 0, res.delta.double()[None]).sqrt() / maps.apply(name, X, W).norm()
            assert res.lower == pytest.approx(float(change[0]), rel=1e-9)


def test_position_all_and_resource_estimates():
    X = synthetic_sample(4, 8, seed=6)
    res = search.estimate("mh_raf", X, seed=1, position="all", options={"heads": 2}, restarts=8)
    assert len(res.profile) == 4 and res.lower == pytest.approx(max(res.profile))
    for name in VARIANTS:
        spec = registry.get(name)
        assert spec.label and spec.formula and spec.weight_law and spec.reference == (10.0, "50n")
        assert spec.ws_memory(50, 768).bytes > 0
        assert spec.ws_seconds(50, 768, method="reference") > spec.ws_seconds(50, 768)


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
