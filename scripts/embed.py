"""Snakemake adapter: hidden states of the pool, stored once per model and layer, checked before they
are written (wordsens.data.embed.embed_pool; docs/inputs.md). The grid's n and data.min_distinct_share
reach this job through the configuration, not params: a new n or threshold must not re-embed the store
and re-run every job (the workflow checks an existing store against a changed grid when it plans)."""

from pathlib import Path

import pandas as pd
import torch

from wordsens.data.embed import embed_pool
from wordsens.data.pretrained import load_encoder, model_source
from wordsens.data.store import save_embeddings
from wordsens.io import log_to
from wordsens.pipeline import store_ns

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
p = snakemake.params
folder = Path(snakemake.output.meta).parent
source = model_source(p.model_name, snakemake.input.model)
tokenizer, model = load_encoder(source, p.device)
store = embed_pool(
    tokenizer,
    model,
    pd.read_parquet(snakemake.input.pool),
    source=source,
    model_name=p.model_name,
    layer=p.layer,
    max_length=p.max_length,
    ns=store_ns(snakemake.config, p.store),
    min_share=snakemake.config["data"]["min_distinct_share"],
    batch_size=p.batch_size,
    dtype=p.dtype,
    store=f"the {p.store} store {folder}",
    pool_path=str(snakemake.input.pool),
    log=lambda line: print(line, flush=True),
)
save_embeddings(folder, store.hidden, store.index, store.meta)
print(f"stored {store.hidden.shape} ({store.hidden.dtype}) hidden states of layer {p.layer}")
print(f"distinct samples of {store.meta['reviews']} reviews (n: count): {store.meta['distinct_samples']}")
