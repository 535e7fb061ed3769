"""The four random feature maps of Bombari & Mondelli (2024) and their weight samplers.

Shapes: a sample ``X`` is ``(n, d)`` (``n`` token embeddings of dimension ``d``), optionally with
leading batch dimensions ``(..., n, d)``; ``D = n * d``; ``flat(X)`` is the row-major flattening.

=========  ================================================  ==================================
map        formula                                           weights
=========  ================================================  ==================================
RF         ``relu(V flat(X))``, in R^k                         ``V`` (k, D), i.i.d. N(0, 1/D)
DRF        ``h_l = relu(V_l h_{l-1})``, ``h_0 = flat(X)``      ``V_l`` (D, D), i.i.d. N(0, 2/D)
RAF        ``softmax(X W X^T / sqrt(d)) X``, (n, d)            ``W`` (d, d), i.i.d. N(0, 1/d)
ReLU-RAF   ``A X``, ``A`` = row-normalised ``relu(X W X^T / sqrt(d))``  same as RAF
=========  ================================================  ==================================

Weight samplers draw float32 numbers from a seeded ``torch.Generator`` and cast them to the requested
dtype: on the CPU for CPU runs and small matrices, on the GPU itself for RF and DRF blocks bound for
a GPU (``draw_on="device"``, the default; ``draw_on="cpu"`` copies CPU draws over instead, for the
same numbers as a CPU run). RF and DRF matrices are
drawn as column blocks of width ``d`` (block ``j`` multiplies token ``j`` in the first layer),
each from its own derived seed: a single block can be drawn without the rest, and a matrix built
block by block equals the one built at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from . import registry
from .seeds import derive_seed, generator

Tensor = torch.Tensor

__all__ = [
    "DRAW_ON",
    "MAP_NAMES",
    "apply",
    "attention_sample",
    "attention_weights",
    "base_seed",
    "block_generator",
    "check_attention",
    "check_drf",
    "check_matrix",
    "check_rf",
    "check_sample",
    "check_weights",
    "draw_gaussian",
    "drawn_on",
    "drf",
    "drf_block",
    "drf_forward",
    "drf_layer",
    "drf_sample",
    "drf_weights",
    "feature_map",
    "map_names",
    "raf",
    "raf_forward",
    "relu_raf",
    "relu_raf_forward",
    "rf",
    "rf_block",
    "rf_forward",
    "rf_sample",
    "rf_weights",
    "sample_weights",
]

MAP_NAMES = registry.PAPER_MAPS  # the paper's four; map_names() lists every registered map


# --------------------------------------------------------------------------- validation


def check_sample(X: Tensor, name: str = "X") -> tuple[int, int]:
    """Validate a sample of shape ``(..., n, d)``; return ``(n, d)``.

    Raises ``ValueError`` naming the problem for non-tensors, wrong rank, empty dimensions,
    integer dtypes and NaN/Inf entries.
    """
    if not isinstance(X, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor of shape (n, d), got {type(X).__name__}")
    if X.ndim < 2:
        raise ValueError(f"{name} must have shape (n, d) (n tokens, d coordinates), got {tuple(X.shape)}")
    n, d = int(X.shape[-2]), int(X.shape[-1])
    if n <= 0 or d <= 0:
        raise ValueError(f"{name} needs n >= 1 tokens and d >= 1 coordinates, got shape {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {X.dtype}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} contains NaN or Inf entries; clean or re-normalise the input")
    return n, d


def _check_positive(**values: int) -> None:
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{key} must be a positive integer, got {value!r}")


def check_matrix(M: Tensor, shape: tuple[int, ...], name: str, hint: str) -> None:
    """Raise ``ValueError`` unless ``M`` is a finite 2-D tensor of ``shape`` (``hint`` says what it is)."""
    if not isinstance(M, Tensor) or M.ndim != 2:
        raise ValueError(f"{name} must be a 2-D tensor of shape {shape} ({hint})")
    if tuple(M.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(M.shape)}, expected {shape} ({hint})")
    if not bool(torch.isfinite(M).all()):
        raise ValueError(f"{name} contains NaN or Inf entries")


# --------------------------------------------------------------------------- the paper's maps


def rf(X: Tensor, V: Tensor) -> Tensor:
    """Random features ``relu(V flat(X))``: ``X`` (..., n, d), ``V`` (k, n*d) -> (..., k)."""
    return apply("rf", X, V, check=True)


def rf_forward(X: Tensor, V: Tensor) -> Tensor:
    """``rf`` without input checks."""
    return torch.relu(X.reshape(*X.shape[:-2], -1) @ V.T)


def drf(X: Tensor, Vs: Sequence[Tensor]) -> Tensor:
    """Deep random features ``h_L``: ``h_0 = flat(X)``, ``h_l = relu(V_l h_{l-1})``; ``V_l`` (D, D)."""
    return apply("drf", X, Vs, check=True)


def drf_forward(X: Tensor, Vs: Sequence[Tensor]) -> Tensor:
    """``drf`` without input checks."""
    h = X.reshape(*X.shape[:-2], -1)
    for V in Vs:
        h = torch.relu(h @ V.T)
    return h


def _scores(X: Tensor, W: Tensor) -> Tensor:
    d = X.shape[-1]
    return (X @ W) @ X.transpose(-1, -2) / math.sqrt(d)


def raf(X: Tensor, W: Tensor) -> Tensor:
    """Random attention features ``softmax(X W X^T / sqrt(d)) X``: (..., n, d) -> (..., n, d)."""
    return apply("raf", X, W, check=True)


def raf_forward(X: Tensor, W: Tensor) -> Tensor:
    """``raf`` without input checks."""
    return torch.softmax(_scores(X, W), dim=-1) @ X  # torch's softmax subtracts the row maximum


def relu_raf(X: Tensor, W: Tensor) -> Tensor:
    """ReLU attention: ``A = relu(X W X^T / sqrt(d))`` with each row divided by its sum, ``A X``.

    A row whose ReLU scores are all zero stays zero (its token attends to nothing).
    """
    return apply("relu_raf", X, W, check=True)


def relu_raf_forward(X: Tensor, W: Tensor) -> Tensor:
    """``relu_raf`` without input checks."""
    A = torch.relu(_scores(X, W))
    total = A.sum(dim=-1, keepdim=True)
    safe = torch.where(total > 0, total, torch.ones_like(total))
    return (A / safe) @ X


def check_rf(V: Any, n: int, d: int) -> None:
    """RF weights: one (k, n*d) matrix."""
    D = n * d
    if not isinstance(V, Tensor) or V.ndim != 2 or V.shape[1] != D:
        shape = tuple(V.shape) if isinstance(V, Tensor) else type(V).__name__
        raise ValueError(
            f"RF weights V must have shape (k, n*d) = (k, {D}) for X of shape (n, d) = ({n}, {d}), got {shape}"
        )
    check_matrix(V, tuple(V.shape), "V", "RF weights")


def check_drf(Vs: Any, n: int, d: int) -> None:
    """DRF weights: a non-empty list of (D, D) matrices, one per layer."""
    if isinstance(Vs, Tensor) or not isinstance(Vs, Sequence) or len(Vs) == 0:
        raise ValueError("Vs must be a non-empty sequence of (D, D) matrices, one per layer")
    D = n * d
    for layer, V in enumerate(Vs, start=1):
        check_matrix(V, (D, D), f"Vs[{layer - 1}]", f"layer {layer} of a DRF on D = n*d = {D}")


def check_attention(W: Any, n: int, d: int) -> None:
    """RAF and ReLU-RAF weights: one (d, d) matrix."""
    check_matrix(W, (d, d), "W", f"the attention matrix for d = {d}")


# --------------------------------------------------------------------------- every registered map


def map_names() -> tuple[str, ...]:
    """Every registered map (``wordsens.registry``), the paper's four first."""
    return registry.names()


