"""The data: IMDb reviews and their pool (``reviews``), pre-trained models and how they load
(``pretrained``), encoders' hidden states (``embed``), the offline demo corpus and models (``demo``),
samples normalised to the data assumption (``samples``), the checksummed embedding store (``store``), what
is known about the encoders without loading them (``models``), the checks of the pool and the store
(``inputs``) and whether the Hugging Face Hub can be used (``hub``).

This face imports nothing eagerly: ``models``, ``inputs``, ``hub`` and ``pretrained`` are torch-free and
pandas-free at import (planning imports the first three). Import the submodules, e.g.
``from wordsens.data import embed``.
"""

__all__ = ["demo", "embed", "hub", "inputs", "models", "pretrained", "reviews", "samples", "store"]
