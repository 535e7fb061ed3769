"""Snakemake adapter: the trained study at one encoder layer (wordsens.experiments.trained.layer_rows)."""

import pandas as pd
import torch

from wordsens.data.embed import load_encoder, model_source
from wordsens.experiments.trained import layer_rows, pick_reviews
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
source = model_source(job["model"], snakemake.input.model)
tokenizer, encoder = load_encoder(source, "cpu", setting="trained.model")
pool = pd.read_parquet(snakemake.input.pool)
# the pool's first reviews (its seeded order) with at least max(n) tokens: the same for every layer
chosen = pick_reviews(tokenizer, pool["text"].tolist(), n=max(job["n"]), count=job["reviews"])
rows = layer_rows(
    tokenizer,
    encoder,
    [str(pool["text"].iloc[i]) for i in chosen],
    model=source,
    layer=job["layer"],
    ns=job["n"],
    normalise=job["normalise"],
    maps=job["maps"],
    head_n=job["head_n"],
    head_reviews=job["head_reviews"],
    seed=job["seed"],
    max_steps=job["max_steps"],
    log=print,
)
frame = pd.DataFrame(rows)
frame.insert(0, "model", job["model"])
frame.insert(2, "review_id", [int(pool["review_id"].iloc[chosen[r]]) for r in frame["review"]])
write_table(snakemake.output.table, frame)
print(frame.groupby(["normalise", "n", "map", "head"])["ws"].mean().to_string())