def check_weights(name: str, weights: Any, n: int, d: int, options: Mapping[str, Any] | None = None) -> None:
    """Raise ``ValueError`` unless ``weights`` have the format and shapes map ``name`` takes at (n, d)."""
    spec = registry.get(name)
    if spec.check is not None:
        registry.resolve(spec.check)(weights, n, d)
        return
    if spec.shapes is None:
        return
    shapes = spec.shapes(n, d, **spec.option_values(options))
    if not isinstance(weights, Mapping) or set(weights) != set(shapes):
        got = sorted(weights) if isinstance(weights, Mapping) else type(weights).__name__
        raise ValueError(f"{name} weights must be a dict with the tensors {sorted(shapes)}, got {got}")
    for key, shape in shapes.items():
        W = weights[key]
        if not isinstance(W, Tensor) or tuple(W.shape) != tuple(shape):
            got_shape = tuple(W.shape) if isinstance(W, Tensor) else type(W).__name__
            raise ValueError(f"{name} weight {key!r} has shape {got_shape}, expected {tuple(shape)} (n = {n}, d = {d})")
        if not bool(torch.isfinite(W).all()):
            raise ValueError(f"{name} weight {key!r} contains NaN or Inf entries")


def feature_map(name: str) -> Callable[..., Tensor]:
    """The validated map called ``name``: ``phi(X, weights)`` checks its inputs first."""
    registry.get(name)
    return lambda X, weights: apply(name, X, weights, check=True)


