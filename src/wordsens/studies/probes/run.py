"""Probes of a real pre-trained encoder (Figure 1 and Figure 3, panels 3-4) and of a causal LM.

Token positions are 0-based with ``[CLS]`` at 0; layers and heads 1-based as in the paper. Moving a token adds
``Delta`` to its row of ``hidden_states[0]`` (the embedding output) through a forward hook on the embedding
module, so the real query/key projections and every layer see it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ...compute.devices import resolve_device
from ...data.embed import truncated
from ...data.pretrained import load_pretrained
from ...seeds import derive_seed, generator
from . import AttentionMap

Tensor = torch.Tensor


def _embeddings(model) -> torch.nn.Module:
    module = getattr(model, "embeddings", None)
    if module is None:
        base = getattr(model, "base_model", None)
        module = getattr(base, "embeddings", None)
    if module is None:
        raise ValueError(
            f"{type(model).__name__} has no embedding module: use a BERT-like encoder "
            "(BERT, RoBERTa, ELECTRA, ...) loaded with AutoModel"
        )
    return module


@contextlib.contextmanager
def moved(model, position: int, delta: Tensor) -> Iterator[None]:
    """Within the block, the model adds ``delta`` (width,) to row ``position`` of ``hidden_states[0]``."""

    def hook(_module, _inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        shift = torch.zeros_like(out)
        shift[:, position] = delta.to(out.dtype)
        out = out + shift
        return (out, *output[1:]) if isinstance(output, tuple) else out

    handle = _embeddings(model).register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def _run(model, batch: dict[str, Tensor], *, attentions: bool):
    out = model(**batch, output_hidden_states=True, output_attentions=attentions)
    if attentions and (out.attentions is None or len(out.attentions) == 0 or out.attentions[0] is None):
        raise ValueError(
            f"{type(model).__name__} returns no attention probabilities; load it with "
            "attn_implementation='eager' (wordsens.data.pretrained.load_encoder(..., attentions=True))"
        )
    return out


def _encode(model, tokenizer, text: str) -> dict[str, Tensor]:
    """``text`` tokenised with its special tokens, on the model's device."""
    batch = tokenizer([text], return_tensors="pt", add_special_tokens=True)
    return {k: v.to(next(model.parameters()).device) for k, v in batch.items()}


def _check_layer(model, layer: int) -> None:
    layers = int(model.config.num_hidden_layers)
    if not 1 <= layer <= layers:
        raise ValueError(f"layer must be in [1, {layers}] (1-based), got {layer}")


@torch.no_grad()
def attention_map(
    model,
    tokenizer,
    text: str,
    *,
    layer: int = 1,
    heads: Sequence[int] | str = "all",
    drop_special: bool = True,
    position: int | None = None,
    delta: Tensor | None = None,
) -> AttentionMap:
    """Attention of ``layer`` averaged over ``heads`` (1-based, or "all") for ``text``;
    ``[CLS]``/``[SEP]`` rows and columns dropped when ``drop_special``; optionally with token
    ``position`` moved by ``delta``."""
    _check_layer(model, layer)
    batch = _encode(model, tokenizer, text)
    if delta is not None and position is None:
        raise ValueError("a moved token needs its position (0-based, [CLS] = 0) as well as its delta")
    context = moved(model, position, delta) if delta is not None and position is not None else contextlib.nullcontext()
    with context:
        out = _run(model, batch, attentions=True)
    att = out.attentions[layer - 1][0]  # (heads, L, L)
    n_heads = att.shape[0]
    idx = list(range(n_heads)) if heads == "all" else [] if isinstance(heads, str) else [h - 1 for h in heads]
    if not idx or any(not 0 <= h < n_heads for h in idx):
        raise ValueError(f"heads must be 'all' or 1-based indices in [1, {n_heads}], got {heads!r}")
    matrix = att[idx].mean(0).float().cpu().numpy()
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    if drop_special:
        keep = [i for i, t in enumerate(tokens) if t not in tokenizer.all_special_tokens]
        matrix = matrix[np.ix_(keep, keep)]
        tokens = [tokens[i] for i in keep]
    return AttentionMap(matrix=matrix, tokens=tokens)


def token_attention(model, batch: dict[str, Tensor], position: int, delta: Tensor, *, layer: int = 1) -> Tensor:
    """Mean attention (over heads and query rows) that ``layer`` pays to token ``position`` when it
    is moved by ``delta``; differentiable in ``delta``. Only the first ``layer`` layers run (the
    later ones cannot change it; ``truncated`` leaves unknown architectures whole)."""
    with moved(model, position, delta), truncated(model, layer):
        out = _run(model, batch, attentions=True)
    return out.attentions[layer - 1][0, :, :, position].mean()


