"""Snakemake adapter: a word-sensitivity figure (plain, and WS x sqrt(n)), with the points left out."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import ws_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
tables = {name: pd.read_parquet(path) for name, path in snakemake.input.items()}
for paths, scaled in ((snakemake.output.plain, False), (snakemake.output.scaled, True)):
    ws_figure(tables, p.maps, paths, scaled=scaled, left_out=p.left_out, settings=settings)
