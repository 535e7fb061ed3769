"""Snakemake adapter: Figure 1 left, first-layer attention of two sentences differing in one word."""

from wordsens.data.embed import load_encoder, model_source
from wordsens.experiments import probes
from wordsens.io import atomic_path, log_to
from wordsens.plots import attention_pair, run_stamp

log_to(snakemake.log[0])
p = snakemake.params
settings = {**p.plots, "stamp": run_stamp(snakemake.config, model=p.model_name)}  # on a random model
tokenizer, model = load_encoder(model_source(p.model_name, snakemake.input.model), p.device, attentions=True)
maps_ = [
    probes.attention_map(model, tokenizer, s, layer=p.fig1["layer"], heads=p.fig1["heads"]) for s in p.fig1["sentences"]
]
table = probes.attention_table(maps_, p.fig1["sentences"])
atomic_path(snakemake.output.table, lambda path: table.to_csv(path, index=False))
heads = "all heads" if p.fig1["heads"] == "all" else f"heads {p.fig1['heads']}"
attention_pair(
    maps_,
    [f'"{s}"' for s in p.fig1["sentences"]],
    snakemake.output.figures,
    settings=settings,
    colorbar_label=f"layer {p.fig1['layer']} attention ({heads})",
)