def attract_delta(
    model,
    tokenizer,
    text: str,
    position: int,
    *,
    norm: float | None = None,
    layer: int = 1,
    steps: int = 60,
    seed: int = 0,
) -> tuple[Tensor, float, float]:
    """A ``Delta`` of norm ``norm`` (default: the moved row's own norm in ``hidden_states[0]``) that
    makes token ``position`` attract the attention of ``layer``: projected normalised-gradient
    ascent on the sphere of the mean attention paid to it (``token_attention``), through the
    model's real query/key projections. Returns ``(delta, attention before, attention after)``."""
    _check_layer(model, layer)
    device = next(model.parameters()).device
    batch = _encode(model, tokenizer, text)
    length = int(batch["input_ids"].shape[1])
    if not 0 <= position < length:
        raise ValueError(f"token index {position} is beyond the text's {length} tokens ([CLS] = 0)")
    with torch.no_grad():
        h0 = _run(model, batch, attentions=False).hidden_states[0][0]
    width = h0.shape[-1]
    radius = float(torch.linalg.vector_norm(h0[position])) if norm is None else float(norm)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError(f"norm must be a positive number, got {norm!r}")
    with torch.no_grad():
        before = float(token_attention(model, batch, position, torch.zeros(width, device=device), layer=layer))
    zero = torch.zeros(width, device=device, requires_grad=True)
    (grad,) = torch.autograd.grad(token_attention(model, batch, position, zero, layer=layer), zero)
    if float(grad.norm()) == 0:
        grad = torch.randn(width, generator=generator(derive_seed(seed, "attract")), dtype=torch.float32).to(device)
    delta = radius * grad / grad.norm()
    best, best_value, step = delta.detach(), -1.0, 0.5
    for _ in range(steps):
        delta = delta.detach().requires_grad_(True)
        value = token_attention(model, batch, position, delta, layer=layer)
        (grad,) = torch.autograd.grad(value, delta)
        if float(value.detach()) > best_value:
            best, best_value = delta.detach(), float(value.detach())
            step = min(step * 1.5, 1.0)
        else:
            delta, step = best.clone(), step * 0.5
        moved_dir = delta.detach() + step * radius * grad / grad.norm().clamp_min(1e-30)
        delta = radius * moved_dir / moved_dir.norm()
    with torch.no_grad():
        final = float(token_attention(model, batch, position, delta, layer=layer))
    if final > best_value:
        best, best_value = delta.detach(), final
    return best, before, best_value


@torch.no_grad()
def layer_changes(model, tokenizer, text: str, position: int, delta: Tensor) -> np.ndarray:
    """``||H_l(moved) - H_l|| / ||H_l||`` for every layer l = 0..L (0 = the encoder's input)."""
    batch = _encode(model, tokenizer, text)
    base = _run(model, batch, attentions=False).hidden_states
    with moved(model, position, delta):
        new = _run(model, batch, attentions=False).hidden_states
    return np.array(
        [float(torch.linalg.vector_norm(b - a) / torch.linalg.vector_norm(a)) for a, b in zip(base, new, strict=True)]
    )


def gaussian_deltas(width: int, norm: float, draws: int, seed: int) -> Tensor:
    """``draws`` Gaussian directions scaled to ``norm``: (draws, width)."""
    G = torch.randn((draws, width), generator=generator(derive_seed(seed, "gaussian-deltas")), dtype=torch.float32)
    return G * (norm / torch.linalg.vector_norm(G, dim=-1, keepdim=True))


def lm_answers(model_name: str, prompts: Sequence[str], *, max_new_tokens: int = 64, device: str = "auto") -> list[str]:
    """Greedy answers of a causal language model (a Hub name or a local folder) to ``prompts``."""
    fix = "set probes.lm.model to a local folder holding a causal language model, or disable probes.lm"
    tokenizer = load_pretrained(model_name, "tokenizer", setting="probes.lm.model", fix=fix)
    model = load_pretrained(model_name, "causal-lm", setting="probes.lm.model", fix=fix)
    dev = resolve_device(device)
    model.to(dev).eval()
    answers = []
    for prompt in prompts:
        batch = tokenizer(prompt, return_tensors="pt").to(dev)
        with torch.no_grad():
            out = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        answers.append(tokenizer.decode(out[0, batch["input_ids"].shape[1] :], skip_special_tokens=True).strip())
    return answers


