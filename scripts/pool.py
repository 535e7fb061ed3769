"""Snakemake adapter: a seeded, balanced pool of reviews, short (data) or long (long_context); only
the tokenizer is loaded. The tokenizer is checked first (docs/inputs.md): its vocabulary against the
model's word-embedding rows (config.json), then its [UNK] share over the pool's tokens against
data.max_unk_share, which reaches this job through the configuration (a gate, not a param: a change of
it re-runs nothing). A refused pool is not written, so nothing downstream runs."""

import pandas as pd

from wordsens.data.inputs import check_unk_share, check_vocabulary
from wordsens.data.models import model_vocab_size
from wordsens.data.pretrained import load_tokenizer, model_source
from wordsens.data.reviews import select_pool
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
p = snakemake.params
source = model_source(p.model_name, snakemake.input.model)
tokenizer = load_tokenizer(source)
rows = model_vocab_size(source)  # config.json's vocab_size: the weights are not loaded
print(check_vocabulary(len(tokenizer), rows, source), flush=True)
pool = select_pool(
    pd.read_parquet(snakemake.input.reviews),
    tokenizer,
    pool_size=p.pool_size,
    max_tokens=p.max_tokens,
    min_tokens=p.min_tokens,
    section=p.section,
    seed=p.seed,
)
print(
    check_unk_share(
        pool["tokens"],
        pool["unk"],
        limit=snakemake.config["data"]["max_unk_share"],
        tokenizer=source,
        unk_token=tokenizer.unk_token,
        tokenizer_size=len(tokenizer),
        embedding_rows=rows,
    )
)
write_table(snakemake.output.pool, pool)
print(f"pool of {len(pool)} reviews, {pool['tokens'].min()}-{pool['tokens'].max()} tokens")
