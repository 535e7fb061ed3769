"""The claims table of a run (docs/claims.md): the paper's statements checked on the run's own tables below
``RESULTS/tables/``, each registered study adding its rows (``StudySpec.claims``) in the registry's order.
It stands above the registry and the claims package (``wordsens.claims``), which knows no study. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..claims.rows import Rows
from ..claims.stats import CLAIMS, Claim
from . import registry
from .registry import bound


def catalogue() -> dict[str, Claim]:
    """Every claim by id: the shared ones (``wordsens.claims.stats.CLAIMS``) and those the registered studies
    define (``StudySpec.definitions``), in the registry's order; ValueError where two define one id."""
    out = dict(CLAIMS)
    for spec in registry.specs():
        for claim in bound(spec.definitions):
            if claim.id in out:
                raise ValueError(f"study {spec.name!r} defines the claim {claim.id!r}, which is defined already")
            out[claim.id] = claim
    return out


def read_tables(results_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the claims need, keyed by file stem (``ws_rf``, ``gen_fig4_imdb``, ...): those of the studies
    whose tables the claims read (``StudySpec.checked``)."""
    folder = Path(results_dir) / "tables"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder: pass the workflow's results folder (config key 'results', e.g. results/), "
            "which holds tables/"
        )
    tables = {}
    for path in sorted(folder.glob("*.parquet")):
        spec = registry.owner(path.stem)
        if spec is not None and spec.checked():
            tables[path.stem] = pd.read_parquet(path)
    return tables


def claims_inputs(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables the claims are computed from: the tables of the studies with claims as they are, and the
    table of a study that lends its word-sensitivity rows (``StudySpec.lends_ws_rows``) split by map into
    ``ws_<map>`` for every map that has no table of the paper's grids (a map the paper says nothing about gets
    its slope, reported without a verdict)."""
    lenders = {stem for stem in tables if (spec := registry.owner(stem)) is not None and spec.lends_ws_rows}
    out = {key: frame for key, frame in tables.items() if key not in lenders}
    for stem in lenders:
        for map_name, rows in tables[stem].groupby("map", sort=False):
            out.setdefault(f"ws_{map_name}", rows.reset_index(drop=True))
    return out


def claims_from_results(results_dir: str | Path) -> pd.DataFrame:
    """``compute_claims`` on the tables of a results folder, the lent rows included, as the workflow's claims
    rule computes them."""
    return compute_claims(claims_inputs(read_tables(results_dir)))


def compute_claims(tables: Mapping[str, pd.DataFrame], left_out: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    """The claims table (columns ``wordsens.claims.COLUMNS``) of a run's tables (file stems -> frames, each a
    table of a registered study): every study with claims adds its rows, reading its own tables; a claim whose
    rows are absent is reported "not run"; a table no study owns and a table lacking a column its claims read
    are errors. ``left_out``: the grid points the run's limits left out (``wordsens.pipeline.Grid.left_out``),
    one ``not run`` row of the claim ``left_out`` each, after the studies' rows."""
    for key in tables:
        if registry.owner(key) is None:
            owned = ", ".join(f"{spec.name}: {spec.owns}" for spec in registry.specs() if spec.owns)
            raise ValueError(f"unknown table {key!r}: no registered study writes it (its tables by study: {owned})")
    rows = Rows(catalogue())
    for spec in registry.specs():
        if spec.claims is not None:
            bound(spec.claims)(rows, {key: frame for key, frame in tables.items() if spec.owns_table(key)})
    for point in left_out:
        rows.left_out(point)
    return rows.frame()
