"""The claims table's files: the CSV and the report's HTML page (``write_claims``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..io import atomic_path
from .render import claims_html

__all__ = ["write_claims"]


def write_claims(frame: pd.DataFrame, csv: str | Path, html: str | Path) -> None:
    """The claims table (``wordsens.studies.claims.compute_claims``) as CSV and as the report's HTML page."""
    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.6g"))
    page = claims_html(frame)

    def write_page(path: Path) -> None:
        path.write_text(page)

    atomic_path(html, write_page)
