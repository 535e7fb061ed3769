"""The claims table: the paper's statements (and a few derived ones) checked on a run's own tables.

The verdicts and the intervals are described in :mod:`wordsens.claims.table`, which computes the table
(:func:`compute_claims`, :func:`claims_from_results`); each claim, its threshold and where it comes from in
``docs/claims.md``. :mod:`wordsens.claims.stats` holds the definitions and the rows,
:mod:`wordsens.claims.slope` the package's one log-log slope, :mod:`wordsens.claims.intervals` the intervals
from the independent units, :mod:`wordsens.claims.units` the grid points, :mod:`wordsens.claims.rows` the rows
with their verdicts, :mod:`wordsens.claims.render` the text, Markdown and HTML renderings,
:mod:`wordsens.claims.files` the tables it reads and the files it writes. Each study computes its own claims
(``StudySpec.claims``, in its folder of ``wordsens.studies``); the table runs them in the registry's order.
:data:`CLAIMS` holds the shared definitions; a study may define its own (``StudySpec.definitions``), and
:func:`catalogue` gives them all.
None of them imports torch or the plotting libraries.
"""

from .files import claims_inputs, write_claims
from .render import claims_html, claims_markdown, format_claims
from .slope import law_slope, loglog_slope
from .stats import CLAIMS, COLUMNS, KNOWN_MAPS, VERDICTS, Claim, catalogue, err_lower_bound
from .table import claims_from_results, compute_claims, read_tables

__all__ = [
    "CLAIMS",
    "COLUMNS",
    "KNOWN_MAPS",
    "VERDICTS",
    "Claim",
    "catalogue",
    "claims_from_results",
    "claims_html",
    "claims_inputs",
    "claims_markdown",
    "compute_claims",
    "err_lower_bound",
    "format_claims",
    "law_slope",
    "loglog_slope",
    "read_tables",
    "write_claims",
]
