"""Snakemake adapter: read the IMDb reviews from the configured source into one Parquet file."""

from wordsens.data.reviews import load_reviews
from wordsens.io import log_to, write_table

log_to(snakemake.log[0])
p = snakemake.params
# a local copy (the demo corpus, data.path) is an input; the Hub source has none
path = snakemake.input.get("local_copy", p.path)
reviews = load_reviews(p.source, path=path, split=p.split, hub_name=p.hub_name)
write_table(snakemake.output.reviews, reviews)
print(f"{len(reviews)} reviews ({int(reviews['label'].sum())} positive) from {p.source}")
