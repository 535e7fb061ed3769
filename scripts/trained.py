"""Snakemake adapter: the trained study at one encoder layer (wordsens.experiments.trained.layer_table).
data.max_unk_share reaches the job through the configuration (a gate, not a param: a change of it re-runs
nothing), as in the pool step."""

import pandas as pd
import torch

from wordsens.data.pretrained import load_encoder, model_source
from wordsens.experiments.trained import layer_table
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
source = model_source(job["model"], snakemake.input.model)
tokenizer, encoder = load_encoder(source, "cpu", setting=snakemake.params.model_key)
frame = layer_table(
    tokenizer,
    encoder,
    pd.read_parquet(snakemake.input.pool),
    job,
    source=source,
    max_unk_share=snakemake.config["data"]["max_unk_share"],
    key=snakemake.params.model_key,
    log=print,
)
write_table(snakemake.output.table, frame)
print(frame.groupby(["convention", "n", "token", "map", "head"])[["ws", "entropy"]].mean().to_string())
