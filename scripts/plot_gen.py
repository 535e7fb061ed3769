"""Snakemake adapter: Figure 4 (colour = N) or Figure 5 (colour = penalty)."""
import pandas as pd

from wordsens.io import log_to
from wordsens.plots import gen_figure

log_to(snakemake.log[0])
table = pd.read_parquet(snakemake.input[0])
hue = "penalty" if snakemake.rule == "fig5" else "N"
gen_figure(table, snakemake.params.columns, snakemake.output, hue=hue, settings=snakemake.params.plots)
