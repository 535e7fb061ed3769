"""Generalisation's searches (wordsens.generalisation): the written-out gradient against autograd, the
residuals are the loss, the least-squares search reaches a linear problem's optimum, penalised searches
converge where the ascent creeps, searches run together equal searches run alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wordsens import generalisation as G


@pytest.mark.parametrize("map_name", ["raf", "relu_raf"])
def test_written_out_search_gradient_equals_autograd(map_name):
    Xt, yt, X, y = G.synthetic_task(20, 7, 12, seed=4)
    setup = G.prepare(map_name, Xt, yt, X, y, seed=4)
    F = setup.functionals
    D = 2.0 * torch.randn((6, 12), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for training, loss, penalty in (
        ("fine_tune", "surrogate", 0.0),
        ("retrain", "direct", 0.0),
        ("retrain", "penalised", 0.3),
    ):

        def outer(f, training=training, loss=loss, penalty=penalty):
            return -setup.loss(f, training, loss, penalty), -setup.loss_grad(f, training, loss, penalty)

        value, grad = F.value_and_grad(D, outer)
        Dg = D.clone().requires_grad_(True)
        ref = -setup.loss(F(Dg), training, loss, penalty)
        (ref_grad,) = torch.autograd.grad(ref.sum(), Dg)
        torch.testing.assert_close(value, ref.detach(), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, ref_grad, rtol=1e-9, atol=1e-9)


def test_residuals_are_the_loss():
    """``Setup.residuals`` (the Gauss-Newton search's form) against ``Setup.loss`` (the ascent's):
    ``||L f + b||^2`` is the loss for every training and loss, on random functional values."""
    Xt, yt, X, y = G.synthetic_task(12, 6, 8, seed=5)
    setup = G.prepare("raf", Xt, yt, X, y, seed=5)
    f = 3 * torch.randn((50, 3), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for training in G.TRAININGS:
        for loss, penalty in (("surrogate", 0.0), ("direct", 0.0), ("penalised", 0.0), ("penalised", 0.37)):
            L, b = setup.residuals(training, loss, penalty)
            r = f @ L.T + b
            torch.testing.assert_close((r * r).sum(-1), setup.loss(f, training, loss, penalty), rtol=1e-12, atol=0)


def _ball_least_squares(M, c, radius):
    """min ||M x + c|| over ||x|| <= radius (NumPy, from the SVD: the secular equation solved by
    bisection), the reference for ``least_squares_groups`` on linear functionals."""
    U, S, Vt = np.linalg.svd(M, full_matrices=False)
    q = U.T @ c

    def x_of(mu):
        return -Vt.T @ (S * q / (S * S + mu))

    if np.linalg.norm(x_of(0.0)) <= radius:
        return x_of(0.0)
    lo, hi = 0.0, np.linalg.norm(S * q) / radius
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.linalg.norm(x_of(mid)) > radius else (lo, mid)
    return x_of(hi)


def test_least_squares_search_reaches_the_optimum_of_a_linear_problem():
    """``least_squares_groups`` on functionals linear in Delta (``f = F Delta``): the loss
    ``||L F Delta + b||^2`` on the ball is convex, and every group reaches the minimum that the SVD
    gives (``_ball_least_squares``), on the sphere (the unconstrained minimum lies outside) and inside."""
    from wordsens.generalisation.batched import Stopping, least_squares_groups

    gen = torch.Generator().manual_seed(1)
    d, radius = 20, math.sqrt(20)
    F = torch.randn((3, d), generator=gen, dtype=torch.float64)

    def vjp(D, G):
        return D @ F.T, G @ F

    L = [torch.tensor([[1.0, 0.5, 0.0], [0.3, 0.0, 0.0]], dtype=torch.float64)] * 2
    b = [torch.tensor([40.0, 0.0], dtype=torch.float64), torch.tensor([0.5, 0.0], dtype=torch.float64)]
    starts = [torch.randn((4, d), generator=gen, dtype=torch.float64) for _ in L]
    found = least_squares_groups(vjp, L, b, starts, radius, Stopping(max_steps=200, tol=1e-12, patience=10, keep=2))
    for (D, steps), Lg, bg in zip(found, L, b, strict=True):
        M, c = (Lg @ F).numpy(), bg.numpy()
        best = _ball_least_squares(M, c, radius)
        optimum = float(np.sum((M @ best + c) ** 2))
        losses = ((D @ F.T @ Lg.T + bg) ** 2).sum(-1)
        assert float(losses.min()) == pytest.approx(optimum, rel=1e-9, abs=1e-12), steps
        assert float(torch.linalg.vector_norm(D, dim=-1).max()) <= radius * (1 + 1e-12)
    assert np.linalg.norm(_ball_least_squares((L[0] @ F).numpy(), b[0].numpy(), radius)) == pytest.approx(radius)
    assert np.linalg.norm(_ball_least_squares((L[1] @ F).numpy(), b[1].numpy(), radius)) < radius


def test_penalised_searches_converge_where_the_ascent_creeps():
    """Figure 5's penalised loss at d = 768 (RAF, n = 40, N = 400): the Levenberg-Marquardt search
    stops at a point where the loss's gradient is radial (a KKT point of the ball: its tangential part
    below 1% of it; the normalised-gradient ascent, measured, stops at its 500-step cap with
    losses 5-25% above its own 1,500-step ones), in fewer than 500 iterations."""
    Xt, yt, X, y = G.synthetic_task(400, 40, 768, seed=500)
    setup = G.prepare("raf", Xt, yt, X, y, seed=500)
    searches = [("fine_tune", "penalised", 1.0), ("retrain", "penalised", 0.01)]
    for res in G.search_many(setup, searches, seed=0):
        assert res.steps < 500 and res.delta_norm == pytest.approx(math.sqrt(768), rel=1e-6)
        D = res.delta.to(setup.functionals.dtype)[None].requires_grad_(True)
        loss = setup.loss(setup.functionals(D), res.training, "penalised", res.penalty)
        (grad,) = torch.autograd.grad(loss.sum(), D)
        g, u = grad[0].double(), res.delta.double() / res.delta.norm()
        tangential = g - (g @ u) * u
        assert float(g @ u) < 0  # the loss falls outwards: the minimum is on the sphere
        assert float(tangential.norm()) <= 0.01 * float(g.norm()), (res.training, res.penalty)


@pytest.mark.parametrize("map_name", ["raf", "rf"])
def test_searches_run_together_equal_searches_run_alone(map_name):
    Xt, yt, X, y = G.synthetic_task(12, 6, 8, seed=5)
    setup = G.prepare(map_name, Xt, yt, X, y, seed=5)
    searches = [("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0), ("retrain", "penalised", 0.1)]
    together = G.search_many(setup, searches, seed=5)
    for (training, loss, penalty), res in zip(searches, together, strict=True):
        alone = G.search(setup, training, loss, penalty=penalty, seed=5)
        assert (res.training, res.loss, res.penalty) == (training, loss, penalty)
        assert res.err == pytest.approx(alone.err, rel=1e-6, abs=1e-9)
    assert G.search_many(setup, [], seed=5) == []
