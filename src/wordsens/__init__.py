"""wordsens: word sensitivity of attention layers vs. random features (docs/architecture.md walks through it).

Sub-packages, each with its public face in its ``__init__``: ``maps`` (the feature maps and their registry),
``search`` (word-sensitivity estimates), ``generalisation`` (the paper's Figures 4 and 5), ``data`` (reviews,
encoders, samples), ``studies`` (each experiment: one folder and one ``StudySpec``), ``pipeline`` (the
torch-free planning the Snakefile imports), ``claims``, ``plots``, ``compute`` (what jobs cost and where they
run) and ``cli``; beside them ``seeds``, ``io``, ``linalg`` and ``theory`` (the RF law).
"""

__version__ = "0.1.0"
