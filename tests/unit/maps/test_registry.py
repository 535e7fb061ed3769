"""The map registry: the paper's maps through it, and a toy map registered by a plugin end to end
through the library (the CLI and the workflow tests use the same plugin)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from wordsens import maps, search
from wordsens.data.samples import synthetic_sample
from wordsens.maps import registry

PLUGIN = Path(__file__).resolve().parents[2] / "plugins" / "toy_map.py"


@contextlib.contextmanager
def _toy_registered() -> Iterator[maps.MapSpec]:
    """The toy plugin's map, registered inside the block only: the registry is restored on exit, so no
    later test of this process (the workflow's job counts with ``variants.maps: all``) sees it."""
    with registry.isolated(), pytest.MonkeyPatch.context() as mp:
        mp.setenv(registry.PLUGINS_ENV, str(PLUGIN))
        registry.load_plugins()
        yield registry.get("toy")


@pytest.fixture()
def toy():
    with _toy_registered() as spec:
        yield spec


def test_a_plugin_map_does_not_outlive_its_test():
    before = registry.names()
    with _toy_registered():
        assert "toy" in registry.names()
    assert registry.names() == before and "toy" not in before


def test_the_paper_maps_come_first():
    assert registry.names()[:4] == ("rf", "drf", "raf", "relu_raf")
    for name in registry.PAPER_MAPS:
        spec = registry.get(name)
        assert spec.label and spec.formula and spec.weight_law
        assert callable(registry.resolve(spec.forward)) and callable(registry.resolve(spec.sample))
    with pytest.raises(ValueError, match=r"unknown map 'nope'.*rf, drf, raf, relu_raf"):
        registry.get("nope")


def test_a_plugin_map_is_a_map_like_the_others(toy):
    assert "toy" in registry.names() and "toy" in maps.names()
    X = synthetic_sample(5, 4, seed=0)
    W = maps.sample_weights("toy", 3, 5, 4, dtype=torch.float64)
    expected = np.tanh(X.numpy() @ W["W"][0].numpy()) / 2.0  # independent formula, sqrt(d) = 2, depth 1
    np.testing.assert_allclose(maps.toy(X, W).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(maps.apply("toy", X, W).numpy(), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="dict with the tensors"):
        maps.toy(X, {"V": W["W"]})
    with pytest.raises(ValueError, match="has shape"):
        maps.toy(X, {"W": W["W"][:, :3]})
    with pytest.raises(ValueError, match="no option heads"):
        search.estimate("toy", X, seed=0, options={"heads": 2})
    # options reach the sampler
    W2 = maps.sample_weights("toy", 3, 5, 4, dtype=torch.float64, scale=2.0)
    torch.testing.assert_close(W2["W"], 2 * W["W"])


def test_a_plugin_map_gets_the_search_and_the_reference(toy):
    X = synthetic_sample(6, 4, seed=1)
    ours = search.estimate("toy", X, seed=2)
    ref = search.estimate("toy", X, seed=2, method="reference")  # the same weights: both drawn from seed 2
    assert ours.lower >= ref.lower * (1 - 1e-9) and ours.delta_norm <= 2 * (1 + 1e-12)
    # the reported change is the map's own: recompute it from the Delta found
    W = maps.sample_weights("toy", 2, 6, 4, dtype=torch.float64)
    Xp = X.clone()
    Xp[0] += ours.delta.double()
    change = torch.linalg.vector_norm(maps.toy(Xp, W) - maps.toy(X, W)) / torch.linalg.vector_norm(maps.toy(X, W))
    assert ours.lower == pytest.approx(float(change), rel=1e-10)
    full = search.estimate("toy", X, seed=2, position="all")
    assert len(full.profile) == 6 and full.lower == pytest.approx(max(full.profile))
    assert full.profile[0] == pytest.approx(ours.lower, rel=1e-9)
    assert registry.get("toy").ws_memory(6, 4).bytes > 0 and registry.get("toy").ws_seconds(6, 4) > 0


def test_plugin_errors_name_the_setting(monkeypatch):
    with pytest.raises(ValueError, match="cannot import the map plugin"):
        registry.load_plugins(["no_such_module_for_wordsens"])
    with pytest.raises(ValueError, match="lower-case identifiers"):
        registry.register(
            maps.MapSpec("Bad-Name", "", "", "", forward=str, sample=str, settings=registry.get("raf").settings)
        )
    with pytest.raises(ValueError, match="already registered"):
        registry.register(
            maps.MapSpec("raf", "x", "", "", forward=str, sample=str, settings=registry.get("raf").settings)
        )
    assert math.isfinite(registry.get("raf").settings.tol)
