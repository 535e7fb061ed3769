"""Shared dense products (wordsens.linalg) and the pieces of RF's subspace search
(wordsens.search.rf), each against a plain NumPy formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens.linalg import add_lower_gram_, lower_gram
from wordsens.search.first_layer import FirstLayer, image
from wordsens.search.rf import SubspaceRF, orthonormal_images


@pytest.mark.parametrize("N,c,blocks", [(13, 40, 8), (5, 3, 8), (64, 7, 4), (1, 9, 8)])
def test_lower_gram_is_p_p_transposed(N, c, blocks):
    P = torch.randn((N, c), generator=torch.Generator().manual_seed(N), dtype=torch.float64)
    want = P.numpy() @ P.numpy().T
    np.testing.assert_allclose(lower_gram(P, blocks).numpy(), want, rtol=1e-12, atol=1e-12)
    # accumulating two parts in place gives the Gram matrix of their union, lower triangle only
    acc = add_lower_gram_(add_lower_gram_(torch.zeros((N, N), dtype=torch.float64), P[:, : c // 2]), P[:, c // 2 :])
    np.testing.assert_allclose(np.tril(acc.numpy()), np.tril(want), rtol=1e-12, atol=1e-12)


def test_first_layer_grams_are_the_active_and_whole_gram_of_b():
    gen = torch.Generator().manual_seed(3)
    B = torch.randn((100_000, 12), generator=gen)  # three float64 chunks of CHUNK_BYTES, rows split by u's sign
    u = torch.randn(100_000, generator=gen, dtype=torch.float64)
    layer = FirstLayer(B, u, with_gram=True)
    Bn = B.double().numpy()
    on = u.numpy() > 0
    # sums of 1e5 products: rounding scales with the diagonal (~1e5), not with a small off-diagonal entry
    scale = 1e-12 * 1e5
    np.testing.assert_allclose(layer.gram_active.numpy(), Bn[on].T @ Bn[on], rtol=1e-12, atol=scale)
    assert layer.gram is not None
    np.testing.assert_allclose(layer.gram.numpy(), Bn.T @ Bn, rtol=1e-12, atol=scale)


def _subspace_value(c, Y, u, base):
    """``||relu(u + c_r Y_r) - relu(u)||^2`` per restart, every row evaluated."""
    pre = u[None, :] + np.einsum("rm,rmk->rk", c, Y)
    return ((np.maximum(pre, 0) - base[None, :]) ** 2).sum(-1)


def test_subspace_value_with_fixed_rows_as_a_quadratic_form_is_the_plain_value():
    """Rows that no point of the ball can flip enter as a quadratic form: the value and its gradient
    are those of the plain formula at points inside and on the sphere, and both kinds of rows occur."""
    gen = torch.Generator().manual_seed(0)
    R, m, k, radius = 3, 4, 3000, 2.0
    Y = torch.randn((R, m, k), generator=gen, dtype=torch.float64) * 0.05
    u = torch.randn(k, generator=gen, dtype=torch.float64)
    base = torch.relu(u)
    sub = SubspaceRF(Y, u, base, radius)
    assert 0 < sub.Y.shape[-1] < k / 2  # both kinds of rows
    c = torch.randn((R, m), generator=gen, dtype=torch.float64)
    for scale in (0.3, radius):
        point = c / torch.linalg.vector_norm(c, dim=-1, keepdim=True) * scale
        want = _subspace_value(point.numpy(), Y.numpy(), u.numpy(), base.numpy())
        value, grad = sub.value_and_grad(point)
        np.testing.assert_allclose(value.numpy(), want, rtol=1e-10)
        h = 1e-6
        for j in range(m):
            e = torch.zeros_like(point)
            e[:, j] = h
            fd = (_subspace_value((point + e).numpy(), Y.numpy(), u.numpy(), base.numpy()) - want) / h
            np.testing.assert_allclose(grad[:, j].numpy(), fd, rtol=1e-3, atol=1e-6)


def test_orthonormal_images_span_the_vectors_and_map_them_through_b():
    """An orthonormal basis of span{known, grad} per restart whose images equal basis B^T; a known
    vector (nearly) in the span of the ones before it is left out (zero row, zero image)."""
    gen = torch.Generator().manual_seed(1)
    R, d, k = 2, 9, 50
    B = torch.randn((k, d), generator=gen, dtype=torch.float64)
    known = torch.randn((R, 3, d), generator=gen, dtype=torch.float64)
    known[1, 2] = 2 * known[1, 0] - known[1, 1] + 1e-5 * torch.randn(d, generator=gen, dtype=torch.float64)
    grad = torch.randn((R, d), generator=gen, dtype=torch.float64)
    basis, Y = orthonormal_images(known, image(B, known.reshape(-1, d)).reshape(R, 3, k), grad, B)
    Bn = B.numpy()
    for r in range(R):
        Q = basis[r].numpy()
        kept = np.linalg.norm(Q, axis=1) > 0.5
        assert kept.sum() == (4 if r == 0 else 3)
        assert not kept[2] if r == 1 else kept.all()
        np.testing.assert_allclose(Q[kept] @ Q[kept].T, np.eye(kept.sum()), atol=1e-12)
        np.testing.assert_allclose(Y[r].numpy(), Q @ Bn.T, atol=1e-9 if r == 0 else 1e-6)
        span = np.vstack([known[r].numpy(), grad[r].numpy()])
        residual = span - span @ Q[kept].T @ Q[kept]  # every vector lies in the basis' span
        assert np.abs(residual).max() < 1e-4 * math.sqrt(d) * np.abs(span).max()


def test_rf_certificate_is_infinite_where_phi_is_zero():
    """One feature (k = 1) with a negative pre-activation: phi(X) = 0, so the relative change has no
    finite bound (was a ZeroDivisionError); a positive one gets a finite certificate above the estimate."""
    from wordsens import search

    X = torch.ones((1, 1), dtype=torch.float64)
    for sign in (-1.0, 1.0):
        res = search.estimate("rf", X, seed=0, weights=torch.tensor([[sign]]))
        assert res.upper is not None
        assert math.isinf(res.upper) if sign < 0 else (res.lower <= res.upper < math.inf)
