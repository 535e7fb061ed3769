"""The data: IMDb reviews and their pool (``wordsens.data.reviews``), encoders and their hidden
states (``wordsens.data.embed``), the offline demo corpus and models (``wordsens.data.demo``),
samples normalised to the data assumption (``wordsens.data.samples``) and what is known about the
encoders without loading them (``wordsens.data.models``).

This face imports nothing eagerly: the planner imports ``wordsens.data.models`` (torch-free, and
without pandas) through it. Import the submodules, e.g. ``from wordsens.data import embed``.
"""

__all__ = ["demo", "embed", "models", "reviews", "samples"]
