"""Maps whose weights come from a pre-trained checkpoint (``wordsens.maps.checkpoint`` loads them;
formulas: ``wordsens.maps.catalog``): a BERT-family layer's attention sublayer (``trained_attention``:
``mh_raf_forward`` with biases; with the option ``head``, that head's output) and the whole layer
(``trained_layer``: exact GELU, the checkpoint's LayerNorms), as transformers computes them
(``tests/unit/maps/test_trained.py``). Linear layers act on rows (``x W + b``); ``eps`` may be a Python
number. Also what the trained study derives from these weights: ``matched_weights``,
``attention_entropy``, ``attention_mass`` and ``bias_output``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .checks import check_keys, check_weight, is_number
from .variants import mh_raf_forward

Tensor = torch.Tensor


ATTENTION_KEYS = ("Wq", "Wk", "Wv", "bq", "bk", "bv", "Wo", "bo")
LAYER_KEYS = (*ATTENTION_KEYS, "ln1_w", "ln1_b", "W1", "b1", "W2", "b2", "ln2_w", "ln2_b", "eps")
_ONE_HEAD_KEYS = ATTENTION_KEYS[:6]


def trained_layer_forward(X: Tensor, weights: Mapping[str, Tensor]) -> Tensor:
    """A post-LayerNorm BERT encoder layer: (..., n, d) -> (..., n, d); no input checks."""
    eps = float(weights["eps"])
    d = X.shape[-1]
    Y = F.layer_norm(X + mh_raf_forward(X, weights), (d,), weights["ln1_w"], weights["ln1_b"], eps)
    Z = Y + F.gelu(Y @ weights["W1"] + weights["b1"]) @ weights["W2"] + weights["b2"]
    return F.layer_norm(Z, (d,), weights["ln2_w"], weights["ln2_b"], eps)


# --------------------------------------------------------------------------- what the trained study derives


def random_singular_vectors(W: Tensor, generator: torch.Generator) -> Tensor:
    """A matrix with the singular values of ``W`` (p, q) and Haar-random singular vectors:
    ``U diag(s) V^T`` with ``U`` (p, r), ``V`` (q, r) the orthonormal factors of Gaussian matrices
    (QR, signs fixed by R's diagonal), ``r = min(p, q)``; computed in float64 on the CPU, returned in
    ``W``'s dtype and device."""
    s = torch.linalg.svdvals(W.detach().to(device="cpu", dtype=torch.float64))
    p, q = W.shape
    factors = []
    for rows in (p, q):
        Q, R = torch.linalg.qr(torch.randn((rows, s.numel()), generator=generator, dtype=torch.float64))
        factors.append(Q * torch.sign(torch.diagonal(R)))
    U, V = factors
    return ((U * s) @ V.T).to(dtype=W.dtype, device=W.device)


def _random_direction(b: Tensor, generator: torch.Generator) -> Tensor:
    """A vector of ``b``'s norm in a uniformly random direction."""
    g = torch.randn(b.shape, generator=generator, dtype=torch.float64)
    norm = torch.linalg.vector_norm(b.detach().to(device="cpu", dtype=torch.float64))
    return (g * (norm / torch.linalg.vector_norm(g))).to(dtype=b.dtype, device=b.device)


# per-head tensors (h, d, d/h) and (h, d/h), whole matrices, vectors; everything else (the LayerNorms, eps) is kept
_HEAD_MATRICES, _MATRICES = ("Wq", "Wk", "Wv"), ("Wo", "W1", "W2")
_HEAD_BIASES, _BIASES = ("bq", "bk", "bv"), ("bo", "b1", "b2")


def matched_weights(weights: Mapping[str, Any], generator: torch.Generator) -> dict[str, Any]:
    """The random counterpart of a trained weight dict at the trained scale: each matrix (``Wq``,
    ``Wk``, ``Wv`` head by head, ``Wo``, ``W1``, ``W2``) with its singular values and random singular
    vectors (``random_singular_vectors``), each bias (head by head for ``bq``, ``bk``, ``bv``) a random
    direction of its norm; the LayerNorms' ``ln*_w``, ``ln*_b`` and ``eps`` kept. Draws in the order of
    the dict's keys from ``generator``."""
    out: dict[str, Any] = {}
    for key, W in weights.items():
        if key in _HEAD_MATRICES:
            out[key] = torch.stack([random_singular_vectors(head, generator) for head in W])
        elif key in _MATRICES:
            out[key] = random_singular_vectors(W, generator)
        elif key in _HEAD_BIASES:
            out[key] = torch.stack([_random_direction(head, generator) for head in W])
        elif key in _BIASES:
            out[key] = _random_direction(W, generator)
        else:
            out[key] = W
    return out


def _attention_log_probs(X: Tensor, weights: Mapping[str, Any]) -> Tensor:
    """The log softmax attention of ``weights`` (``Wq``, ``Wk`` of shape (h, d, d/h), biases ``bq``,
    ``bk`` where the dict has them) on ``X`` (..., n, d): (..., h, n queries, n keys)."""
    Q, K = X.unsqueeze(-3) @ weights["Wq"], X.unsqueeze(-3) @ weights["Wk"]  # (..., h, n, d/h)
    if "bq" in weights:
        Q, K = Q + weights["bq"].unsqueeze(-2), K + weights["bk"].unsqueeze(-2)
    return torch.log_softmax(Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1]), dim=-1)


