"""Snakemake adapter: hidden states of the pool, stored once per model and layer."""

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from wordsens.data.embed import hidden_states, load_encoder, model_source
from wordsens.io import log_to, save_embeddings

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
p = snakemake.params
pool = pd.read_parquet(snakemake.input.pool)
tokenizer, model = load_encoder(model_source(p.model_name, snakemake.input.model), p.device)
hidden, lengths = hidden_states(
    tokenizer,
    model,
    list(pool["text"]),
    layer=p.layer,
    max_length=p.max_length,
    batch_size=p.batch_size,
    dtype=np.dtype(p.dtype),
)
index = pd.DataFrame({"review_id": pool["review_id"], "label": pool["label"], "length": lengths})
meta = {
    "model": p.model_name,
    "layer": p.layer,
    "max_length": p.max_length,
    "weights": "as loaded by from_pretrained",
    "pool": str(snakemake.input.pool),
}
save_embeddings(Path(snakemake.output.meta).parent, hidden, index, meta)
print(f"stored {hidden.shape} ({hidden.dtype}) hidden states of layer {p.layer}")
