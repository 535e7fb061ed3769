"""Snakemake adapter: word sensitivity at long contexts (log-log, fitted slopes, RF law, the IMDb limit)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import long_context_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
tables = {data: pd.read_parquet(path) for data, path in snakemake.input.items()}
long_context_figure(
    tables, snakemake.output.figures, labels=p.labels, imdb_limit=p.imdb_limit, left_out=p.left_out, settings=settings
)
