"""Snakemake adapter: Figure 3 panels 3 and 4, drawn from their tables (probe_fig3.py)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.studies.probes.figure import attention_maps, attention_pair, layer_changes_figure

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
table = pd.read_csv(snakemake.input.layers)
layer_changes_figure(
    table,
    snakemake.output.panel3,
    settings=settings,
    title=f"token {p.token} moved, ||Delta|| = {table['norm'].iloc[0]:.2f}",
)
maps_ = attention_maps(pd.read_csv(snakemake.input.scores, keep_default_na=False), "state")
attention_pair(
    [maps_["before"], maps_["after"]],
    ["before", f"token {p.short_token} moved"],
    snakemake.output.panel4,
    settings=settings,
    colorbar_label=f"layer {p.layer}, head {p.head} attention",
)
