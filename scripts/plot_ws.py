"""Snakemake adapter: a word-sensitivity figure (plain, and WS x sqrt(n))."""
import pandas as pd

from wordsens.io import log_to
from wordsens.plots import ws_figure

log_to(snakemake.log[0])
tables = {name: pd.read_parquet(path) for name, path in snakemake.input.items()}
order = [m for m in ("rf", "drf", "raf", "relu_raf") if m in tables]
settings = snakemake.params.plots
ws_figure(tables, order, snakemake.output.plain, settings=settings)
ws_figure(tables, order, snakemake.output.scaled, scaled=True, settings=settings)
