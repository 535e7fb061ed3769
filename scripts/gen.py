"""Snakemake adapter: one generalisation job (a chunk of simulations at one figure point)."""

import torch

from wordsens.data.store import load_embeddings
from wordsens.experiments import gen_rows
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = snakemake.params.job
# the grid gave the job its embedding store as input where it reads IMDb rows (Job.store)
meta = getattr(snakemake.input, "meta", None)
source = load_embeddings(meta) if meta else "synthetic"
frame = gen_rows(
    figure=job["figure"],
    map_name=job["map"],
    n=job["n"],
    N=job["N"],
    d=job["d"],
    simulations=job["simulations"],
    searches=[tuple(s) for s in job["searches"]],
    seed=job["seed"],
    source=source,
    data_label=job["data_label"],
    settings=job["settings"],
)
write_table(snakemake.output.table, frame)
print(frame[["simulation", "training", "loss", "penalty", "err", "gamma_min", "steps"]].to_string(index=False))
