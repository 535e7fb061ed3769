"""Snakemake adapter: the swaps study's figure (per map against n: the continuous word sensitivity, the
best real word and the vocabulary's mean) and its readable table of the top substitutions (Markdown)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.plots import swaps_figure, swaps_text

log_to(snakemake.log[0])
p = snakemake.params
table = pd.read_parquet(snakemake.input.table)
swaps_figure(table, snakemake.output.figures, left_out=p.left_out, settings={**p.plots, "stamp": p.stamp})
swaps_text(table, snakemake.output.text, stamp=p.stamp)
