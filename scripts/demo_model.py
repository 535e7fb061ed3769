"""Snakemake adapter: build the demo's tiny BERT (random weights) with save_pretrained."""

from pathlib import Path

from wordsens.data.demo import make_tiny_bert
from wordsens.io import log_to

log_to(snakemake.log[0])
out = make_tiny_bert(Path(snakemake.output.config).parent, seed=snakemake.params.seed)
print(f"tiny BERT saved in {out}")
