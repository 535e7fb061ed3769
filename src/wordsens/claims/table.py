"""The claims table: the paper's statements (and a few derived ones) checked on a run's own tables.

Every claim is computed from the aggregated tables the workflow writes under ``RESULTS/tables/``
(``ws_<map>.parquet``: one row per trial; ``gen_fig4_<data>.parquet``, ``gen_fig5_<data>.parquet``:
one row per simulation and search) and gives one row per claim and scope: the statistic, its 95%
bootstrap interval, the expectation and a verdict. Verdicts are facts about the run, never
exceptions: a claim that fails, or that the run has no rows for ("not run"), is a row like any
other.

Verdicts
    ``holds`` / ``fails``: decided on the point statistic. ``straddles`` is True when the 95%
    interval reaches both sides of the threshold (the note says so too: "holds (interval
    straddles)" means "holds on these numbers, but more trials could tip it").
    ``not run``: the rows the claim needs are absent (the note says which).
    ``no claim``: a number reported without an expectation (a map the paper says nothing about,
    the count of training sets that could not be interpolated).

Bootstrap
    Percentile intervals from ``resamples`` (default 1000) stratified resamples: the units of each
    grid point (trials for word sensitivity, simulations for generalisation) are drawn with
    replacement within that grid point, so every resample keeps the design (the n grid, the
    number of trials per point). Every row of the table has its own generator,
    ``numpy.random.Generator(PCG64(derive_seed(seed, "claims", claim, map, data, scope)))``: the
    same tables give the same intervals, whatever else the run holds. Generalisation rows of one
    simulation (its searches) move together: a simulation is one unit. For a worst-point
    statistic (a largest or smallest value over grid points) the resamples' noise pushes the worst
    point further out, so the interval sits beyond the point value and may not contain it: read
    it as how far the worst point could move on a re-run, not as a centred error bar.

Columns (:data:`COLUMNS`)
    claim, map, data (the rows' data label), scope (the grid slice: ``d=192``, ``d=768, L=2``,
    ``all d``, ...), statement, statistic, value, ci_low, ci_high (NaN when not run or for a
    count), expectation, verdict, straddles, units (trials or simulations used), source
    ("paper" or "derived (not in the paper)"), note (the worst point, row counts, why not run).

Claims (id: statistic, expectation)
    ``rf_slope``: least-squares slope of log WS against log n over every trial's point (per d;
    "all d": one common slope with an intercept per d). In [-0.6, -0.4] (the paper: O(1/sqrt n)).
    ``rf_law``: the largest relative deviation ``|mean WS / law(n) - 1|`` over the grid points,
    with ``law(n) = (1 + sqrt(2/n)) / sqrt(n)`` (:func:`wordsens.theory.rf_law`). <= 0.15. The law
    is this project's back-of-envelope estimate for the RF map of the paper's section 2, hence "derived".
    ``drf_decreasing``: per (d, L), the largest ratio ``mean WS(n') / mean WS(n)`` of consecutive
    grid values n < n'. < 1.
    ``raf_floor``: the smallest mean WS over the grid points with d >= 384. >= 1.
    ``raf_ratio``: per d, ``mean WS(n_max) / mean WS(n_min)``. >= 0.5.
    ``relu_raf_below_raf``: the largest ratio of mean WS, ReLU-RAF / RAF, over the (d, n) both
    maps ran. < 1.
    ``relu_raf_decreasing``: as ``drf_decreasing``, per d. < 1.
    ``fig4_rf_alignment``: the fraction of Figure 4 RF rows with alignment ``a >= 0.95``. >= 0.95.
    ``fig4_raf_alignment``: per n, the fraction of Figure 4 RAF rows with the surrogate loss at
    d = 768 with ``a <= 0.5``. >= 0.70. (Both thresholds come from this project's audit of its Figure 4 runs.)
    ``err_bound``: per map, the fraction of the rows satisfying the premise of
    :func:`err_lower_bound` (``a >= 0`` and ``gamma_min < 1``) whose Err is at least the bound
    (less a floating-point slack of ``1e-6 (1 + bound)``). == 1: it is a theorem about the row's
    own numbers, so one row below it means those numbers break the identity
    ``D1 - D0 = a (y - t0)``.
    ``fig5_penalty``: per (map, n, N, d, training), the largest increase of the median gamma_min
    between consecutive penalties (increasing). < 0. Simulations are paired across penalties.
    ``not_interpolating``: per table, the number of rows whose first-stage model does not
    interpolate its training set (``interpolates == False``: the pseudo-inverse solution of an
    ill-conditioned training set). No claim.
    ``map_slope``: every other map present (``ws_<map>.parquet``): the slope of log WS against
    log n, as ``rf_slope``. No claim.

The derived bound (``err_bound``)
    Notation of one generalisation row: label ``y`` in {-1, +1}; ``t0 = phi(X)^T theta*`` and
    ``D0 = phi(X^1(Delta))^T theta*`` (first stage); ``D1`` the same after learning ``(X, y)``;
    ``Err = (D1 + y)^2``; ``gamma = gamma_min = max(|t0|, |D0|)``; ``a`` the row's alignment.

    Identity. Both second stages add a multiple of one vector to ``theta*``:
    ``theta_new = theta* + v (y - t0) / (phi(X)^T v)`` with ``v = phi(X)`` (fine-tuning) or
    ``v = P phi(X)`` (re-training; ``phi^T P phi = ||P phi||^2`` since P is an orthogonal
    projection). Hence ``D1 - D0 = a (y - t0)`` with ``a = phi(X^1(Delta))^T v / ||v||^2``, for any
    ``theta*`` (also the pseudo-inverse solution of a training set that cannot be interpolated).

    Theorem. If ``a >= 0`` and ``gamma <= 1`` then ``Err >= ((1 + a)(1 - gamma))^2``.

    Proof. With ``y^2 = 1``: ``y (D1 + y) = y D0 + a (1 - y t0) + 1``. Now ``y D0 >= -|D0| >= -gamma``
    and ``1 - y t0 >= 1 - |t0| >= 1 - gamma``, so, as ``a >= 0``,
    ``y (D1 + y) >= 1 - gamma + a (1 - gamma) = (1 + a)(1 - gamma) >= 0``. Both sides being
    non-negative and ``|y (D1 + y)| = |D1 + y|``, squaring gives the bound. It is sharp: equality
    when ``t0 = y gamma`` and ``D0 = -y gamma``.

    So the bound applies to the rows with ``a >= 0`` and ``gamma_min < 1`` (at ``gamma = 1`` it is
    0), of any map, figure, training mode and loss. At ``a = 1`` (no separation, RF's regime) it is
    the curve ``(2 - 2 gamma)^2``; for ``a >= 1`` that curve is a bound too, but a row with
    ``a = 0.99`` may sit slightly below it, which is why the check uses the row's own ``a``. It
    says that with the first-stage model unsure (small gamma), Err can be small only through
    ``a < 0`` (separation) or ``gamma`` near 1 (D0 or t0 moved), never through a ~ 1.

Modules
    This module holds the entry points (:func:`compute_claims`, :func:`claims_from_results`,
    :func:`read_tables`); the package :mod:`wordsens.claims` exports them with the rest of the
    public names. :mod:`wordsens.claims.stats`: the definitions (:data:`CLAIMS`, the thresholds,
    :func:`err_lower_bound`), the bootstrap and the row builder; :mod:`wordsens.claims.checks`: the
    computation of each claim; :mod:`wordsens.claims.render`: the text, Markdown and HTML
    renderings; :mod:`wordsens.claims.files`: the tables it reads and the files it writes. None of
    them imports torch or the plotting libraries (the RF law comes from :mod:`wordsens.theory`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .checks import gen_claims, ws_claims
from .files import claims_inputs
from .stats import RESAMPLES, Rows, table_kind

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


# ----------------------------------------------------------------------------- reading


def read_tables(results_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the claims need, keyed by file stem (``ws_rf``, ``gen_fig4_imdb``, ...), and the
    ``variants`` table when the run has one (``wordsens.claims.files.claims_inputs`` splits it by map)."""
    folder = Path(results_dir) / "tables"
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder: pass the workflow's results folder (config key "
            "'results', e.g. results/), which holds tables/"
        )
    tables = {}
    for path in sorted(folder.glob("*.parquet")):
        if table_kind(path.stem) is not None or path.stem == "variants":
            tables[path.stem] = pd.read_parquet(path)
    return tables


