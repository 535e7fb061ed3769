"""wordsens: word sensitivity of attention layers vs. random features.

Numerics live in small modules: ``maps`` (the four feature maps and their weight samplers),
``ws`` (word-sensitivity search and certificates), ``preprocess`` (the data assumption),
``resources`` (memory estimates), ``seeds`` (stable seeds), ``io`` (files).
"""

__version__ = "0.1.0"

# Bump when a change of the numerics changes results: it is part of every experiment job's params,
# so Snakemake re-runs the affected jobs (it does not see edits to imported modules).
NUMERICS_VERSION = "ws-1"
