"""Snakemake adapter: the swaps study for one map at one (d, n) (wordsens.experiments.swaps.swap_table)."""

import pandas as pd
import torch

from wordsens.data.pretrained import load_encoder, model_source
from wordsens.experiments.swaps import swap_table
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
source = model_source(job["model"], snakemake.input.model)
tokenizer, encoder = load_encoder(source, "cpu", setting="model.name")
pool = pd.read_parquet(snakemake.input.pool)
frame = swap_table(tokenizer, encoder, pool, job, source=source, chunk_mb=snakemake.params.chunk_mb, log=print)
write_table(snakemake.output.table, frame)
print(frame[["position", "original", "best_word", "s_words", "continuous", "ratio", "mean"]].to_string())
