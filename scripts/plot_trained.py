"""Snakemake adapter: a pre-trained encoder's layers against their random models, WS against n per layer
(trained solid, random dashed), and the per-head heat map of the trained attention; the layers the limits
left out marked not run."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import trained_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
trained_figure(pd.read_parquet(snakemake.input.table), snakemake.output.figures, left_out=p.left_out, settings=settings)
