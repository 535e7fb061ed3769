"""The data: IMDb reviews and their pool (``wordsens.data.reviews``), encoders and their hidden
states (``wordsens.data.embed``), the offline demo corpus and models (``wordsens.data.demo``),
samples normalised to the data assumption (``wordsens.data.samples``), the checksummed embedding
store (``wordsens.data.store``), what is known about the encoders without loading them
(``wordsens.data.models``), the checks of the pool and the store (``wordsens.data.inputs``, NumPy only)
and whether the Hugging Face Hub can be used (``wordsens.data.hub``). ``models``, ``inputs`` and ``hub``
are torch-free and pandas-free: planning imports them.

This face imports nothing eagerly: the planner imports ``wordsens.data.models`` (torch-free, and
without pandas) through it. Import the submodules, e.g. ``from wordsens.data import embed``.
"""

__all__ = ["demo", "embed", "hub", "inputs", "models", "reviews", "samples", "store"]
