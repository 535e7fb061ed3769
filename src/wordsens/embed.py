"""Hidden states of a Hugging Face encoder for a pool of reviews.

Sequences are ``[CLS] review [SEP]`` padded to ``max_length``: row 0 is ``[CLS]``, and rows past a
review's end are the model's ``[SEP]``/``[PAD]`` embeddings, as in the authors' runs. Any encoder
that ``transformers.AutoModel`` loads (a Hub name or a local folder) works; layer 0 is the
embedding output (word + position + token type, after LayerNorm).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np
import torch

from .resources import resolve_device

__all__ = ["encode", "hidden_states", "load_encoder", "model_source"]


def model_source(name: str, files: Sequence[str]) -> str:
    """What ``from_pretrained`` gets in a workflow job: the folder of the model's files when the
    rule has them as inputs (a local or demo model), else the Hub name."""
    from pathlib import Path

    return str(Path(files[0]).parent) if files else name


def _offline_hint(name: str) -> str:
    return (f"cannot load model {name!r}: it is neither a local folder nor reachable on the Hugging Face Hub. "
            "Point model.name at a local copy (a folder with config.json and weights, e.g. saved with "
            "save_pretrained), or run where the Hub is reachable")


def load_encoder(name: str, device: str | torch.device = "auto", *, attentions: bool = False):
    """``(tokenizer, model)`` for a Hub name or local folder, in eval mode on ``device``.

    ``attentions=True`` loads the eager attention implementation (transformers 5 returns
    attention probabilities only with it).
    """
    from pathlib import Path

    from transformers import AutoModel, AutoTokenizer

    from .data import hub_reachable

    local = Path(name).expanduser()
    if not local.exists() and not hub_reachable():
        try:  # a model already in the local Hugging Face cache loads without the network
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(name, "config.json")
        except Exception:
            cached = None
        if not isinstance(cached, str):
            raise ValueError(_offline_hint(name))
    source = str(local) if local.exists() else name
    kwargs = {"attn_implementation": "eager"} if attentions else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModel.from_pretrained(source, **kwargs)
    except OSError as err:
        raise ValueError(f"{_offline_hint(name)} ({err})") from err
    model.eval()
    model.to(resolve_device(device))
    return tokenizer, model


def encode(tokenizer, texts: Sequence[str], max_length: int) -> dict[str, torch.Tensor]:
    """``[CLS] text [SEP]`` padded (or truncated) to ``max_length`` tokens."""
    return tokenizer(list(texts), padding="max_length", truncation=True, max_length=max_length,
                     add_special_tokens=True, return_tensors="pt")


@torch.no_grad()
def hidden_states(
    tokenizer, model, texts: Sequence[str], *, layer: int, max_length: int, batch_size: int = 16,
    dtype: np.dtype = np.float16, progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states of ``layer`` for every text: ``(len(texts), max_length, width)`` and lengths.

    Lengths count ``[CLS]`` and ``[SEP]``. Progress goes to stderr (the job log).
    """
    n_layers = int(getattr(model.config, "num_hidden_layers", 0))
    if not 0 <= layer <= n_layers:
        raise ValueError(f"model.layer must be in [0, {n_layers}] for this model ({n_layers} encoder layers), got {layer}")
    positions = int(getattr(model.config, "max_position_embeddings", max_length))
    if max_length > positions:
        raise ValueError(f"model.max_length {max_length} exceeds the model's {positions} positions")
    device = next(model.parameters()).device
    width = int(model.config.hidden_size)
    out = np.empty((len(texts), max_length, width), dtype=dtype)
    lengths = np.empty(len(texts), dtype=np.int64)
    started = time.time()
    for start in range(0, len(texts), batch_size):
        batch = encode(tokenizer, texts[start:start + batch_size], max_length)
        lengths[start:start + len(batch["input_ids"])] = batch["attention_mask"].sum(-1).numpy()
        batch = {k: v.to(device) for k, v in batch.items()}
        states = model(**batch, output_hidden_states=True).hidden_states[layer]
        out[start:start + states.shape[0]] = states.float().cpu().numpy().astype(dtype)
        done = min(start + batch_size, len(texts))
        if progress:
            rate = done / max(time.time() - started, 1e-9)
            print(f"embedded {done}/{len(texts)} reviews ({rate:.1f}/s)", file=sys.stderr, flush=True)
    if not np.isfinite(out).all():
        raise ValueError("the model produced NaN/Inf hidden states (float16 overflow?); set model.dtype: float32")
    return out, lengths
