"""Result tables: concatenation with checks, atomic Parquet + CSV output, the claims table's files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .io import CorruptCache, atomic_path, write_table

__all__ = ["claims_inputs", "concatenate", "write_both", "write_claims"]

# Metric columns that must be present and finite in every word-sensitivity row.
_FINITE = ("lower", "phi_norm", "delta_norm")


def concatenate(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Read per-job Parquet files and stack them; a missing, unreadable or non-finite file is an error."""
    frames = []
    for path in paths:
        try:
            frame = pd.read_parquet(path)
        except Exception as err:  # pyarrow raises several types for damaged files
            raise CorruptCache(f"{path} cannot be read ({type(err).__name__}: {err}); delete it and re-run") from err
        if frame.empty:
            raise CorruptCache(f"{path} holds no rows; delete it and re-run")
        for column in _FINITE:
            if column in frame and not np.isfinite(frame[column].to_numpy(dtype=float)).all():
                raise ValueError(f"{path} has non-finite values in column {column!r}")
        frames.append(frame)
    if not frames:
        raise ValueError("no result files to aggregate: the grid selected no job")
    return pd.concat(frames, ignore_index=True)


def write_both(frame: pd.DataFrame, parquet: str | Path, csv: str | Path) -> None:
    write_table(parquet, frame)
    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.10g"))


def claims_inputs(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables the claims are computed from (``wordsens.claims.compute_claims``): the ``ws_<map>``
    and ``gen_<figure>_<data>`` tables as they are, and the ``variants`` table split by map into
    ``ws_<map>`` for every map that has no table of the paper's grids (a variant map gets its slope,
    reported without a verdict)."""
    out = {key: frame for key, frame in tables.items() if key != "variants"}
    variants = tables.get("variants")
    if variants is not None:
        for map_name, rows in variants.groupby("map", sort=False):
            out.setdefault(f"ws_{map_name}", rows.reset_index(drop=True))
    return out


def write_claims(frame: pd.DataFrame, csv: str | Path, html: str | Path) -> None:
    """The claims table (``wordsens.claims.compute_claims``) as CSV and as the report's HTML page."""
    from .claims import claims_html

    atomic_path(csv, lambda p: frame.to_csv(p, index=False, float_format="%.6g"))
    page = claims_html(frame)

    def write_page(path: Path) -> None:
        path.write_text(page)

    atomic_path(html, write_page)
