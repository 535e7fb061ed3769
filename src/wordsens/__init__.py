"""wordsens: word sensitivity of attention layers vs. random features.

Sub-packages, each with its public face in its ``__init__``: ``maps`` (the feature maps, their registry and
weight samplers), ``search`` (word-sensitivity estimates and certificates), ``generalisation`` (the paper's
Figures 4 and 5), ``data`` (reviews, encoders, samples), ``experiments`` (what the bodies of the workflow's
jobs share), ``studies`` (each experiment of the paper and each study beyond it: one folder and one
registration, ``StudySpec``), ``pipeline`` (configuration, job grid, memory and time estimates: what the
Snakefile imports, torch-free), ``claims`` (the claims table), ``plots`` (the figures), ``compute`` (what jobs
cost and where they run) and ``cli`` (the ``wordsens`` command, one module per subcommand). Beside them:
``seeds`` (stable seeds), ``io`` (files), ``linalg`` (shared dense products) and ``theory`` (the RF law).
"""

__version__ = "0.1.0"
