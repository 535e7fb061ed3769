"""Snakemake adapter: a pre-trained encoder's layers against their random models, WS against n per layer
(trained solid, random dashed), and the per-head heat map of the trained attention."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import run_stamp, trained_figure

log_to(snakemake.log[0])
settings = {**snakemake.params.plots, "stamp": run_stamp(snakemake.config)}  # "toy demo: ..." on a random model
trained_figure(pd.read_parquet(snakemake.input.table), snakemake.output.figures, settings=settings)