def attention_entropy(X: Tensor, weights: Mapping[str, Any]) -> Tensor:
    """The entropy (nats) of every softmax row of the attention of ``weights`` (``Wq``, ``Wk`` of shape
    (h, d, d/h), biases ``bq``, ``bk`` where the dict has them) on ``X`` (..., n, d): (..., h, n), at
    most ln n (a uniform row), 0 for a one-hot row."""
    logp = _attention_log_probs(X, weights)
    return -(logp.exp() * logp).sum(-1)


def attention_mass(X: Tensor, weights: Mapping[str, Any], columns: Sequence[int]) -> Tensor:
    """The attention every softmax row of ``weights`` puts on the key rows ``columns`` of ``X``
    (..., n, d), summed: (..., h, n), in [0, 1] (the trained study: the mass on ``[CLS]`` and ``[SEP]``)."""
    return _attention_log_probs(X, weights)[..., list(columns)].exp().sum(-1)


def bias_output(weights: Mapping[str, Any]) -> Tensor | None:
    """The row the attention's biases add to every output row: ``concat_h(bv_h) @ Wo + bo`` (every
    softmax row sums to 1, so the value bias passes through unchanged), or None for a dict without
    them (``mh_raf``, ``block``: no biases; one head alone: no ``Wo``)."""
    if "bv" not in weights or "Wo" not in weights:
        return None
    return weights["bv"].reshape(-1) @ weights["Wo"] + weights["bo"]


# --------------------------------------------------------------------------- weight checks


def _tensor(map_name: str, weights: Mapping[str, Any], key: str, shape: tuple[int, ...]) -> None:
    """Weight ``key``: a finite floating-point tensor of ``shape``; a scalar (``eps``) may be a number."""
    W = weights[key]
    check_weight(map_name, key, W, shape)
    if not is_number(W) and not W.is_floating_point():
        raise ValueError(f"{map_name} weight {key!r} must be a floating-point tensor, got {W.dtype}")


def _check_attention(map_name: str, weights: Any, d: int, keys: tuple[str, ...]) -> tuple[int, int]:
    """The attention tensors of ``weights`` (exactly ``keys``), for inputs of width ``d``; returns
    (heads, head width) read from ``Wq``."""
    check_keys(map_name, weights, keys, " (wordsens.maps.checkpoint.layer_weights loads them from a checkpoint)")
    Wq = weights["Wq"]
    if not isinstance(Wq, Tensor) or Wq.ndim != 3 or Wq.shape[1] != d:
        shape = tuple(Wq.shape) if isinstance(Wq, Tensor) else type(Wq).__name__
        raise ValueError(
            f"{map_name} weight 'Wq' must have shape (heads, d, d/heads) with d = {d} (the width of X), got {shape}; "
            "a checkpoint's layer takes samples of its hidden size"
        )
    h, dh = int(Wq.shape[0]), int(Wq.shape[2])
    for key in ("Wq", "Wk", "Wv"):
        _tensor(map_name, weights, key, (h, d, dh))
    for key in ("bq", "bk", "bv"):
        _tensor(map_name, weights, key, (h, dh))
    if "Wo" in keys:
        _tensor(map_name, weights, "Wo", (h * dh, d))
        _tensor(map_name, weights, "bo", (d,))
    return h, dh


def trained_attention_check(weights: Any, n: int, d: int) -> None:
    """``trained_attention`` weights: every head with ``Wo``, ``bo``, or one head without them."""
    keys = ATTENTION_KEYS if isinstance(weights, Mapping) and "Wo" in weights else _ONE_HEAD_KEYS
    _check_attention("trained_attention", weights, d, keys)


def trained_layer_check(weights: Any, n: int, d: int) -> None:
    """``trained_layer`` weights: the attention's (every head), both LayerNorms, the feed-forward
    layer (any inner width f) and ``eps`` > 0."""
    _check_attention("trained_layer", weights, d, LAYER_KEYS)
    W1 = weights["W1"]
    f = int(W1.shape[1]) if isinstance(W1, Tensor) and W1.ndim == 2 else 0
    for key, shape in (
        ("ln1_w", (d,)),
        ("ln1_b", (d,)),
        ("W1", (d, f)),
        ("b1", (f,)),
        ("W2", (f, d)),
        ("b2", (d,)),
        ("ln2_w", (d,)),
        ("ln2_b", (d,)),
        ("eps", ()),
    ):
        _tensor("trained_layer", weights, key, shape)
    if f < 1 or not float(weights["eps"]) > 0:
        raise ValueError(f"trained_layer needs W1 of shape (d, f) with f >= 1 and eps > 0, got f = {f}")
