"""The authors' generalisation algorithm records how far its explicit projector can be trusted:
``pphi_ratio = ||P phi|| / ||phi||`` on every reference row, and
``projection_error`` (``eps cond(Phi) / pphi_ratio``) says where a row is not ground truth."""

from __future__ import annotations

import math

import pytest
import torch

from wordsens import generalisation as G
from wordsens import maps


def _unit_rows(X: torch.Tensor) -> torch.Tensor:
    return X / X.norm(dim=-1, keepdim=True) * math.sqrt(X.shape[-1])


def test_reference_rows_record_the_projection_and_default_rows_do_not():
    Xt, yt, X, y = G.synthetic_task(10, 4, 8, seed=3)
    W = maps.attention_weights(0, 8)
    setup = G.prepare("raf", Xt, yt, X, y, seed=0, weights=W)
    ref = G.gen_search("raf", Xt, yt, X, y, seed=0, training="retrain", loss="surrogate", weights=W)
    assert ref.pphi_ratio == pytest.approx(math.sqrt(setup.pphi2 / setup.phi2), rel=1e-8)
    assert "pphi_ratio" in ref.as_dict() and G.projection_error(ref) < G.RELIABLE_ERROR  # well conditioned
    ours = G.search(setup, "retrain", "surrogate", seed=0)
    assert ours.pphi_ratio is None and "pphi_ratio" not in ours.as_dict()  # the workflow's tables unchanged
    assert G.projection_error(ours) == math.inf  # nothing recorded: never ground truth by default


def test_an_ill_conditioned_set_is_flagged():
    """Near-duplicate training samples (Gram condition 3e13) and a new sample 1e-9 from one of them
    (||P phi|| / ||phi|| ~ 7e-10): the explicit projector's estimated error eps cond(Phi) / ratio is
    1.5, and indeed its ||P phi|| is 15% off the Gram-matrix method's (measured)."""
    gen = torch.Generator().manual_seed(0)
    base = torch.randn(4, 8, generator=gen, dtype=torch.float64)
    noise = torch.randn(10, 4, 8, generator=gen, dtype=torch.float64)
    Xt = _unit_rows(torch.stack([base + (1e-6 if i % 2 else 1.0) * noise[i] for i in range(10)]))
    yt = torch.tensor([1.0, -1.0] * 5, dtype=torch.float64)
    X = _unit_rows(Xt[2] + 1e-9 * torch.randn(4, 8, generator=gen, dtype=torch.float64))
    W = maps.attention_weights(0, 8)
    ref = G.gen_search("raf", Xt, yt, X, 1.0, seed=0, training="retrain", loss="direct", weights=W)
    assert ref.pphi_ratio < 1e-6
    assert G.projection_error(ref) > G.RELIABLE_ERROR
    setup = G.prepare("raf", Xt, yt, X, 1.0, seed=0, weights=W)
    assert abs(ref.pphi_ratio / math.sqrt(setup.pphi2 / setup.phi2) - 1) > 0.01  # the flag is earned
