"""The statistics of the claims table: the paper's statements checked on a run's own tables
(docs/claims.md): the definitions (``stats``), the rows and their verdicts (``rows``), the intervals from
the independent units (``intervals``), the one log-log slope (``slope``), the grid points (``units``),
the renderings and files (``render``). It knows no study: each study computes its own claims
(``StudySpec.claims``); a run's table is ``wordsens.studies.claims``'s. Imports neither torch nor plotting.
"""

from .render import claims_html, claims_markdown, format_claims, pipe_table, write_claims
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
    "pipe_table",
    "write_claims",
]
