"""Snakemake adapter: Figure 1 left, drawn from its table (probe_fig1.py)."""

import pandas as pd

from wordsens.io import log_to
from wordsens.studies.probes.figure import attention_maps, attention_pair

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": p.stamp}  # the run's stamp ("toy demo: ..." on a random model)
maps_ = attention_maps(pd.read_csv(snakemake.input.table, keep_default_na=False), "sentence")
heads = "all heads" if p.heads == "all" else f"heads {p.heads}"
attention_pair(
    list(maps_.values()),
    [f'"{s}"' for s in maps_],
    snakemake.output.figures,
    settings=settings,
    colorbar_label=f"layer {p.layer} attention ({heads})",
)
