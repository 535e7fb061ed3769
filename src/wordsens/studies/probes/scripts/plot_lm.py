"""Snakemake adapter: Figure 1 right, drawn from its table (probe_lm.py)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.studies.probes.figure import text_table_figure

log_to(snakemake.log[0])
p = snakemake.params
table = pd.read_csv(snakemake.input.table, keep_default_na=False)
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
text_table_figure(table, snakemake.output.figures, title=f"answers of {p.model_name}", settings=settings)
