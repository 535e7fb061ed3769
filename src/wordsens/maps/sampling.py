"""The seeded weight samplers of the paper's maps (RF, DRF, RAF and ReLU-RAF): the registry's
``rf_weights``, ``drf_weights`` and ``attention_sample``.

Weights are drawn in float32, then cast: the same seed gives the same weights in every dtype. RF and DRF
matrices are column blocks of width ``d``, each from its own derived seed (docs/methods.md), drawn by a
generator of the device they are bound for (``draw_on="device"``) or on the CPU and copied over
(``draw_on="cpu"``: a CPU run's numbers). Small draws (attention matrices) always use the CPU.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..seeds import derive_seed, generator
from .spec import check_positive

Tensor = torch.Tensor


_DRAW_DTYPE = torch.float32
DRAW_ON = ("device", "cpu")


def block_generator(seed: int, device: str | torch.device, draw_on: str = "device") -> torch.Generator:
    """The generator that draws a weight block of ``seed`` bound for ``device``: one of that device
    when ``draw_on="device"`` and the device is not the CPU, else a CPU generator."""
    if draw_on not in DRAW_ON:
        raise ValueError(f"draw_on must be one of {', '.join(DRAW_ON)}, got {draw_on!r}")
    dev = torch.device(device)
    if dev.type == "cpu" or draw_on == "cpu":
        return generator(seed)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed % (2**63))
    return gen


def drawn_on(device: str | torch.device, draw_on: str = "device") -> str:
    """Where ``block_generator`` draws for ``device``: ``"cpu"`` or the device type (``"cuda"``)."""
    dev = torch.device(device)
    return "cpu" if dev.type == "cpu" or draw_on == "cpu" else dev.type


def base_seed(seed: int | torch.Generator) -> int:
    """The integer seed of ``seed`` (one draw from a generator), from which every tensor's seed is derived."""
    if isinstance(seed, torch.Generator):
        return int(torch.randint(0, 2**62, (1,), generator=seed))
    generator(seed)  # validates
    return int(seed)


def draw_gaussian(
    shape: tuple[int, ...], std: float, seed: int, dtype: torch.dtype, device: str | torch.device, draw_on: str = "cpu"
) -> Tensor:
    """I.i.d. ``N(0, std^2)`` of ``shape`` from its own generator seeded with ``seed`` (on the device
    or the CPU per ``draw_on``; drawn in float32, then cast to ``dtype``)."""
    gen = block_generator(seed, device, draw_on)
    sample = torch.randn(shape, generator=gen, dtype=_DRAW_DTYPE, device=gen.device)
    sample.mul_(std)
    return sample.to(device=device, dtype=dtype)


def rf_block(
    seed: int,
    position: int,
    n: int,
    d: int,
    k: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> Tensor:
    """Column block ``V[:, position*d:(position+1)*d]`` (k, d) of the RF matrix of ``seed``."""
    check_positive(n=n, d=d)
    k = n * d if k is None else k
    check_positive(k=k)
    if not 0 <= position < n:
        raise ValueError(f"position {position} is outside the n = {n} tokens")
    return draw_gaussian((k, d), math.sqrt(1.0 / (n * d)), derive_seed(seed, "rf", position), dtype, device, draw_on)


def rf_weights(
    seed: int | torch.Generator,
    n: int,
    d: int,
    k: int | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> Tensor:
    """The dense RF matrix ``V`` (k, n*d), i.i.d. N(0, 1/D); ``k`` defaults to ``D = n*d``."""
    check_positive(n=n, d=d)
    base = base_seed(seed)
    k = n * d if k is None else k
    check_positive(k=k)
    V = torch.empty((k, n * d), dtype=dtype, device=device)
    for j in range(n):
        V[:, j * d : (j + 1) * d] = rf_block(base, j, n, d, k, dtype=dtype, device=device, draw_on=draw_on)
    return V


def drf_block(
    seed: int,
    layer: int,
    block: int,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> Tensor:
    """Column block ``block`` (D, d) of layer ``layer`` (1-based) of the DRF of ``seed``: N(0, 2/D)."""
    check_positive(n=n, d=d, layer=layer)
    if not 0 <= block < n:
        raise ValueError(f"block {block} is outside the n = {n} column blocks")
    D = n * d
    return draw_gaussian((D, d), math.sqrt(2.0 / D), derive_seed(seed, "drf", layer, block), dtype, device, draw_on)


def drf_layer(
    seed: int,
    layer: int,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> Tensor:
    """Layer ``layer`` (D, D) of the DRF of ``seed``, filled block by block on ``device`` (one (D, d)
    block exists beside the matrix at a time)."""
    D = n * d
    V = torch.empty((D, D), dtype=dtype, device=device)
    for j in range(n):
        V[:, j * d : (j + 1) * d] = drf_block(seed, layer, j, n, d, dtype=dtype, device=device, draw_on=draw_on)
    return V


def drf_weights(
    seed: int | torch.Generator,
    n: int,
    d: int,
    L: int = 2,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> list[Tensor]:
    """The ``L`` DRF matrices (D, D), i.i.d. N(0, 2/D) (He initialisation), first layer included."""
    check_positive(n=n, d=d, L=L)
    base = base_seed(seed)
    return [drf_layer(base, layer, n, d, dtype=dtype, device=device, draw_on=draw_on) for layer in range(1, L + 1)]


def attention_weights(
    seed: int | torch.Generator, d: int, *, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> Tensor:
    """The attention matrix ``W`` (d, d), i.i.d. N(0, 1/d), shared by RAF and ReLU-RAF."""
    check_positive(d=d)
    return draw_gaussian((d, d), math.sqrt(1.0 / d), derive_seed(base_seed(seed), "attention"), dtype, device)


def attention_sample(seed: int | torch.Generator, n: int, d: int, *, draw_on: str = "device", **kwargs: Any) -> Tensor:
    """The registry's RAF / ReLU-RAF sampler: ``attention_weights`` (``kwargs``: its ``dtype`` and ``device``;
    small, so drawn on the CPU whatever ``draw_on``)."""
    return attention_weights(seed, d, **kwargs)
