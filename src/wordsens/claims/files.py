"""The claims table's files: its inputs (the run's result tables, ``claims_inputs``) and its outputs
(CSV and the report's HTML page, ``write_claims``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..io import atomic_path
from ..studies import registry as studies
from .render import claims_html

__all__ = ["claims_inputs", "write_claims"]


def claims_inputs(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables the claims are computed from (``wordsens.claims.table.compute_claims``): the tables of
    the studies with claims as they are, and the table of a study that lends its word-sensitivity rows
    (``StudySpec.lends_ws_rows``) split by map into ``ws_<map>`` for every map that has no table of the
    paper's grids (a map the paper says nothing about gets its slope, reported without a verdict)."""
    lenders = {stem for stem in tables if (spec := studies.owner(stem)) is not None and spec.lends_ws_rows}
    out = {key: frame for key, frame in tables.items() if key not in lenders}
    for stem in lenders:
        for map_name, rows in tables[stem].groupby("map", sort=False):
            out.setdefault(f"ws_{map_name}", rows.reset_index(drop=True))
    return out


def write_claims(frame: pd.DataFrame, csv: str | Path, html: str | Path) -> None:
    """The claims table (``wordsens.claims.table.compute_claims``) as CSV and as the report's HTML page."""
    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.6g"))
    page = claims_html(frame)

    def write_page(path: Path) -> None:
        path.write_text(page)

    atomic_path(html, write_page)
