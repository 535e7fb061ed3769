"""Snakemake adapter: the claims table (wordsens.claims) computed from the run's own tables (a study that
lends its word-sensitivity rows adds the maps that the paper's grids do not have), with a row for each grid
point the limits left out."""

import pandas as pd

from wordsens.claims import format_claims, write_claims
from wordsens.io import log_to
from wordsens.studies.claims import claims_inputs, compute_claims

log_to(snakemake.log[0])
tables = claims_inputs({name: pd.read_parquet(path) for name, path in snakemake.input.items()})
frame = compute_claims(tables, snakemake.params.left_out)
write_claims(frame, snakemake.output.csv, snakemake.output.html)
print(format_claims(frame))
