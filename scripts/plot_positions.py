"""Snakemake adapter: per-position word sensitivity of a few reviews ([CLS], words, [SEP], [PAD] marked)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import positions_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
positions_figure(
    pd.read_parquet(snakemake.input.table),
    snakemake.output.figures,
    labels=p.labels,
    left_out=p.left_out,
    settings=settings,
)