def pick_long_text(pool, min_tokens: int) -> tuple[str, int]:
    """The first review of a pool (``wordsens.data.reviews.select_pool`` order) with at least ``min_tokens``
    WordPiece tokens; returns ``(text, review_id)``."""
    long = pool[pool["tokens"] >= min_tokens]
    if long.empty:
        raise ValueError(
            f"no review of the pool has at least {min_tokens} tokens (longest: "
            f"{int(pool['tokens'].max())}); lower probes.fig3.min_tokens or give probes.fig3.text"
        )
    return str(long["text"].iloc[0]), int(long["review_id"].iloc[0])


def layer_change_table(model, tokenizer, text: str, position: int, *, draws: int = 10, seed: int = 0, **attract: Any):
    """Figure 3 panel 3 as tidy rows: ``kind`` (attract | gaussian), ``draw``, ``layer``, ``change``,
    plus the attention paid to the token before and after the attracting Delta (``attract_delta``, with the
    ``norm`` and ``steps`` of ``attract``) or a Gaussian one of its norm."""
    import pandas as pd

    if draws < 1:
        raise ValueError(f"gaussian_draws must be >= 1, got {draws}")
    delta, before, after = attract_delta(model, tokenizer, text, position, seed=seed, **attract)
    radius = float(torch.linalg.vector_norm(delta))

    def rows_of(kind: str, draw: int, moved_by: Tensor, attention: float) -> list[dict[str, Any]]:
        changes = layer_changes(model, tokenizer, text, position, moved_by)
        common = {"kind": kind, "draw": draw}
        last = {"norm": radius, "attention_before": before, "attention_after": attention}
        return [{**common, "layer": layer, "change": float(c), **last} for layer, c in enumerate(changes)]

    rows = rows_of("attract", 0, delta, after)
    for draw, g in enumerate(gaussian_deltas(delta.shape[0], radius, draws, seed)):
        g = g.to(delta.device)
        with torch.no_grad():
            att = float(token_attention(model, _encode(model, tokenizer, text), position, g))
        rows += rows_of("gaussian", draw, g, att)
    return pd.DataFrame(rows)


def attention_table(maps_: Sequence[AttentionMap], labels: Sequence[str], column: str = "sentence"):
    """Tidy rows (``column``, query, key, their tokens, attention) of attention maps, one per label."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                column: label,
                "query": i,
                "key": j,
                "query_token": m.tokens[i],
                "key_token": m.tokens[j],
                "attention": float(m.matrix[i, j]),
            }
            for label, m in zip(labels, maps_, strict=False)
            for i in range(len(m.tokens))
            for j in range(len(m.tokens))
        ]
    )


def fig3_tables(model, tokenizer, settings: Mapping[str, Any], *, pool=None, seed: int = 0):
    """The tables of Figure 3 panels 3 and 4 (the ``fig3_probes`` rule's job) from ``settings`` (the
    configuration's ``probes.fig3``), as ``(layers, scores)``. Panel 3: ``layer_change_table`` on ``text``, else
    on the pool's first review of ``min_tokens`` tokens (its ``review_id`` in every row); panel 4: one head of one
    layer on ``short_text`` before and after moving ``short_token`` by that layer's attracting Delta."""
    if settings["text"]:
        text, review = str(settings["text"]), None
    elif pool is None:
        raise ValueError("probes.fig3.text is null: panel 3 reads its text from the review pool, give the pool")
    else:
        text, review = pick_long_text(pool, settings["min_tokens"])
    layers = layer_change_table(
        model,
        tokenizer,
        text,
        settings["token"],
        norm=settings["norm"],
        draws=settings["gaussian_draws"],
        steps=settings["steps"],
        seed=seed,
    )
    layers["review_id"] = review
    short, position, layer = settings["short_text"], settings["short_token"], settings["layer"]
    delta, _, _ = attract_delta(
        model, tokenizer, short, position, norm=settings["norm"], layer=layer, steps=settings["steps"], seed=seed
    )
    head = [settings["head"]]
    before = attention_map(model, tokenizer, short, layer=layer, heads=head, drop_special=False)
    after = attention_map(
        model, tokenizer, short, layer=layer, heads=head, drop_special=False, position=position, delta=delta
    )
    return layers, attention_table([before, after], ["before", "after"], column="state")
