"""wordsens: word sensitivity of attention layers vs. random features.

Numerics live in small modules: ``maps`` (the four feature maps and their weight samplers),
``ws`` (word-sensitivity search and certificates), ``preprocess`` (the data assumption),
``resources`` (memory estimates), ``seeds`` (stable seeds), ``io`` (files).
"""

__version__ = "0.1.0"

# Versions of the numerics, per experiment: bump one when a change of the numerics changes its
# results. Each is part of the params of every job of its experiment (and recorded in its rows),
# so Snakemake re-runs exactly those jobs (it does not see edits to imported modules).
#   ws:  word-sensitivity estimates (wordsens.ws and the modules behind it); ws-2: attention maps also
#        run the authors' algorithm as a candidate where its schedule fits the step budget, and the
#        variants polish their leader (the block too, 30 float64 steps)
#   gen: generalisation simulations (wordsens.generalisation); gen-2: the first stage solved by a
#        pseudo-inverse through QR, with the alignment ratio and fit diagnostics per row; gen-3: RF's
#        weights on the span of the samples drawn through the unique symmetric square root of their
#        Gram matrix (the same numbers on every CPU)
NUMERICS_VERSIONS = {"ws": "ws-2", "gen": "gen-3"}
