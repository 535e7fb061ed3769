"""The statistics of the claims table: the paper's statements (and a few derived ones) checked on a run's own
tables (each claim, its threshold and where it comes from: ``docs/claims.md``). :mod:`~wordsens.claims.stats`
holds the shared definitions (:data:`CLAIMS`), :mod:`~wordsens.claims.rows` the rows and their verdicts,
:mod:`~wordsens.claims.intervals` the intervals from the independent units, :mod:`~wordsens.claims.slope`
the package's one log-log slope, :mod:`~wordsens.claims.units` the grid points,
:mod:`~wordsens.claims.render` the renderings and :mod:`~wordsens.claims.files` the files. It knows no
study: each study computes its own claims (``StudySpec.claims``) and the table of a run is
``wordsens.studies.claims``'s. None of them imports torch or the plotting libraries.
"""

from .files import write_claims
from .render import claims_html, claims_markdown, format_claims
from .slope import law_slope, loglog_slope
from .stats import CLAIMS, COLUMNS, KNOWN_MAPS, VERDICTS, Claim, err_lower_bound

__all__ = [
    "CLAIMS",
    "COLUMNS",
    "KNOWN_MAPS",
    "VERDICTS",
    "Claim",
    "claims_html",
    "claims_markdown",
    "err_lower_bound",
    "format_claims",
    "law_slope",
    "loglog_slope",
    "write_claims",
]
