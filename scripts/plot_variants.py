"""Snakemake adapter: every registered map compared on one grid (WS against n), with the points left out."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import variants_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
variants_figure(
    pd.read_parquet(snakemake.input.table),
    snakemake.output.figures,
    labels=p.labels,
    left_out=p.left_out,
    settings=settings,
)
