"""Snakemake adapter: one generalisation job (a chunk of simulations at one figure point)."""
from wordsens.experiments import gen_rows
from wordsens.io import load_embeddings, log_to, write_table

log_to(snakemake.log[0])
job = snakemake.params.job
source = load_embeddings(snakemake.input[0]) if job["data"] == "imdb" else "synthetic"
frame = gen_rows(figure=job["figure"], map_name=job["map"], n=job["n"], N=job["N"], d=job["d"],
                 simulations=job["simulations"], searches=[tuple(s) for s in job["searches"]], seed=job["seed"],
                 source=source, data_label=snakemake.params.data_label, settings=job["settings"],
                 threads=job["threads"])
write_table(snakemake.output[0], frame)
print(frame[["simulation", "training", "loss", "penalty", "err", "gamma_min", "steps"]].to_string(index=False))
