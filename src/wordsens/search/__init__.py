"""Word-sensitivity searches: ``estimate`` (the entry point, ``WSResult``), the search engine
(``Problem``, ``SearchContext``, ``wordsens.search.engine``), the fast paths of the maps (``rf``,
``drf``, ``attention``, ``variants``, ``heads``), the full-map search of maps without one
(``full_map``), the authors' algorithm (``reference``) and real words (``swaps``).
"""

from .engine import Problem, SearchContext
from .estimate import METHODS, WSResult, estimate

__all__ = ["METHODS", "Problem", "SearchContext", "WSResult", "estimate"]
