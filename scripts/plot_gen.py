"""Snakemake adapter: Figure 4 (colour = N) or Figure 5 (colour = penalty), and its companion (the
alignment ratio a against gamma_min), with the points left out."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import gen_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
table = pd.read_parquet(snakemake.input.table)
for paths, y in ((snakemake.output.figures, "err"), (snakemake.output.alignment, "alignment")):
    gen_figure(table, p.columns, paths, hue=p.hue, y=y, left_out=p.left_out, settings=settings)