def apply(name: str, X: Tensor, weights: Any, *, check: bool = False) -> Tensor:
    """``phi(X)`` of map ``name`` with ``weights`` in its format, for ``X`` (..., n, d).

    ``check=True`` validates the sample and the weights first (what ``maps.<name>`` does); the
    default skips the checks, for inner loops whose inputs were validated once.
    """
    spec = registry.get(name)
    if check:
        n, d = check_sample(X)
        check_weights(name, weights, n, d)
    return registry.resolve(spec.forward)(X, weights)


def __getattr__(name: str) -> Callable[..., Tensor]:
    """``maps.<name>(X, weights)`` for every registered map, plugins included."""
    if not name.startswith("_"):
        try:
            return feature_map(name)
        except ValueError:
            pass
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- samplers

# Weights are drawn in float32, then cast: the same seed gives the same weights in every dtype.
# Large RF/DRF blocks bound for a GPU are drawn there by a generator of that device (draw_on
# "device", the default): the same numbers on every GPU of a kind, equal in law to the CPU's, and no
# host-to-device copy. draw_on "cpu" draws them on the CPU and copies them over: the same numbers as
# a CPU run, at the price of the copy. Small draws (attention matrices) always use the CPU.
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
    _check_positive(n=n, d=d)
    k = n * d if k is None else k
    _check_positive(k=k)
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
    _check_positive(n=n, d=d)
    base = base_seed(seed)
    k = n * d if k is None else k
    _check_positive(k=k)
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
    _check_positive(n=n, d=d, layer=layer)
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
    """Layer ``layer`` (D, D) of the DRF of ``seed``, filled block by block on ``device``.

    Only one (D, d) block exists beside the matrix at a time: the matrix exists once, on its device.
    """
    D = n * d
    V = torch.empty((D, D), dtype=dtype, device=device)
    for j in range(n):
        V[:, j * d : (j + 1) * d] = drf_block(seed, layer, j, n, d, dtype=dtype, device=device, draw_on=draw_on)
    return V


def drf_weights(
    seed: int | torch.Generator,
    n: int,
    d: int,
    L: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> list[Tensor]:
    """The ``L`` DRF matrices (D, D), i.i.d. N(0, 2/D) (He initialisation), first layer included."""
    _check_positive(n=n, d=d, L=L)
    base = base_seed(seed)
    return [drf_layer(base, layer, n, d, dtype=dtype, device=device, draw_on=draw_on) for layer in range(1, L + 1)]


def attention_weights(
    seed: int | torch.Generator,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> Tensor:
    """The attention matrix ``W`` (d, d), i.i.d. N(0, 1/d), shared by RAF and ReLU-RAF."""
    _check_positive(d=d)
    return draw_gaussian((d, d), math.sqrt(1.0 / d), derive_seed(base_seed(seed), "attention"), dtype, device)


def rf_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    k: int | None = None,
) -> Tensor:
    """The registry's RF sampler (``rf_weights``)."""
    return rf_weights(seed, n, d, k, dtype=dtype, device=device, draw_on=draw_on)


def drf_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    L: int = 2,
) -> list[Tensor]:
    """The registry's DRF sampler (``drf_weights``)."""
    return drf_weights(seed, n, d, L, dtype=dtype, device=device, draw_on=draw_on)


def attention_sample(
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
) -> Tensor:
    """The registry's RAF / ReLU-RAF sampler (``attention_weights``; small: drawn on the CPU)."""
    return attention_weights(seed, d, dtype=dtype, device=device)


def sample_weights(
    map_name: str,
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    **options: Any,
) -> Any:
    """Weights of ``map_name`` in the format its map takes (RF: V, DRF: list, RAF maps: W, the
    other maps: a dict of named tensors), drawn from ``seed``. ``options``: the map's options
    (RF ``k``, DRF ``L``, multi-head maps ``heads``; ``wordsens maps`` lists them). ``L`` and ``k``
    are accepted for every map and ignored by those without them, as before the registry."""
    spec = registry.get(map_name)
    _check_positive(n=n, d=d)
    values = spec.option_values(
        {
            key: value
            for key, value in options.items()
            if value is not None and (key in spec.options or key not in ("L", "k"))
        }
    )
    return registry.resolve(spec.sample)(seed, n, d, dtype=dtype, device=device, draw_on=draw_on, **values)
