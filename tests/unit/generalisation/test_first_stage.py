"""Generalisation's first stage (wordsens.generalisation.first_stage): the Gram and QR paths agree, the
Gram path on rows with a large common part and ``P phi`` near the span of the rows, and float32 features
(against float64 features, solved without a float64 copy, in ``prepare``, the fall-back, the rounding
check)."""

from __future__ import annotations

import pytest
import torch

from wordsens import generalisation as G
from wordsens import maps
from wordsens.generalisation import functionals


def test_the_gram_and_qr_first_stages_agree():
    """The Gram path (float32 Gram matrix, float64 refinement) gives the QR path's float64 result on a
    well-conditioned training set, and declines an ill-conditioned one (then the QR path runs)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(40, 6, 16, seed=2)
    W = maps.attention_weights(2, 16, dtype=torch.float64)
    Phi, phi = maps.raf(Xt, W).reshape(40, -1), maps.raf(X, W).reshape(-1)
    fast = first_stage.gram_interpolate(Phi, yt, phi)
    assert fast is not None
    slow = first_stage.qr_interpolate(Phi, yt, phi)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=1e-12 * float(slow[0].abs().max()))
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=1e-12 * float(phi.abs().max()))
    assert fast[2].rank == slow[2].rank == 40 and fast[2].interpolates
    assert fast[2].cond == pytest.approx(slow[2].cond, rel=1e-9)
    bad = Phi.clone()
    bad[1] = bad[0] * (1 + 1e-9)  # nearly dependent rows: cond(K) far above GRAM_MAX_COND
    assert first_stage.gram_interpolate(bad, yt, phi) is None
    assert first_stage.gram_interpolate(Phi[:, :30].contiguous(), yt, phi[:30]) is None  # N >= p


def test_the_gram_path_takes_rows_with_a_large_common_part():
    """Rows with a large common part (IMDb rows through BERT: every review's [CLS] row and position
    embeddings; cond(K) 1e4-7e5 measured, 900 once centred) keep the Gram path: ``gram`` rounds relative
    to the centred rows (here 1e3 x below a plain float32 Gram matrix's error), so the set is solved to
    float64 accuracy up to ``GRAM_MAX_COND`` and declined beyond it (then the QR path runs)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(40, 6, 16, seed=2)
    W = maps.attention_weights(2, 16, dtype=torch.float64)
    Phi, phi = maps.raf(Xt, W).reshape(40, -1), maps.raf(X, W).reshape(-1)
    common = torch.randn(Phi.shape[1], generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    common *= float(Phi.norm(dim=1).mean()) / float(common.norm())
    shifted = Phi + 30 * common
    K = shifted @ shifted.T
    centred = shifted - shifted.mean(0)
    error = float((first_stage.gram(shifted) - K).norm())
    assert error <= 1e-6 * float((centred @ centred.T).norm())  # float32 rounding of the centred rows
    plain = float(((shifted.float() @ shifted.float().T).double() - K).norm())
    assert plain >= 1e3 * error
    fast, slow = first_stage.gram_interpolate(shifted, yt, phi), first_stage.qr_interpolate(shifted, yt, phi)
    assert fast is not None and 1e5 < slow[2].cond <= first_stage.GRAM_MAX_COND  # declined before (1e4)
    torch.testing.assert_close(fast[0], slow[0], rtol=0, atol=1e-11 * float(slow[0].abs().max()))
    torch.testing.assert_close(fast[1], slow[1], rtol=0, atol=1e-11 * float(phi.abs().max()))
    assert fast[2].cond == pytest.approx(slow[2].cond, rel=1e-9) and fast[2].interpolates
    further = Phi + 100 * common  # cond(K) 5e6
    assert first_stage.gram_interpolate(further, yt, phi) is None
    assert first_stage.qr_interpolate(further, yt, phi)[2].cond > first_stage.GRAM_MAX_COND


def test_p_phi_is_accurate_relative_to_itself_near_the_span_of_the_rows():
    """Where ``phi`` lies near the span of the training rows (``||P phi|| = 1e-4 ||phi||``) and the rows
    share a large common part, the Gram path's ``P phi`` agrees with the QR path's relative to
    ``||P phi||`` itself. Its second projection starts from ``Phi P phi`` computed anew (1.1e-11 here);
    taken as ``Phi phi - Phi Phi^T c`` instead, its rounding is relative to ``||phi||`` (7.6e-10 here)."""
    from wordsens.generalisation import first_stage

    gen = torch.Generator().manual_seed(5)
    N, p = 50, 256
    Phi = torch.randn(N, p, generator=gen, dtype=torch.float64) + 30 * torch.randn(
        p, generator=gen, dtype=torch.float64
    )
    Y = torch.where(torch.randn(N, generator=gen, dtype=torch.float64) > 0, 1.0, -1.0).to(torch.float64)
    inside = Phi.T @ torch.randn(N, generator=gen, dtype=torch.float64)
    Q = torch.linalg.qr(Phi.T)[0]
    z = torch.randn(p, generator=gen, dtype=torch.float64)
    z -= Q @ (Q.T @ z)
    phi = inside + 1e-4 * float(inside.norm()) * z / z.norm()
    fast, slow = first_stage.gram_interpolate(Phi, Y, phi), first_stage.qr_interpolate(Phi, Y, phi)
    assert fast is not None
    assert float(slow[1].norm()) == pytest.approx(1e-4 * float(inside.norm()), rel=1e-3)
    assert float((fast[1] - slow[1]).norm()) <= 1e-10 * float(slow[1].norm())


def _raf_features(Xt, W):
    """The float32 features, the float64 rows and the float64 features of RAF on ``Xt`` with weights ``W``:
    the arguments of ``functionals.first_stage_of``."""
    p = Xt.shape[1] * Xt.shape[2]

    def features(dtype, rows=None):
        X = Xt if rows is None else Xt[rows]
        return maps.raf(X.to(dtype), W.to(dtype)).reshape(len(X), p)

    return features(torch.float32), lambda rows: features(torch.float64, rows), lambda: features(torch.float64)


def test_float32_features_agree_with_float64_features():
    """The float32 path on a small training set: its first stage equals the float64 one within the
    rounding its check estimates, and the check passes."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=6)
    W = maps.attention_weights(6, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    theta, pphi, fit, _, check = functionals.first_stage_of(f32, rows64, f64, yt, phi)
    ref_theta, ref_pphi, ref_fit = first_stage.interpolate(f64(), yt, phi)
    assert check is not None and check.passed and check.rows == first_stage.FEATURES32_ROWS
    assert fit.features == "float32" and ref_fit.features == "float64" and fit.interpolates
    assert abs(float(phi @ theta) - float(phi @ ref_theta)) <= 10 * max(check.t0, 1e-9) <= 1e-5
    assert fit.cond == pytest.approx(ref_fit.cond, rel=1e-5)
    assert float(pphi @ pphi) == pytest.approx(float(ref_pphi @ ref_pphi), rel=1e-5)
    torch.testing.assert_close(theta, ref_theta, rtol=0, atol=1e-5 * float(ref_theta.abs().max()))
    # no float32 features given (they do not pay): float64 features, no check
    *_, small_fit, _, none = functionals.first_stage_of(None, rows64, f64, yt, phi)
    assert none is None and small_fit.features == "float64"


@pytest.mark.parametrize("entries", [3 * 192 + 5, 10**9])
def test_float32_features_are_solved_without_a_float64_copy(monkeypatch, entries):
    """``interpolate32`` takes its float64 products a few rows of the float32 features at a time (here
    3 rows and a remainder, or all at once): the solution for those features equals the float64 solve
    of their exact float64 copy (``gram_interpolate``) to float64 accuracy (1e-9, at cond(K) ~ 10),
    the features are never cast whole (no float64 array of their size is made), and ``Fit`` agrees."""
    from wordsens.generalisation import first_stage
    from wordsens.search import engine

    monkeypatch.setattr(engine, "CHUNK_BYTES", 8 * entries)  # float64 bytes of a block of rows
    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=6)
    W = maps.attention_weights(6, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    Phi32, rows64, _ = _raf_features(Xt, W)
    ref = first_stage.gram_interpolate(Phi32.double(), yt, phi)
    cast = []
    original = torch.Tensor.to

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        if self is Phi32 or (out.dtype == torch.float64 and out.numel() == Phi32.numel()):
            cast.append(out.shape)
        return out

    monkeypatch.setattr(torch.Tensor, "to", spy)
    out = first_stage.interpolate32(Phi32, yt, phi, rows64)
    monkeypatch.setattr(torch.Tensor, "to", original)
    assert out is not None and ref is not None
    theta, pphi, fit, check = out
    assert (cast == []) == (entries < Phi32.numel()), cast
    for a, b in ((theta, ref[0]), (pphi, ref[1])):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-9 * float(b.abs().max()))
    assert fit.cond == pytest.approx(ref[2].cond, rel=1e-9) and fit.rank == ref[2].rank == 60
    assert fit.features == "float32" and check.passed


@pytest.mark.parametrize("map_name", ["raf", "relu_raf", "rf"])
def test_prepare_with_float32_features_agrees_with_float64(monkeypatch, map_name):
    """The setups of RAF, ReLU-RAF and RF (span sampler) take the float32 path where it pays (forced
    here): the same simulation as with float64 features, within 1e-5 (the regression fixture's tolerance
    of first-stage floats)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, y = G.synthetic_task(40, 6, 16, seed=9)
    ref = G.prepare(map_name, Xt, yt, X, y, seed=9)
    monkeypatch.setattr(first_stage, "FEATURES32_MIN_FLOPS", 0.0)
    new = G.prepare(map_name, Xt, yt, X, y, seed=9)
    assert ref.fit.features == "float64" and new.fit.features == "float32"
    assert new.t0 == pytest.approx(ref.t0, rel=1e-5, abs=1e-6)
    assert new.fit.cond == pytest.approx(ref.fit.cond, rel=1e-5)
    assert new.pphi2 == pytest.approx(ref.pphi2, rel=1e-5) and new.phi2 == ref.phi2
    D = torch.randn((4, 16), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(new.functionals.exact(D), ref.functionals.exact(D), rtol=1e-5, atol=1e-6)
    res_new, res_ref = (G.search(s, "retrain", "direct", seed=9) for s in (new, ref))
    assert res_new.err == pytest.approx(res_ref.err, rel=1e-3, abs=1e-3)


def test_float32_features_fall_back_where_the_check_fails(monkeypatch):
    """The verdict both ways: the check fails (then float64 features are computed and solved) where the
    float64 rows show a rounding too large, and the Gram path declines an ill-conditioned set."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(60, 8, 24, seed=7)
    W = maps.attention_weights(7, 24, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    calls = []

    def rough(rows):  # float64 rows 1e-4 away from the float32 ones: a rounding far too large
        return rows64(rows) * (1 + 1e-4)

    def counted():
        calls.append("float64")
        return f64()

    theta, _, fit, _, check = functionals.first_stage_of(f32, rough, counted, yt, phi)
    assert check is not None and not check.passed and check.t0 > first_stage.FEATURES32_TOL
    assert fit.features == "float64" and calls == ["float64"]  # the float64 features were computed
    ref_theta, _, _ = first_stage.interpolate(f64(), yt, phi)
    assert torch.equal(theta, ref_theta)

    # an ill-conditioned training set (two nearly equal samples): the Gram path declines it, no check runs,
    # and the float64 features go straight to the QR (no second Gram matrix)
    bad = Xt.clone()
    bad[1] = bad[0]
    bad[1, 0, 0] += 1e-6
    b32, brows, b64 = _raf_features(bad, W)
    ref_theta, _, ref_fit = first_stage.interpolate(b64(), yt, phi)

    def no_second_gram(*args):
        raise AssertionError("the float64 fallback of a declined set went through the Gram path again")

    monkeypatch.setattr(first_stage, "gram_interpolate", no_second_gram)
    theta, _, fit, _, check = functionals.first_stage_of(b32, brows, b64, yt, phi)
    assert check is None and fit.features == "float64" and fit.cond > first_stage.GRAM_MAX_COND
    assert torch.equal(theta, ref_theta) and fit == ref_fit
    assert first_stage.interpolate32(_raf_features(bad, W)[0], yt, phi, brows) is None


def test_rounding_check_estimates_the_change_it_guards():
    """The check's first-order estimate of t0's change is of the size of the change itself (measured
    0.02-1.4x of it on RAF and ReLU-RAF sets from N = 6 to 1300: docs/benchmarks.md)."""
    from wordsens.generalisation import first_stage

    Xt, yt, X, _ = G.synthetic_task(80, 8, 20, seed=8)
    W = maps.attention_weights(8, 20, dtype=torch.float64)
    phi = maps.raf(X, W).reshape(-1)
    f32, rows64, f64 = _raf_features(Xt, W)
    out = first_stage.interpolate32(f32, yt, phi, rows64)
    assert out is not None
    theta, _, _, check = out
    ref_theta, _, _ = first_stage.interpolate(f64(), yt, phi)
    change = abs(float(phi @ (theta - ref_theta)))
    assert change <= 10 * check.t0 and check.t0 <= 1e3 * max(change, 1e-12)
