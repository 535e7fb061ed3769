"""Snakemake adapter: Figure 1 right, the table: a causal LM's answers to two prompts differing in
one word (plot_lm.py draws it)."""

import pandas as pd

from wordsens.data.pretrained import model_source
from wordsens.io import atomic_path, log_to
from wordsens.studies.probes.run import lm_answers

log_to(snakemake.log[0])
p = snakemake.params
answers = lm_answers(
    model_source(p.model_name, snakemake.input.model),
    p.lm["prompts"],
    max_new_tokens=p.lm["max_new_tokens"],
    device=p.lm["device"],
)
table = pd.DataFrame({"prompt": p.lm["prompts"], "answer": answers})
atomic_path(snakemake.output.table, lambda path: table.to_csv(path, index=False))
