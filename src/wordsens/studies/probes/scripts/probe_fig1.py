"""Snakemake adapter: Figure 1 left, the table: first-layer attention of two sentences differing in
one word (plot_fig1.py draws it)."""

from wordsens.data.pretrained import load_encoder, model_source
from wordsens.io import atomic_path, log_to
from wordsens.studies.probes import run as probes

log_to(snakemake.log[0])
p = snakemake.params
tokenizer, model = load_encoder(model_source(p.model_name, snakemake.input.model), p.device, attentions=True)
maps_ = [
    probes.attention_map(model, tokenizer, s, layer=p.fig1["layer"], heads=p.fig1["heads"]) for s in p.fig1["sentences"]
]
table = probes.attention_table(maps_, p.fig1["sentences"])
atomic_path(snakemake.output.table, lambda path: table.to_csv(path, index=False))