def claims_from_results(results_dir: str | Path, *, seed: int = 0, resamples: int = RESAMPLES) -> pd.DataFrame:
    """:func:`compute_claims` on the tables of a results folder (``RESULTS/tables/*.parquet``), the
    variant maps included, as the workflow's claims rule computes them."""
    return compute_claims(claims_inputs(read_tables(results_dir)), seed=seed, resamples=resamples)


def _check_columns(key: str, frame: pd.DataFrame, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"table {key!r} lacks the column(s) {missing}: it was not written by the workflow's "
            "aggregation rules (re-run snakemake to rebuild it)"
        )


# ----------------------------------------------------------------------------- entry points


def compute_claims(tables: Mapping[str, pd.DataFrame], *, seed: int = 0, resamples: int = RESAMPLES) -> pd.DataFrame:
    """The claims table (columns :data:`COLUMNS`) of a run's tables.

    ``tables`` maps file stems to frames: ``ws_<map>`` (any map; ``rf``, ``drf``, ``raf``,
    ``relu_raf`` carry the paper's claims, any other gets ``map_slope``) and ``gen_fig4_<data>``,
    ``gen_fig5_<data>``. A claim whose rows are absent is reported "not run"; a table lacking a
    column every row of its kind has is an error. ``seed`` and ``resamples`` set the bootstrap.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    ws: dict[str, pd.DataFrame] = {}
    gen: dict[str, pd.DataFrame] = {}
    for key, frame in tables.items():
        kind = table_kind(key)
        if kind is None:
            raise ValueError(f"unknown table {key!r}: expected ws_<map>, gen_fig4_<data> or gen_fig5_<data>")
        if kind[0] == "ws":
            _check_columns(key, frame, _WS_REQUIRED)
            if not frame.empty:
                ws[kind[1]] = frame
        else:
            _check_columns(key, frame, _GEN_REQUIRED)
            if not frame.empty:
                gen[key] = frame
    rows = Rows(seed, resamples)
    ws_claims(rows, ws)
    gen_claims(rows, gen)
    return rows.frame()
