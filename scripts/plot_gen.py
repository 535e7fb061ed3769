"""Snakemake adapter: Figure 4 (colour = N) or Figure 5 (colour = penalty), with the points left out."""
import pandas as pd

from wordsens.io import log_to
from wordsens.plots import gen_figure

log_to(snakemake.log[0])
p = snakemake.params
gen_figure(pd.read_parquet(snakemake.input.table), p.columns, snakemake.output.figures, hue=p.hue,
           left_out=p.left_out, settings=p.plots)
