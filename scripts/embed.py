"""Snakemake adapter: hidden states of the pool, stored once per model and layer, checked before they
are written (docs/inputs.md): no NaN/Inf, and enough distinct samples at every n of the jobs that read
the store (data.min_distinct_share). The grid's n and the threshold reach this job through the
configuration, not params: a new n or threshold must not re-embed the store and re-run every job
(the workflow checks an existing store against a changed grid when it plans)."""

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from wordsens.data.embed import hidden_states, load_encoder, model_source
from wordsens.data.inputs import check_store, check_vocabulary
from wordsens.io import log_to, save_embeddings
from wordsens.pipeline import store_ns

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
p = snakemake.params
pool = pd.read_parquet(snakemake.input.pool)
source = model_source(p.model_name, snakemake.input.model)
tokenizer, model = load_encoder(source, p.device)
rows = model.get_input_embeddings().num_embeddings
print(check_vocabulary(len(tokenizer), rows, source), flush=True)
hidden, lengths = hidden_states(
    tokenizer,
    model,
    list(pool["text"]),
    layer=p.layer,
    max_length=p.max_length,
    batch_size=p.batch_size,
    dtype=np.dtype(p.dtype),
)
ns = store_ns(snakemake.config, p.store)
counted = "unk" in pool  # a pool written before [UNK] was counted has no such column
checks = check_store(
    hidden,
    ns,
    min_share=snakemake.config["data"]["min_distinct_share"],
    store=f"the {p.store} store {Path(snakemake.output.meta).parent}",
    tokens=pool["tokens"] if counted else None,
    unk=pool["unk"] if counted else None,
)
index = pd.DataFrame({"review_id": pool["review_id"], "label": pool["label"], "length": lengths})
meta = {
    "model": p.model_name,
    "layer": p.layer,
    "max_length": p.max_length,
    "weights": "as loaded by from_pretrained",
    "pool": str(snakemake.input.pool),
    "vocabulary": {"tokenizer": len(tokenizer), "embedding_rows": rows},
    "checked_ns": ns,
    **checks,
}
save_embeddings(Path(snakemake.output.meta).parent, hidden, index, meta)
print(f"stored {hidden.shape} ({hidden.dtype}) hidden states of layer {p.layer}")
print(f"distinct samples of {checks['reviews']} reviews (n: count): {checks['distinct_samples']}")
