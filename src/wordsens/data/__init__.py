"""The data: IMDb reviews and their pool (``wordsens.data.reviews``), pre-trained models and how they
load (``wordsens.data.pretrained``), encoders' hidden states (``wordsens.data.embed``), the offline
demo corpus and models (``wordsens.data.demo``), samples normalised to the data assumption
(``wordsens.data.samples``), the checksummed embedding store (``wordsens.data.store``), what is
known about the encoders without loading them (``wordsens.data.models``), the checks of the pool and
the store (``wordsens.data.inputs``, NumPy only) and whether the Hugging Face Hub can be used
(``wordsens.data.hub``). ``models``, ``inputs``, ``hub`` and ``pretrained`` are torch-free and
pandas-free at import: planning imports the first three, and the maps of a pre-trained checkpoint
load their weights through the fourth.

This face imports nothing eagerly: the planner imports ``wordsens.data.models`` (torch-free, and
without pandas) through it. Import the submodules, e.g. ``from wordsens.data import embed``.
"""

__all__ = ["demo", "embed", "hub", "inputs", "models", "pretrained", "reviews", "samples", "store"]
