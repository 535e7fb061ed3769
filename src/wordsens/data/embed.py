"""Hidden states of reviews (``embed_pool``), running only the layers needed (``truncated``). Sequences
are ``[CLS] review [SEP]`` padded to ``max_length`` (rows past a review's end are the model's
``[SEP]``/``[PAD]`` embeddings, as in the authors' runs); layer 0 is the embedding output. Models load
through ``wordsens.data.pretrained``; torch is imported by the functions that need it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .inputs import check_finite, check_store, check_vocabulary
from .models import TRUNCATABLE

if TYPE_CHECKING:
    import pandas as pd
    import torch


@contextlib.contextmanager
def truncated(model, layer: int) -> Iterator[bool]:
    """Within the block, ``model``'s encoder runs only its first ``layer`` layers (0: the embedding output
    alone), so ``last_hidden_state`` is ``hidden_states[layer]`` of the full model. Yields whether the model
    could be truncated (the types of ``TRUNCATABLE``, where that is exact); else it is left whole."""
    import torch

    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if not (
        getattr(model.config, "model_type", None) in TRUNCATABLE
        and isinstance(layers, torch.nn.ModuleList)
        and hasattr(base, "embeddings")
    ):
        yield False
        return
    encoder = base.encoder
    encoder.layer = torch.nn.ModuleList(list(layers)[:layer])
    try:
        yield True
    finally:
        encoder.layer = layers


def encode(tokenizer, texts: Sequence[str], max_length: int) -> dict[str, torch.Tensor]:
    """``[CLS] text [SEP]`` padded (or truncated) to ``max_length`` tokens."""
    return tokenizer(
        list(texts),
        padding="max_length",
        truncation=True,
        max_length=max_length,
        add_special_tokens=True,
        return_tensors="pt",
    )


def hidden_states(
    tokenizer,
    model,
    texts: Sequence[str],
    *,
    layer: int,
    max_length: int,
    batch_size: int = 16,
    dtype: npt.DTypeLike = np.float16,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states of ``layer`` for every text, ``(len(texts), max_length, width)``, running only the layers
    needed (``truncated``), and the lengths (``[CLS]`` and ``[SEP]`` counted). Progress goes to stderr (the
    job log); a batch with NaN/Inf values stops it (``InputError``, naming the reviews)."""
    import torch

    n_layers = int(getattr(model.config, "num_hidden_layers", 0))
    if not 0 <= layer <= n_layers:
        raise ValueError(
            f"model.layer must be in [0, {n_layers}] for this model ({n_layers} encoder layers), got {layer}"
        )
    positions = int(getattr(model.config, "max_position_embeddings", max_length))
    if max_length > positions:
        raise ValueError(
            f"max_length {max_length} exceeds the model's {positions} positions: lower model.max_length "
            "(or long_context.max_length for the long-context store)"
        )
    device = next(model.parameters()).device
    width = int(model.config.hidden_size)
    out = np.empty((len(texts), max_length, width), dtype=dtype)
    lengths = np.empty(len(texts), dtype=np.int64)
    started = time.time()
    with truncated(model, layer) as short, torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = encode(tokenizer, texts[start : start + batch_size], max_length)
            lengths[start : start + len(batch["input_ids"])] = batch["attention_mask"].sum(-1).numpy()
            batch = {k: v.to(device) for k, v in batch.items()}
            if short:
                states = model(**batch).last_hidden_state
            else:
                states = model(**batch, output_hidden_states=True).hidden_states[layer]
            out[start : start + states.shape[0]] = states.float().cpu().numpy().astype(dtype)
            check_finite(out[start : start + states.shape[0]], first_row=start)  # stop at the first bad batch
            done = min(start + batch_size, len(texts))
            if progress:
                rate = done / max(time.time() - started, 1e-9)
                print(f"embedded {done}/{len(texts)} reviews ({rate:.1f}/s)", file=sys.stderr, flush=True)
    return out, lengths


@dataclass(frozen=True)
class EmbeddedPool:
    """An embedding store about to be written (``wordsens.data.store.save_embeddings``): the hidden states
    (reviews, max_length, width), the index (``review_id``, ``label``, ``length``: tokens with
    ``[CLS]`` and ``[SEP]``) and the metadata (the model, the layer, the checks' counts)."""

    hidden: np.ndarray
    index: pd.DataFrame
    meta: dict[str, Any]


def embed_pool(
    tokenizer,
    model,
    pool: pd.DataFrame,
    *,
    source: str,
    model_name: str,
    layer: int,
    max_length: int,
    ns: Iterable[int],
    min_share: float,
    batch_size: int = 16,
    dtype: npt.DTypeLike = np.float16,
    store: str = "the store",
    pool_path: str = "",
    log: Callable[[str], Any] | None = None,
) -> EmbeddedPool:
    """The embedding store of a review pool (the ``embed`` rule's job), checked before it is written
    (docs/inputs.md: ``check_vocabulary``, its line to ``log``; ``check_store``, refusing with ``InputError``).
    ``source``: where the model was loaded from; ``model_name``: the configuration's; ``store``: the store
    as messages name it; ``pool_path``: recorded in the metadata."""
    import pandas as pd

    rows = int(model.get_input_embeddings().num_embeddings)
    line = check_vocabulary(len(tokenizer), rows, source)
    if log is not None:
        log(line)
    hidden, lengths = hidden_states(
        tokenizer,
        model,
        [str(text) for text in pool["text"]],
        layer=layer,
        max_length=max_length,
        batch_size=batch_size,
        dtype=np.dtype(dtype),
    )
    ns = sorted({int(n) for n in ns})
    counted = "unk" in pool and "tokens" in pool  # a pool written before [UNK] was counted has no such column
    checks = check_store(
        hidden,
        ns,
        min_share=min_share,
        store=store,
        tokens=pool["tokens"] if counted else None,
        unk=pool["unk"] if counted else None,
    )
    index = pd.DataFrame({"review_id": pool["review_id"], "label": pool["label"], "length": lengths})
    meta = {
        "model": model_name,
        "layer": layer,
        "max_length": max_length,
        "weights": "as loaded by from_pretrained",
        "pool": pool_path,
        "vocabulary": {"tokenizer": len(tokenizer), "embedding_rows": rows},
        "checked_ns": ns,
        **checks,
    }
    return EmbeddedPool(hidden, index, meta)
