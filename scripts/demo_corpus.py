"""Snakemake adapter: generate the demo's aclImdb-shaped corpus."""

from pathlib import Path

from wordsens.data.demo import make_corpus
from wordsens.io import log_to

log_to(snakemake.log[0])
root = Path(snakemake.output.corpus)
make_corpus(root.parent, seed=snakemake.params.seed)
print(f"wrote {sum(1 for _ in root.rglob('*.txt'))} reviews under {root}")
