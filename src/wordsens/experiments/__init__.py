"""The bodies of the workflow's jobs: word-sensitivity and generalisation trials as tidy result rows
with their provenance (``wordsens.experiments.rows``), and the probes of pre-trained encoders and
causal LMs behind Figures 1 and 3 (``wordsens.experiments.probes``).
"""

from .rows import config_hash, gen_rows, provenance, token_kinds, ws_rows

__all__ = ["config_hash", "gen_rows", "provenance", "token_kinds", "ws_rows"]
