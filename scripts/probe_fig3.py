"""Snakemake adapter: Figure 3 panels 3 (layer-wise change) and 4 (attention before/after), the
tables (plot_fig3.py draws them)."""

import pandas as pd

from wordsens.data.embed import load_encoder, model_source
from wordsens.experiments import probes
from wordsens.io import atomic_path, log_to

log_to(snakemake.log[0])
p = snakemake.params
f3 = p.fig3
tokenizer, model = load_encoder(model_source(p.model_name, snakemake.input.model), p.device, attentions=True)
text, review = (
    (f3["text"], None) if f3["text"] else probes.pick_long_text(pd.read_parquet(snakemake.input.pool), f3["min_tokens"])
)
table = probes.layer_change_table(
    model, tokenizer, text, f3["token"], norm=f3["norm"], draws=f3["gaussian_draws"], steps=f3["steps"], seed=p.seed
)
table["review_id"] = review
atomic_path(snakemake.output.layers, lambda path: table.to_csv(path, index=False))
was, now = table["attention_before"].iloc[0], table["attention_after"].iloc[0]
print(f"attention on token {f3['token']}: {was:.4f} -> {now:.4f}")
# panel 4: one head of one layer on a short text, before and after moving short_token
delta, _, _ = probes.attract_delta(
    model,
    tokenizer,
    f3["short_text"],
    f3["short_token"],
    norm=f3["norm"],
    layer=f3["layer"],
    steps=f3["steps"],
    seed=p.seed,
)
before = probes.attention_map(
    model, tokenizer, f3["short_text"], layer=f3["layer"], heads=[f3["head"]], drop_special=False
)
after = probes.attention_map(
    model,
    tokenizer,
    f3["short_text"],
    layer=f3["layer"],
    heads=[f3["head"]],
    drop_special=False,
    position=f3["short_token"],
    delta=delta,
)
scores = probes.attention_table([before, after], ["before", "after"], column="state")
atomic_path(snakemake.output.scores, lambda path: scores.to_csv(path, index=False))
