"""Snakemake adapter: the trained study at one encoder layer (wordsens.experiments.trained.layer_table)."""

import pandas as pd
import torch

from wordsens.data.embed import load_encoder, model_source
from wordsens.experiments.trained import layer_table
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
source = model_source(job["model"], snakemake.input.model)
tokenizer, encoder = load_encoder(source, "cpu", setting=snakemake.params.model_key)
frame = layer_table(tokenizer, encoder, pd.read_parquet(snakemake.input.pool), job, source=source, log=print)
write_table(snakemake.output.table, frame)
print(frame.groupby(["normalise", "n", "map", "head"])["ws"].mean().to_string())
