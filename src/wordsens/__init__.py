"""wordsens: word sensitivity of attention layers vs. random features.

Sub-packages, each with its public face in its ``__init__``: ``maps`` (the feature maps, their
registry and weight samplers), ``search`` (word-sensitivity estimates and certificates),
``generalisation`` (the paper's Figures 4 and 5), ``data`` (reviews, encoders, samples),
``experiments`` (the bodies of the workflow's jobs), ``pipeline`` (configuration, job grid, memory
and time estimates: what the Snakefile imports, torch-free), ``claims`` (the claims table),
``plots`` (the figures), ``compute`` (what jobs cost and where they run) and ``cli`` (the
``wordsens`` command, one module per subcommand). Beside them: ``seeds`` (stable seeds), ``io``
(files), ``linalg`` (shared dense products) and ``theory`` (the RF law).
"""

__version__ = "0.1.0"

# Versions of the numerics, per experiment: bump one when a change of the numerics changes its
# results. Each is part of the params of every job of its experiment (and recorded in its rows),
# so Snakemake re-runs exactly those jobs (it does not see edits to imported modules).
#   ws:  word-sensitivity estimates (wordsens.search); ws-2: attention maps also
#        run the authors' algorithm as a candidate where its schedule fits the step budget, and the
#        variants polish their leader (the block too, 30 float64 steps); ws-3: RF's search keeps its
#        directions' images exact (no Gram-Schmidt drift), DRF runs 16 restarts to convergence and the
#        block screens 48 starts (20 steps) and keeps 4
#   gen: generalisation simulations (wordsens.generalisation); gen-2: the first stage solved by a
#        pseudo-inverse through QR, with the alignment ratio and fit diagnostics per row; gen-3: RF's
#        weights on the span of the samples drawn through the unique symmetric square root of their
#        Gram matrix (the same numbers on every CPU); gen-4: the penalised searches of smooth maps (RAF)
#        by Levenberg-Marquardt steps (converged, lower losses than the ascent's step cap gave); gen-5:
#        RF's span draw splits the block from the rest of each sample (a Cholesky factor of the rests'
#        Gram matrix, no m x m eigendecomposition): the same law, other numbers
#   trained: the trained study (wordsens.experiments.trained: the samples entering each encoder layer
#        and the searches of its maps and their random models); trained-1: its first version; trained-2:
#        drawn word rows, the paper's and the model's conventions, the counterparts and their draws;
#        trained-3: the attention on [CLS]/[SEP], the biases' share and the model's row norm per row, and
#        the samples of word rows alone (keys)
#   swaps: the swaps study (wordsens.experiments.swaps: real words scored by wordsens.search.swaps
#        beside the continuous search); swaps-1: its first version
NUMERICS_VERSIONS = {"ws": "ws-3", "gen": "gen-5", "trained": "trained-3", "swaps": "swaps-1"}
