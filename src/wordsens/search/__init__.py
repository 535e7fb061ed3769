"""Word-sensitivity searches: ``estimate`` (the entry point, ``WSResult``), the search engine
(``Problem``, ``SearchContext``, ``wordsens.search.engine``), the fast paths of the maps (``rf``,
``drf``, ``attention``, ``variants``, ``heads``, ``layers``), the full-map search of maps without one
(``full_map``) and the authors' algorithm (``reference``).

The word sensitivity of a feature map ``phi`` at a sample ``X`` (n, d) is
``sup_{i, ||Delta|| <= sqrt(d)} ||phi(X^i(Delta)) - phi(X)|| / ||phi(X)||``; ``estimate`` gives a
lower bound (and, for RF, a certified upper bound).
"""

from .engine import Problem, SearchContext
from .estimate import METHODS, WSResult, estimate

__all__ = ["METHODS", "Problem", "SearchContext", "WSResult", "estimate"]
