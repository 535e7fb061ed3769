"""Snakemake adapter: a seeded, balanced pool of reviews, short (data) or long (long_context); only
the tokenizer is loaded."""

import pandas as pd

from wordsens.data.embed import load_tokenizer, model_source
from wordsens.data.reviews import select_pool
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
p = snakemake.params
tokenizer = load_tokenizer(model_source(p.model_name, snakemake.input.model))
pool = select_pool(
    pd.read_parquet(snakemake.input.reviews),
    tokenizer,
    pool_size=p.pool_size,
    max_tokens=p.max_tokens,
    min_tokens=p.min_tokens,
    section=p.section,
    seed=p.seed,
)
write_table(snakemake.output.pool, pool)
print(f"pool of {len(pool)} reviews, {pool['tokens'].min()}-{pool['tokens'].max()} tokens")
