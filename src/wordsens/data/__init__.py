"""The data: IMDb reviews and their pool (``reviews``), loading models (``pretrained``), hidden states
(``embed``), the embedding store (``store``), samples (``samples``, ``vocabulary``), what is known of the
encoders without loading them (``models``), the input checks (``inputs``), the Hub (``hub``), the offline
demo (``demo``) and what a command loads by name (``sources``). Nothing is imported eagerly: import the
submodules (``models``, ``inputs``, ``hub`` and ``pretrained`` are torch-free and pandas-free at import).
"""

__all__ = ["demo", "embed", "hub", "inputs", "models", "pretrained", "reviews", "samples", "store"]
