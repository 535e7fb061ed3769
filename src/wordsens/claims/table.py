"""The claims table: the paper's statements (and a few derived ones) checked on a run's own tables.

Every claim is computed from the aggregated tables the workflow writes under ``RESULTS/tables/``
(``ws_<map>.parquet``: one row per trial; ``gen_fig4_<data>.parquet``, ``gen_fig5_<data>.parquet``:
one row per simulation and search; ``trained.parquet``, the trained-encoder study: one row per
search) and gives one row per claim and scope (a data source and a slice of the grid: ``d=192``,
``d=768, n=40, retrain``, ``all d``, ``layer=3, n=128``): the statistic, its 95% interval from the
independent units it rests on (:mod:`wordsens.claims.intervals`), the expectation, the setting the
claim comes from and exactly one verdict:

``holds`` / ``fails``
    the 95% interval lies on the passing / failing side of the threshold; a universal statement ("on
    every row") holds without a counterexample and fails on one, which the note names;
``inconclusive``
    the interval holds both passing and failing values (more trials or simulations could tip it), or
    there are not enough units for an interval (the note says "not enough data" and how many);
``not run``
    the rows the claim needs are absent (the note says which and why);
``no claim``
    a number reported without an expectation (a map the paper says nothing about, counts of rows,
    a trained encoder against its random models), or a claim of the paper's data on the synthetic
    companion's rows.

Verdicts are facts about the run, never exceptions; the one exception is a generalisation row that
breaks the identity ``D1 - D0 = a (y - t0)``, which no computation of wordsens can produce: a bug,
reported as a ``ValueError`` (:func:`wordsens.studies.gen.claims.check_identity`). The intervals are
closed forms of the units (no resampling): the same tables give the same table.

Each claim (statistic, threshold and its derivation, the unit its interval rests on, the smallest
effect it fails on) and the proof of the bound behind ``fig4_rf_err``
(:func:`wordsens.claims.stats.err_lower_bound`) are documented in ``docs/claims.md``.

Modules: this one holds the entry points (:func:`compute_claims`, :func:`claims_from_results`,
:func:`read_tables`); :mod:`wordsens.claims.stats` the definitions, thresholds and rows;
:mod:`wordsens.claims.intervals` the intervals; :mod:`wordsens.claims.units` the grid points;
:mod:`wordsens.claims.slope` the log-log slope; each study's ``claims`` module (``wordsens.studies``)
the computation of its claims; :mod:`wordsens.claims.render` the text, Markdown and HTML renderings;
:mod:`wordsens.claims.files` the tables it reads and the files it writes. None of them imports torch
or the plotting libraries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..studies import registry as studies
from .files import claims_inputs
from .rows import Rows

__all__ = ["claims_from_results", "compute_claims", "read_tables"]


# ----------------------------------------------------------------------------- reading


def read_tables(results_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the claims need, keyed by file stem (``ws_rf``, ``gen_fig4_imdb``, ...): those of the
    studies with claims, and those of a study that lends its word-sensitivity rows
    (``wordsens.claims.files.claims_inputs`` splits them by map)."""
    folder = Path(results_dir) / "tables"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder: pass the workflow's results folder (config key "
            "'results', e.g. results/), which holds tables/"
        )
    tables = {}
    for path in sorted(folder.glob("*.parquet")):
        spec = studies.owner(path.stem)
        if spec is not None and (spec.claims is not None or spec.lends_ws_rows):
            tables[path.stem] = pd.read_parquet(path)
    return tables


def claims_from_results(results_dir: str | Path) -> pd.DataFrame:
    """:func:`compute_claims` on the tables of a results folder (``RESULTS/tables/*.parquet``), the
    variant maps included, as the workflow's claims rule computes them."""
    return compute_claims(claims_inputs(read_tables(results_dir)))


# ----------------------------------------------------------------------------- entry points


def compute_claims(tables: Mapping[str, pd.DataFrame], left_out: Sequence[Mapping[str, Any]] = ()) -> pd.DataFrame:
    """The claims table (columns :data:`COLUMNS`) of a run's tables.

    ``tables`` maps file stems to frames (``ws_<map>``, ``gen_fig4_<data>``, ...: each a table of a
    registered study, ``wordsens.studies``); every study with claims adds its rows in the registry's
    order (``StudySpec.claims``), reading its own tables among them. A claim whose rows are absent is
    reported "not run"; a table no study owns, a table lacking a column every row of its kind has, and
    generalisation rows that break ``D1 - D0 = a (y - t0)`` are errors. ``left_out``: the grid points the
    run's limits left out (``wordsens.pipeline.Grid.left_out``; the workflow passes them), one ``not run``
    row of the claim ``left_out`` each, after the studies' rows.
    """
    for key in tables:
        if studies.owner(key) is None:
            owned = ", ".join(f"{spec.name}: {spec.owns}" for spec in studies.specs() if spec.owns)
            raise ValueError(f"unknown table {key!r}: no registered study writes it (its tables by study: {owned})")
    rows = Rows()
    for spec in studies.specs():
        if spec.claims is not None:
            spec.claims(rows, {key: frame for key, frame in tables.items() if spec.owns_table(key)})
    for point in left_out:
        rows.left_out(point)
    return rows.frame()
