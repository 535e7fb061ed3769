"""Snakemake adapter: one figure of any study, drawn by the study's registration (StudySpec.draw) from its
tables, with the run's stamp and the plot settings."""

import pandas as pd

from wordsens.io import log_to
from wordsens.studies import bound, get

log_to(snakemake.log[0])
p = snakemake.params
tables = {name: pd.read_parquet(path) for name, path in snakemake.input.items()}
files, outputs = list(snakemake.output), {}
for name, count in p.outputs:
    outputs[name], files = files[:count], files[count:]
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
bound(get(p.study).draw)(tables, outputs, dict(p.figure), settings)
