"""A toy map registered as a plugin (tests/unit/maps/test_registry.py, the workflow test): phi = tanh(X W) / sqrt(d),
with ``depth`` tanh layers (phi = tanh(... tanh(X W_1) ... W_depth) / sqrt(d)), weights {"W": (depth, d, d)}
i.i.d. N(0, scale^2/d), no fast path (the full-map search).
Its depth is an option a grid may sweep (``sweep``), as DRF's L: the workflow test sweeps it."""

from __future__ import annotations

import math

import torch

from wordsens import maps
from wordsens.seeds import derive_seed, generator


def forward(X: torch.Tensor, weights: dict) -> torch.Tensor:
    h = X
    for W in weights["W"]:  # (depth, d, d): one tanh layer each
        h = torch.tanh(h @ W)
    return h / math.sqrt(X.shape[-1])


def sample(seed, n, d, *, dtype=torch.float32, device="cpu", draw_on="device", scale=1.0, depth=1):
    G = torch.randn((depth, d, d), generator=generator(derive_seed(int(seed), "toy")), dtype=torch.float32)
    return {"W": (G * (scale / math.sqrt(d))).to(device=device, dtype=dtype)}


maps.register(
    maps.MapSpec(
        "toy",
        "toy map (tanh)",
        "tanh(X W) / sqrt(d)",
        "W (d, d), i.i.d. N(0, scale^2/d)",
        forward=forward,
        sample=sample,
        shapes=lambda n, d, scale=1.0, depth=1: {"W": (depth, d, d)},
        settings=maps.SearchSettings(restarts=8, keep=4, patience=20, tol=1e-6, momentum=0.0, polish=False),
        reference=(10.0, 200),
        options={"scale": 1.0, "depth": 1},
        sweep=("depth",),
    )
)
