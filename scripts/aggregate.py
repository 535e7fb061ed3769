"""Snakemake adapter: concatenate per-job tables (Parquet and CSV), each with the rows its job ran."""

from wordsens.io import concatenate, log_to, write_both

log_to(snakemake.log[0])
frame = concatenate(snakemake.input.chunks, rows=snakemake.params.rows)
write_both(frame, snakemake.output.parquet, snakemake.output.csv)
print(f"{len(frame)} rows from {len(snakemake.input.chunks)} files")
