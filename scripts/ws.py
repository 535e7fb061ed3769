"""Snakemake adapter: one word-sensitivity job (a chunk of trials at one grid point)."""

import torch

from wordsens.data.store import load_embeddings
from wordsens.experiments import ws_rows
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
# the grid gave the job its embedding store as input where it reads IMDb rows (Job.store)
meta = getattr(snakemake.input, "meta", None)
source = load_embeddings(meta) if meta else "synthetic"
frame = ws_rows(
    map_name=job["map"],
    d=job["d"],
    n=job["n"],
    swept=job["swept"],
    trials=job["trials"],
    seed=job["seed"],
    source=source,
    data_label=job["data_label"],
    settings=job["settings"],
)
write_table(snakemake.output.table, frame)
print(frame[["trial", "lower", "upper", "steps", "search_seconds"]].to_string(index=False))
