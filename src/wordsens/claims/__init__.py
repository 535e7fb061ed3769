"""The claims table: the paper's statements (and a few derived ones) checked on a run's own tables.

What each claim means, how to read its interval and the proof of the bound are in
:mod:`wordsens.claims.table`, which computes the table (:func:`compute_claims`,
:func:`claims_from_results`); :mod:`wordsens.claims.stats` holds the definitions and the bootstrap,
:mod:`wordsens.claims.checks` the computation of each claim, :mod:`wordsens.claims.render` the text,
Markdown and HTML renderings, :mod:`wordsens.claims.files` the tables it reads and the files it
writes. None of them imports torch or the plotting libraries.
"""

from .files import claims_inputs, write_claims
from .render import claims_html, claims_markdown, format_claims
from .stats import CLAIMS, COLUMNS, KNOWN_MAPS, Claim, err_lower_bound
from .table import claims_from_results, compute_claims, read_tables

__all__ = [
    "CLAIMS",
    "COLUMNS",
    "KNOWN_MAPS",
    "Claim",
    "claims_from_results",
    "claims_html",
    "claims_inputs",
    "claims_markdown",
    "compute_claims",
    "err_lower_bound",
    "format_claims",
    "read_tables",
    "write_claims",
]
