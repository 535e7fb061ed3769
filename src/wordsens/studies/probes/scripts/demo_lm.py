"""Snakemake adapter: build the demo's tiny causal language model (random weights)."""

from pathlib import Path

from wordsens.data.demo import make_tiny_causal_lm
from wordsens.io import log_to

log_to(snakemake.log[0])
folder = make_tiny_causal_lm(Path(snakemake.output.config).parent, seed=snakemake.params.seed)
print(f"tiny causal LM saved in {folder}")
