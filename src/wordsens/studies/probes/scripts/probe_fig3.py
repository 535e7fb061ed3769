"""Snakemake adapter: Figure 3 panels 3 (layer-wise change) and 4 (attention before/after), the
tables (wordsens.studies.probes.run.fig3_tables; plot_fig3.py draws them)."""

import pandas as pd

from wordsens.data.pretrained import load_encoder, model_source
from wordsens.io import atomic_path, log_to
from wordsens.studies.probes import run as probes

log_to(snakemake.log[0])
p = snakemake.params
tokenizer, model = load_encoder(model_source(p.model_name, snakemake.input.model), p.device, attentions=True)
# the review pool is an input where panel 3's text is drawn from it (probes.fig3.text: null)
pool = pd.read_parquet(snakemake.input.pool) if snakemake.input.get("pool") else None
layers, scores = probes.fig3_tables(model, tokenizer, p.fig3, pool=pool, seed=p.seed)
atomic_path(snakemake.output.layers, lambda path: layers.to_csv(path, index=False))
atomic_path(snakemake.output.scores, lambda path: scores.to_csv(path, index=False))
was, now = layers["attention_before"].iloc[0], layers["attention_after"].iloc[0]
print(f"attention on token {p.fig3['token']}: {was:.4f} -> {now:.4f}")
