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
reported as a ``ValueError`` (:func:`wordsens.claims.gen_checks.check_identity`). The intervals are
closed forms of the units (no resampling): the same tables give the same table.

Each claim (statistic, threshold and its derivation, the unit its interval rests on, the smallest
effect it fails on) and the proof of the bound behind ``fig4_rf_err``
(:func:`wordsens.claims.stats.err_lower_bound`) are documented in ``docs/claims.md``.

Modules: this one holds the entry points (:func:`compute_claims`, :func:`claims_from_results`,
:func:`read_tables`); :mod:`wordsens.claims.stats` the definitions, thresholds and rows;
:mod:`wordsens.claims.intervals` the intervals; :mod:`wordsens.claims.units` the grid points;
:mod:`wordsens.claims.slope` the log-log slope; :mod:`wordsens.claims.checks`,
:mod:`wordsens.claims.gen_checks` and :mod:`wordsens.claims.trained_checks` the computation of each
claim; :mod:`wordsens.claims.render` the text, Markdown and HTML renderings;
:mod:`wordsens.claims.files` the tables it reads and the files it writes. None of them imports torch
or the plotting libraries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .checks import ws_claims
from .files import claims_inputs
from .gen_checks import gen_claims
from .rows import Rows
from .stats import table_kind
from .swap_checks import SWAPS_REQUIRED, swap_claims
from .trained_checks import TRAINED_REQUIRED, trained_claims

__all__ = ["claims_from_results", "compute_claims", "read_tables"]

_WS_REQUIRED = ("map", "data", "d", "n", "trial", "lower")
_GEN_REQUIRED = (
    "figure",
    "map",
    "data",
    "d",
    "n",
    "N",
    "simulation",
    "training",
    "loss",
    "penalty",
    "y",
    "t0",
    "D0",
    "D1",
    "err",
    "gamma_min",
)
TRAINED = "trained"  # the trained-encoder study's table (wordsens.experiments.trained)
SWAPS = "swaps"  # the swaps study's table (wordsens.experiments.swaps)


# ----------------------------------------------------------------------------- reading


def read_tables(results_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the claims need, keyed by file stem (``ws_rf``, ``gen_fig4_imdb``, ``trained``, ...),
    and the ``variants`` table when the run has one (``wordsens.claims.files.claims_inputs`` splits it
    by map)."""
    folder = Path(results_dir) / "tables"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder: pass the workflow's results folder (config key "
            "'results', e.g. results/), which holds tables/"
        )
    tables = {}
    for path in sorted(folder.glob("*.parquet")):
        if table_kind(path.stem) is not None or path.stem in ("variants", TRAINED, SWAPS):
            tables[path.stem] = pd.read_parquet(path)
    return tables


def claims_from_results(results_dir: str | Path) -> pd.DataFrame:
    """:func:`compute_claims` on the tables of a results folder (``RESULTS/tables/*.parquet``), the
    variant maps included, as the workflow's claims rule computes them."""
    return compute_claims(claims_inputs(read_tables(results_dir)))


def _check_columns(key: str, frame: pd.DataFrame, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"table {key!r} lacks the column(s) {missing}: it was not written by the workflow's "
            "aggregation rules (re-run snakemake to rebuild it)"
        )


# ----------------------------------------------------------------------------- entry points


def compute_claims(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The claims table (columns :data:`COLUMNS`) of a run's tables.

    ``tables`` maps file stems to frames: ``ws_<map>`` (any map; ``rf``, ``drf``, ``raf``,
    ``relu_raf`` carry the paper's claims, any other gets ``map_slope``) and ``gen_fig4_<data>``,
    ``gen_fig5_<data>``, and ``trained`` (the trained-encoder study, reported without a verdict:
    ``wordsens.claims.trained_checks``). A claim whose rows are absent is reported "not run"; a
    table lacking a column every row of its kind has, and generalisation rows that break
    ``D1 - D0 = a (y - t0)`` (``wordsens.claims.gen_checks.check_identity``), are errors.
    """
    ws: dict[str, pd.DataFrame] = {}
    gen: dict[str, pd.DataFrame] = {}
    trained: pd.DataFrame | None = None
    swaps: pd.DataFrame | None = None
    for key, frame in tables.items():
        if key == TRAINED:
            _check_columns(key, frame, TRAINED_REQUIRED)
            trained = None if frame.empty else frame
            continue
        if key == SWAPS:
            _check_columns(key, frame, SWAPS_REQUIRED)
            swaps = None if frame.empty else frame
            continue
        kind = table_kind(key)
        if kind is None:
            raise ValueError(
                f"unknown table {key!r}: expected ws_<map>, gen_fig4_<data>, gen_fig5_<data>, {TRAINED} or {SWAPS}"
            )
        if kind[0] == "ws":
            _check_columns(key, frame, _WS_REQUIRED)
            if not frame.empty:
                ws[kind[1]] = frame
        else:
            _check_columns(key, frame, _GEN_REQUIRED)
            if not frame.empty:
                gen[key] = frame
    rows = Rows()
    ws_claims(rows, ws)
    gen_claims(rows, gen)
    trained_claims(rows, trained)
    swap_claims(rows, swaps)
    return rows.frame()
