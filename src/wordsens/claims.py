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
    with ``law(n) = (1 + sqrt(2/n)) / sqrt(n)`` (:func:`wordsens.plots.rf_law`). <= 0.15. The law
    is this project's back-of-envelope estimate (paper.md, section 2), hence "derived".
    ``drf_decreasing``: per (d, L), the largest ratio ``mean WS(n') / mean WS(n)`` of consecutive
    grid values n < n'. < 1.
    ``raf_floor``: the smallest mean WS over the grid points with d >= 384. >= 1.
    ``raf_ratio``: per d, ``mean WS(n_max) / mean WS(n_min)``. >= 0.5.
    ``relu_raf_below_raf``: the largest ratio of mean WS, ReLU-RAF / RAF, over the (d, n) both
    maps ran. < 1.
    ``relu_raf_decreasing``: as ``drf_decreasing``, per d. < 1.
    ``fig4_rf_alignment``: the fraction of Figure 4 RF rows with alignment ``a >= 0.95``. >= 0.95.
    ``fig4_raf_alignment``: per n, the fraction of Figure 4 RAF rows with the surrogate loss at
    d = 768 with ``a <= 0.5``. >= 0.70. (Both thresholds come from the audit of issue 13.)
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
"""

from __future__ import annotations

import html
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "CLAIMS",
    "COLUMNS",
    "KNOWN_MAPS",
    "Claim",
    "claims_from_results",
    "claims_html",
    "claims_markdown",
    "compute_claims",
    "err_lower_bound",
    "format_claims",
    "read_tables",
]

PAPER = "paper"
DERIVED = "derived (not in the paper)"
KNOWN_MAPS = ("rf", "drf", "raf", "relu_raf")
RESAMPLES = 1000
LEVEL = 0.95
BOUND_SLACK = 1e-6  # relative floating-point slack of the err_bound check
RAF_FLOOR_D = 384  # raf_floor: the grid points with d >= this
FIG4_RAF_D = 768  # fig4_raf_alignment: the rows at this d

COLUMNS = ["claim", "map", "data", "scope", "statement", "statistic", "value", "ci_low", "ci_high", "expectation",
           "verdict", "straddles", "units", "source", "note"]

_WS_REQUIRED = ("map", "data", "d", "n", "trial", "lower")
_GEN_REQUIRED = ("figure", "map", "data", "d", "n", "N", "simulation", "training", "loss", "penalty", "y", "t0",
                 "D0", "D1", "err", "gamma_min")


@dataclass(frozen=True)
class Claim:
    """A statement, its statistic and the expectation (``op`` None: reported without a verdict)."""

    id: str
    statement: str
    statistic: str
    op: str | None  # ">=", ">", "<=", "<", "in"
    threshold: float | tuple[float, float] | None
    source: str

    def expectation(self) -> str:
        if self.op is None:
            return "none (reported)"
        if self.op == "in":
            lo, hi = self.threshold  # type: ignore[misc]
            return f"in [{lo:g}, {hi:g}]"
        return f"{self.op} {self.threshold:g}"

    def passes(self, x: float) -> bool:
        t = self.threshold
        if self.op == "in":
            lo, hi = t  # type: ignore[misc]
            return lo <= x <= hi
        return {">=": x >= t, ">": x > t, "<=": x <= t, "<": x < t}[self.op]  # type: ignore[index,operator]

    def straddles(self, lo: float, hi: float) -> bool:
        """Whether the interval [lo, hi] holds both passing and failing values."""
        t = self.threshold
        if self.op == "in":
            tl, th = t  # type: ignore[misc]
            return (lo <= th and hi >= tl) and (lo < tl or hi > th)
        return {
            ">=": hi >= t and lo < t,  # type: ignore[operator]
            ">": hi > t and lo <= t,  # type: ignore[operator]
            "<=": lo <= t and hi > t,  # type: ignore[operator]
            "<": lo < t and hi >= t,  # type: ignore[operator]
        }[self.op]  # type: ignore[index]


_STEP = "largest ratio mean WS(n') / mean WS(n) over consecutive grid values n < n'"
CLAIMS: dict[str, Claim] = {c.id: c for c in [
    Claim("rf_slope", "RF word sensitivity decays like n^(-1/2)",
          "least-squares slope of log WS on log n over every trial (all d: one slope, an intercept per d)",
          "in", (-0.6, -0.4), PAPER),
    Claim("rf_law", "RF mean WS lies within 15% of (1 + sqrt(2/n)) / sqrt(n) at every grid point",
          "largest |mean WS / law(n) - 1| over the grid points", "<=", 0.15, DERIVED),
    Claim("drf_decreasing", "DRF mean WS decreases in n at every depth L", _STEP, "<", 1.0, PAPER),
    Claim("raf_floor", f"RAF mean WS >= 1 at every n for d >= {RAF_FLOOR_D}",
          f"smallest mean WS over the grid points with d >= {RAF_FLOOR_D}", ">=", 1.0, PAPER),
    Claim("raf_ratio", "RAF word sensitivity does not decay: WS(n_max) / WS(n_min) >= 0.5",
          "mean WS at the largest n / mean WS at the smallest n", ">=", 0.5, PAPER),
    Claim("relu_raf_below_raf", "ReLU-RAF mean WS is below RAF's at every (d, n) both ran",
          "largest ratio mean WS ReLU-RAF / RAF over the common (d, n)", "<", 1.0, PAPER),
    Claim("relu_raf_decreasing", "ReLU-RAF mean WS decreases in n", _STEP, "<", 1.0, PAPER),
    Claim("fig4_rf_alignment", "RF cannot separate the two sentences: a >= 0.95 in >= 95% of Figure 4 rows",
          "fraction of rows with a >= 0.95", ">=", 0.95, DERIVED),
    Claim("fig4_raf_alignment",
          f"RAF with the surrogate loss at d = {FIG4_RAF_D} separates them: a <= 0.5 in >= 70% of Figure 4 rows",
          "fraction of rows with a <= 0.5", ">=", 0.70, DERIVED),
    Claim("err_bound", "Err >= ((1 + a)(1 - gamma_min))^2 on every row with a >= 0 and gamma_min < 1 "
          "(the curve (2 - 2 gamma)^2 at a = 1)",
          f"fraction of those rows with Err >= bound - {BOUND_SLACK:g} (1 + bound)", ">=", 1.0, DERIVED),
    Claim("fig5_penalty", "Figure 5: the median gamma_min decreases as the penalty grows",
          "largest increase of the median gamma_min between consecutive penalties", "<", 0.0, PAPER),
    Claim("not_interpolating", "generalisation rows whose first-stage model does not interpolate its training set "
          "(pseudo-inverse solution)", "number of rows with interpolates == False", None, None, DERIVED),
    Claim("map_slope", "word sensitivity of a map the paper makes no claim about",
          "least-squares slope of log WS on log n over every trial (all d: one slope, an intercept per d)",
          None, None, DERIVED),
]}


def err_lower_bound(alignment: np.ndarray | float, gamma: np.ndarray | float) -> np.ndarray:
    """``((1 + a)(1 - gamma))^2`` where the derived bound applies (``a >= 0``, ``gamma < 1``), else NaN.

    See the module docstring for the statement and its proof: every generalisation row with
    ``a >= 0`` and ``gamma_min < 1`` has ``Err >= err_lower_bound(a, gamma_min)``.
    """
    a = np.asarray(alignment, dtype=float)
    g = np.asarray(gamma, dtype=float)
    applies = (a >= 0) & (g < 1)
    return np.where(applies, ((1 + a) * (1 - g)) ** 2, np.nan)


# ----------------------------------------------------------------------------- reading


def read_tables(results_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the claims need, keyed by file stem (``ws_rf``, ``gen_fig4_imdb``, ...)."""
    folder = Path(results_dir) / "tables"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: pass the workflow's results folder (config key "
                                "'results', e.g. results/), which holds tables/")
    tables = {}
    for path in sorted(folder.glob("*.parquet")):
        if _kind(path.stem) is not None:
            tables[path.stem] = pd.read_parquet(path)
    return tables


def claims_from_results(results_dir: str | Path, *, seed: int = 0, resamples: int = RESAMPLES) -> pd.DataFrame:
    """:func:`compute_claims` on the tables of a results folder (``RESULTS/tables/*.parquet``)."""
    return compute_claims(read_tables(results_dir), seed=seed, resamples=resamples)


def _kind(key: str) -> tuple[str, str] | None:
    """('ws', map) or ('gen', figure) for a table key, None for another table."""
    if key.startswith("ws_") and len(key) > 3:
        return "ws", key[3:]
    m = re.fullmatch(r"gen_(fig[45])_(.+)", key)
    return ("gen", m.group(1)) if m else None


def _check_columns(key: str, frame: pd.DataFrame, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"table {key!r} lacks the column(s) {missing}: it was not written by the workflow's "
                         "aggregation rules (re-run snakemake to rebuild it)")


# ----------------------------------------------------------------------------- bootstrap

Stat = Callable[[list[np.ndarray]], np.ndarray]


def _rng(seed: int, *parts: object) -> np.random.Generator:
    from .seeds import derive_seed

    return np.random.Generator(np.random.PCG64(derive_seed(seed, "claims", *parts)))


def _bootstrap(groups: Sequence[np.ndarray], stat: Stat, rng: np.random.Generator,
               resamples: int) -> tuple[float, float, float]:
    """Point statistic and percentile interval.

    ``groups``: one array per grid point, units along axis 0. ``stat`` maps a list of arrays with a
    leading replicate axis (shape ``(R, m_g, ...)``) to ``R`` values; it is called once on the data
    (R = 1) and once on ``resamples`` stratified resamples (units drawn with replacement within
    each group).
    """
    point = float(stat([g[None] for g in groups])[0])
    reps = stat([g[rng.integers(0, len(g), size=(resamples, len(g)))] for g in groups])
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return point, math.nan, math.nan
    lo, hi = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return point, float(lo), float(hi)


def _means(groups: list[np.ndarray]) -> np.ndarray:
    return np.stack([g.mean(axis=1) for g in groups], axis=1)  # (R, G)


# ----------------------------------------------------------------------------- rows


class _Rows:
    def __init__(self, seed: int, resamples: int) -> None:
        self.seed, self.resamples = seed, resamples
        self.rows: list[dict[str, object]] = []

    def not_run(self, claim: str, why: str, *, map_: str = "", data: str = "", scope: str = "") -> None:
        self._add(claim, map_, data, scope, math.nan, (math.nan, math.nan), 0, "not run", False, why)

    def measured(self, claim: str, groups: Sequence[np.ndarray], stat: Stat, *, map_: str, data: str, scope: str,
                 note: str = "") -> tuple[float, float, float]:
        c = CLAIMS[claim]
        rng = _rng(self.seed, claim, map_, data, scope)
        value, lo, hi = _bootstrap(groups, stat, rng, self.resamples)
        units = int(sum(len(g) for g in groups))
        if not np.isfinite(value):
            self.not_run(claim, "the statistic is undefined on these rows" + (f"; {note}" if note else ""),
                         map_=map_, data=data, scope=scope)
            return value, lo, hi
        straddles = False
        if c.op is None:
            verdict = "no claim"
        else:
            verdict = "holds" if c.passes(value) else "fails"
            straddles = bool(np.isfinite(lo) and c.straddles(lo, hi))
            if straddles:
                note = f"{verdict} (interval straddles)" + (f"; {note}" if note else "")
        self._add(claim, map_, data, scope, value, (lo, hi), units, verdict, straddles, note)
        return value, lo, hi

    def count(self, claim: str, value: int, units: int, *, map_: str, data: str, scope: str, note: str) -> None:
        self._add(claim, map_, data, scope, float(value), (math.nan, math.nan), units, "no claim", False, note)

    def _add(self, claim: str, map_: str, data: str, scope: str, value: float, ci: tuple[float, float], units: int,
             verdict: str, straddles: bool, note: str) -> None:
        c = CLAIMS[claim]
        self.rows.append({
            "claim": claim, "map": map_, "data": data, "scope": scope, "statement": c.statement,
            "statistic": c.statistic, "value": value, "ci_low": ci[0], "ci_high": ci[1],
            "expectation": c.expectation(), "verdict": verdict, "straddles": straddles, "units": units,
            "source": c.source, "note": note,
        })

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame["units"] = frame["units"].astype("int64")
        frame["straddles"] = frame["straddles"].astype(bool)
        for col in ("value", "ci_low", "ci_high"):
            frame[col] = frame[col].astype("float64")
        return frame


# ----------------------------------------------------------------------------- word-sensitivity claims


def _points(frame: pd.DataFrame, by: list[str], value: str) -> list[tuple[tuple, np.ndarray]]:
    """(key, values) per grid point, sorted by key."""
    out = []
    for key, part in frame.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append((tuple(_plain(k) for k in key), part[value].to_numpy(dtype=float)))
    return out


def _plain(v: object) -> object:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, (np.floating, float)) and float(v).is_integer():
        return int(v)  # a depth or a size read back as a float (CSV, nullable integers)
    return v


def _slope_stat(xs: np.ndarray, strata: np.ndarray) -> Stat:
    """Least-squares slope of y on x with an intercept per stratum; groups hold y = log WS per point."""
    def stat(groups: list[np.ndarray]) -> np.ndarray:
        sums = np.stack([g.sum(axis=1) for g in groups], axis=1)  # (R, G)
        counts = np.array([g.shape[1] for g in groups], dtype=float)
        num = np.zeros(sums.shape[0])
        den = 0.0
        for s in np.unique(strata):
            sel = strata == s
            x, m = xs[sel], counts[sel]
            xc = x - (m * x).sum() / m.sum()
            num += sums[:, sel] @ xc
            den += float((m * xc**2).sum())
        return num / den if den > 0 else np.full(sums.shape[0], np.nan)
    return stat


def _ws_slope(rows: _Rows, claim: str, frame: pd.DataFrame, map_: str, data: str) -> None:
    """Slope per d (per (d, L) where L varies) and, with several strata, one common slope."""
    positive = frame[frame["lower"] > 0]
    dropped = len(frame) - len(positive)
    extra = f"{dropped} rows with WS <= 0 left out of the logarithm" if dropped else ""
    stratum_cols = ["d", "L"] if "L" in positive and positive["L"].notna().any() else ["d"]
    pieces = [(tuple(_plain(k) for k in (key if isinstance(key, tuple) else (key,))), part)
              for key, part in positive.groupby(stratum_cols, sort=True, dropna=False)]

    def one(parts: list[tuple[tuple, pd.DataFrame]], scope: str) -> None:
        groups, xs, ss = [], [], []
        for i, (_, part) in enumerate(parts):
            for (n,), vals in _points(part, ["n"], "lower"):
                groups.append(np.log(vals))
                xs.append(math.log(n))
                ss.append(i)
        ns = {x for x in xs}
        if len(ns) < 2:
            rows.not_run(claim, f"one n value only (n = {sorted(round(math.exp(x)) for x in ns)})",
                         map_=map_, data=data, scope=scope)
            return
        rows.measured(claim, groups, _slope_stat(np.array(xs), np.array(ss)), map_=map_, data=data, scope=scope,
                      note=extra)

    for key, part in pieces:
        one([(key, part)], _scope(stratum_cols, key))
    if len(pieces) > 1:
        one(pieces, "all " + ", ".join(stratum_cols))


def _scope(cols: Sequence[str], key: Sequence[object]) -> str:
    return ", ".join(f"{c}={k}" for c, k in zip(cols, key) if k is not None)


def _ws_rf(rows: _Rows, frame: pd.DataFrame, data: str) -> None:
    from .plots import rf_law

    _ws_slope(rows, "rf_slope", frame, "rf", data)
    by_d = [(d, frame[frame["d"] == d]) for d in sorted(frame["d"].unique())]
    parts = [(f"d={int(d)}", p) for d, p in by_d] + ([("all d", frame)] if len(by_d) > 1 else [])
    for scope, part in parts:
        pts = _points(part, ["d", "n"], "lower")
        law = np.array([rf_law(np.array([n]))[0] for (_, n), _ in pts])

        def stat(groups: list[np.ndarray], law: np.ndarray = law) -> np.ndarray:
            return np.abs(_means(groups) / law - 1).max(axis=1)

        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        worst = int(np.argmax(np.abs(means / law - 1)))
        (wd, wn), _ = pts[worst]
        rows.measured("rf_law", groups, stat, map_="rf", data=data, scope=scope,
                      note=f"worst point d={wd}, n={wn}: mean WS / law = {means[worst] / law[worst]:.3f}")


def _decreasing(rows: _Rows, claim: str, frame: pd.DataFrame, map_: str, data: str, strata: list[str]) -> None:
    for key, part in frame.groupby(strata, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        scope = _scope(strata, [_plain(k) for k in key])
        pts = _points(part, ["n"], "lower")
        if len(pts) < 2:
            rows.not_run(claim, f"one n value only (n = {pts[0][0][0]})", map_=map_, data=data, scope=scope)
            continue

        def stat(groups: list[np.ndarray]) -> np.ndarray:
            m = _means(groups)
            return (m[:, 1:] / m[:, :-1]).max(axis=1)

        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        steps = means[1:] / means[:-1]
        i = int(np.argmax(steps))
        rows.measured(claim, groups, stat, map_=map_, data=data, scope=scope,
                      note=f"largest step n={pts[i][0][0]} -> {pts[i + 1][0][0]}: ratio {steps[i]:.3f}")


def _ws_raf(rows: _Rows, frame: pd.DataFrame, data: str) -> None:
    big = frame[frame["d"] >= RAF_FLOOR_D]
    if big.empty:
        rows.not_run("raf_floor", f"no RAF rows with d >= {RAF_FLOOR_D} (this run: d = "
                     f"{sorted(int(d) for d in frame['d'].unique())})", map_="raf", data=data)
    else:
        pts = _points(big, ["d", "n"], "lower")
        groups = [v for _, v in pts]
        means = np.array([v.mean() for v in groups])
        i = int(np.argmin(means))
        rows.measured("raf_floor", groups, lambda g: _means(g).min(axis=1), map_="raf", data=data,
                      scope=f"d>={RAF_FLOOR_D}",
                      note=f"lowest point d={pts[i][0][0]}, n={pts[i][0][1]}: mean WS {means[i]:.3f}")
    for d in sorted(frame["d"].unique()):
        pts = _points(frame[frame["d"] == d], ["n"], "lower")
        scope = f"d={int(d)}"
        if len(pts) < 2:
            rows.not_run("raf_ratio", f"one n value only (n = {pts[0][0][0]})", map_="raf", data=data, scope=scope)
            continue
        ends = [pts[0][1], pts[-1][1]]
        rows.measured("raf_ratio", ends, lambda g: g[1].mean(axis=1) / g[0].mean(axis=1), map_="raf", data=data,
                      scope=scope, note=f"n={pts[-1][0][0]} over n={pts[0][0][0]}")


def _ws_relu_vs_raf(rows: _Rows, relu: pd.DataFrame, raf: pd.DataFrame, data: str) -> None:
    a = dict(_points(relu, ["d", "n"], "lower"))
    b = dict(_points(raf, ["d", "n"], "lower"))
    common = sorted(set(a) & set(b))
    if not common:
        rows.not_run("relu_raf_below_raf", "no (d, n) grid point ran for both RAF and ReLU-RAF",
                     map_="relu_raf", data=data)
        return
    k = len(common)

    def stat(groups: list[np.ndarray]) -> np.ndarray:
        m = _means(groups)
        return (m[:, :k] / m[:, k:]).max(axis=1)

    groups = [a[p] for p in common] + [b[p] for p in common]
    ratios = np.array([a[p].mean() / b[p].mean() for p in common])
    i = int(np.argmax(ratios))
    rows.measured("relu_raf_below_raf", groups, stat, map_="relu_raf", data=data,
                  scope=f"{k} common (d, n)",
                  note=f"closest point d={common[i][0]}, n={common[i][1]}: ratio {ratios[i]:.3f}")


def _ws_claims(rows: _Rows, ws: dict[str, pd.DataFrame]) -> None:
    def datas(frame: pd.DataFrame) -> list[str]:
        return sorted(str(x) for x in frame["data"].unique())

    if "rf" not in ws:
        for c in ("rf_slope", "rf_law"):
            rows.not_run(c, "no RF word-sensitivity table (ws_rf.parquet)", map_="rf")
    else:
        for data in datas(ws["rf"]):
            _ws_rf(rows, ws["rf"][ws["rf"]["data"] == data], data)
    if "drf" not in ws:
        rows.not_run("drf_decreasing", "no DRF word-sensitivity table (ws_drf.parquet)", map_="drf")
    else:
        for data in datas(ws["drf"]):
            part = ws["drf"][ws["drf"]["data"] == data]
            if "L" not in part or part["L"].isna().all():
                raise ValueError("table 'ws_drf' has no depth column L: re-run snakemake to rebuild it")
            _decreasing(rows, "drf_decreasing", part, "drf", data, ["d", "L"])
    if "raf" not in ws:
        for c in ("raf_floor", "raf_ratio"):
            rows.not_run(c, "no RAF word-sensitivity table (ws_raf.parquet)", map_="raf")
    else:
        for data in datas(ws["raf"]):
            _ws_raf(rows, ws["raf"][ws["raf"]["data"] == data], data)
    if "relu_raf" not in ws:
        for c in ("relu_raf_below_raf", "relu_raf_decreasing"):
            rows.not_run(c, "no ReLU-RAF word-sensitivity table (ws_relu_raf.parquet)", map_="relu_raf")
    else:
        for data in datas(ws["relu_raf"]):
            relu = ws["relu_raf"][ws["relu_raf"]["data"] == data]
            raf = ws["raf"][ws["raf"]["data"] == data] if "raf" in ws else None
            if raf is None or raf.empty:
                rows.not_run("relu_raf_below_raf", f"no RAF rows for data {data}", map_="relu_raf", data=data)
            else:
                _ws_relu_vs_raf(rows, relu, raf, data)
            _decreasing(rows, "relu_raf_decreasing", relu, "relu_raf", data, ["d"])
    for map_ in sorted(set(ws) - set(KNOWN_MAPS)):
        for data in datas(ws[map_]):
            _ws_slope(rows, "map_slope", ws[map_][ws[map_]["data"] == data], map_, data)


# ----------------------------------------------------------------------------- generalisation claims

_GRID = ["figure", "map", "n", "N", "d"]  # a generalisation grid point; simulations are its units


def _sim_units(frame: pd.DataFrame, columns: dict[str, pd.Series]) -> list[np.ndarray]:
    """Per grid point, one row per simulation holding the sums of ``columns`` over its rows."""
    work = frame[_GRID + ["simulation"]].copy()
    for name, series in columns.items():
        work[name] = series.astype(float)
    names = list(columns)
    sums = work.groupby(_GRID + ["simulation"], sort=True)[names].sum().reset_index()
    return [part[names].to_numpy() for _, part in sums.groupby(_GRID, sort=True)]


def _fraction(groups: list[np.ndarray]) -> np.ndarray:
    hits = sum(g[..., 0].sum(axis=1) for g in groups)
    total = sum(g[..., 1].sum(axis=1) for g in groups)
    return hits / total


def _alignment_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Rows with a finite alignment, and a note on the ones left out."""
    a = frame["alignment"].astype(float)
    keep = frame[np.isfinite(a)]
    dropped = len(frame) - len(keep)
    return keep, (f"{dropped} rows with a non-finite alignment left out" if dropped else "")


def _gen_alignment(rows: _Rows, fig4: pd.DataFrame | None, data: str) -> None:
    if fig4 is None:
        for c, m in (("fig4_rf_alignment", "rf"), ("fig4_raf_alignment", "raf")):
            rows.not_run(c, f"no Figure 4 table for data {data}", map_=m, data=data)
        return
    if "alignment" not in fig4:
        for c, m in (("fig4_rf_alignment", "rf"), ("fig4_raf_alignment", "raf")):
            rows.not_run(c, "the Figure 4 table has no 'alignment' column (written by an older wordsens: "
                         "re-run the gen jobs)", map_=m, data=data)
        return
    rf, note = _alignment_rows(fig4[fig4["map"] == "rf"])
    if rf.empty:
        rows.not_run("fig4_rf_alignment", "no RF rows in Figure 4", map_="rf", data=data)
    else:
        a = rf["alignment"].astype(float)
        groups = _sim_units(rf, {"hit": a >= 0.95, "all": pd.Series(1.0, index=rf.index)})
        extra = f"a in [{a.min():.3f}, {a.max():.3f}] over {len(rf)} rows"
        rows.measured("fig4_rf_alignment", groups, _fraction, map_="rf", data=data, scope="all n, N, training, loss",
                      note="; ".join(x for x in (extra, note) if x))
    raf = fig4[(fig4["map"] == "raf") & (fig4["loss"] == "surrogate") & (fig4["d"] == FIG4_RAF_D)]
    if raf.empty:
        have = sorted(int(d) for d in fig4.loc[fig4["map"] == "raf", "d"].unique())
        rows.not_run("fig4_raf_alignment", f"no RAF surrogate-loss rows at d = {FIG4_RAF_D} in Figure 4"
                     + (f" (RAF ran at d = {have})" if have else " (no RAF rows)"), map_="raf", data=data)
        return
    for n in sorted(raf["n"].unique()):
        part, note = _alignment_rows(raf[raf["n"] == n])
        scope = f"d={FIG4_RAF_D}, n={int(n)}"
        if part.empty:
            rows.not_run("fig4_raf_alignment", note, map_="raf", data=data, scope=scope)
            continue
        a = part["alignment"].astype(float)
        groups = _sim_units(part, {"hit": a <= 0.5, "all": pd.Series(1.0, index=part.index)})
        extra = f"median a = {a.median():.3f} over {len(part)} rows"
        rows.measured("fig4_raf_alignment", groups, _fraction, map_="raf", data=data, scope=scope,
                      note="; ".join(x for x in (extra, note) if x))


def _gen_bound(rows: _Rows, gen: pd.DataFrame, data: str) -> None:
    maps = sorted(gen["map"].unique(), key=lambda m: (KNOWN_MAPS.index(m) if m in KNOWN_MAPS else 99, m))
    if "alignment" not in gen:
        rows.not_run("err_bound", "the generalisation tables have no 'alignment' column (written by an older "
                     "wordsens: re-run the gen jobs)", map_="rf", data=data)
        return
    for map_ in maps:
        part = gen[gen["map"] == map_]
        a = part["alignment"].to_numpy(dtype=float)
        t0, d0 = part["t0"].to_numpy(dtype=float), part["D0"].to_numpy(dtype=float)
        gamma = np.maximum(np.abs(t0), np.abs(d0))
        bound = err_lower_bound(a, gamma)
        applies = np.isfinite(bound)
        figures = "+".join(sorted(part["figure"].unique()))
        if not applies.any():
            rows.not_run("err_bound", f"no {map_} row with a >= 0 and gamma_min < 1 ({len(part)} rows)",
                         map_=map_, data=data, scope=figures)
            continue
        err = part["err"].to_numpy(dtype=float)
        above = np.where(applies, err >= bound - BOUND_SLACK * (1 + np.nan_to_num(bound)), False)
        groups = _sim_units(part, {"hit": pd.Series(above, index=part.index),
                                   "all": pd.Series(applies, index=part.index)})
        groups = [g[g[:, 1] > 0] for g in groups]
        groups = [g for g in groups if len(g)]
        y, d1 = part["y"].to_numpy(dtype=float), part["D1"].to_numpy(dtype=float)
        residual = np.abs(d1 - d0 - a * (y - t0))[applies]
        curve = (2 - 2 * gamma[applies]) ** 2
        below_curve = int((err[applies] < curve - BOUND_SLACK * (1 + curve)).sum())
        slack = (err - bound)[applies]
        note = (f"{int(applies.sum())} of {len(part)} rows satisfy the premise; min Err - bound = {slack.min():.3g}; "
                f"max |D1 - D0 - a (y - t0)| = {residual.max():.2g}; {below_curve} below the a = 1 curve "
                "(2 - 2 gamma)^2")
        rows.measured("err_bound", groups, _fraction, map_=map_, data=data, scope=figures, note=note)


def _gen_penalty(rows: _Rows, fig5: pd.DataFrame | None, data: str) -> None:
    if fig5 is None:
        rows.not_run("fig5_penalty", f"no Figure 5 table for data {data}", data=data)
        return
    pen = fig5[fig5["loss"] == "penalised"]
    if pen.empty:
        rows.not_run("fig5_penalty", "no penalised-loss rows in Figure 5", data=data)
        return
    cells = ["map", "n", "N", "d", "training"]
    for key, part in pen.groupby(cells, sort=True):
        map_, n, N, d, training = (_plain(k) for k in key)
        scope = f"n={n}, N={N}, d={d}, {training}"
        penalties = sorted(float(p) for p in part["penalty"].unique())
        if len(penalties) < 2:
            rows.not_run("fig5_penalty", f"one penalty only ({penalties[0]:g})", map_=str(map_), data=data,
                         scope=scope)
            continue
        table = part.pivot_table(index="simulation", columns="penalty", values="gamma_min", aggfunc="first")
        table = table.reindex(columns=penalties)

        def stat(groups: list[np.ndarray]) -> np.ndarray:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(groups[0], axis=1)  # (R, P)
            return np.diff(med, axis=1).max(axis=1)

        medians = table.median(axis=0).to_numpy()
        note = "median gamma_min " + ", ".join(f"{m:.3g} (penalty {p:g})" for p, m in zip(penalties, medians))
        rows.measured("fig5_penalty", [table.to_numpy(dtype=float)], stat, map_=str(map_), data=data, scope=scope,
                      note=note)


def _gen_interpolation(rows: _Rows, key: str, frame: pd.DataFrame) -> None:
    figure = _kind(key)[1]  # type: ignore[index]
    data = ", ".join(sorted(str(x) for x in frame["data"].unique()))
    if "interpolates" not in frame:
        rows.not_run("not_interpolating", f"table {key!r} has no 'interpolates' column (written by an older "
                     "wordsens: re-run the gen jobs)", data=data, scope=figure)
        return
    flag = frame["interpolates"].astype("boolean")
    bad = frame[(~flag).fillna(False).to_numpy(dtype=bool)]
    note = f"{len(bad)} of {len(frame)} rows"
    if len(bad):
        sims = bad.groupby(_GRID)["simulation"].nunique()
        note += "; simulations: " + ", ".join(f"{m} n={n} N={N} d={d}: {s}" for (_, m, n, N, d), s in sims.items())
    unknown = int(flag.isna().sum())
    if unknown:
        note += f"; {unknown} rows without a flag"
    rows.count("not_interpolating", len(bad), len(frame), map_="", data=data, scope=figure, note=note)


def _gen_claims(rows: _Rows, gen: dict[str, pd.DataFrame]) -> None:
    if not gen:
        for c, m in (("fig4_rf_alignment", "rf"), ("fig4_raf_alignment", "raf"), ("err_bound", "rf"),
                     ("fig5_penalty", ""), ("not_interpolating", "")):
            rows.not_run(c, "no generalisation tables (gen_fig4_<data>.parquet, gen_fig5_<data>.parquet)", map_=m)
        return
    frames = []
    for key, frame in gen.items():
        frames.append(frame.assign(figure=_kind(key)[1]))  # type: ignore[index]
    allgen = pd.concat(frames, ignore_index=True)
    for data in sorted(str(x) for x in allgen["data"].unique()):
        part = allgen[allgen["data"] == data]
        fig4 = part[part["figure"] == "fig4"]
        fig5 = part[part["figure"] == "fig5"]
        _gen_alignment(rows, fig4 if not fig4.empty else None, data)
        _gen_bound(rows, part, data)
        _gen_penalty(rows, fig5 if not fig5.empty else None, data)
    for key in sorted(gen):
        _gen_interpolation(rows, key, gen[key])


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
        kind = _kind(key)
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
    rows = _Rows(seed, resamples)
    _ws_claims(rows, ws)
    _gen_claims(rows, gen)
    return rows.frame()


# ----------------------------------------------------------------------------- rendering


def _num(x: float) -> str:
    if not np.isfinite(x):
        return "-"
    return f"{x:.4g}"


def _value(row: pd.Series) -> str:
    if row["verdict"] == "not run":
        return "-"
    if row["claim"] == "not_interpolating":
        return str(int(row["value"]))
    if np.isfinite(row["ci_low"]):
        return f"{_num(row['value'])} [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
    return _num(row["value"])


def _verdict(row: pd.Series) -> str:
    return f"{row['verdict']} (interval straddles)" if row["straddles"] else str(row["verdict"])


def _note(row: pd.Series) -> str:
    """The note without the straddle prefix (the rendered verdict carries it)."""
    note = str(row["note"])
    prefix = f"{row['verdict']} (interval straddles)"
    if row["straddles"] and note.startswith(prefix):
        note = note[len(prefix):].lstrip("; ")
    return note


def _summary(frame: pd.DataFrame) -> str:
    counts = frame["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in ("holds", "fails", "not run", "no claim")]
    return f"{len(frame)} claims: " + ", ".join(parts)


def format_claims(frame: pd.DataFrame) -> str:
    """A plain-text table for the terminal: one line per claim and scope, its note indented below."""
    head = ["claim", "map", "data", "scope", "value [95% CI]", "expected", "verdict"]
    body = [[str(r["claim"]), str(r["map"]) or "-", str(r["data"]) or "-", str(r["scope"]) or "-", _value(r),
             str(r["expectation"]), _verdict(r)] for _, r in frame.iterrows()]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()
    out = [line, "-" * len(line)]
    for b, (_, r) in zip(body, frame.iterrows()):
        out.append("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
        if _note(r):
            out.append(f"    {_note(r)}")
    out.append("")
    out.append(_summary(frame) + "  (source and statements: see the CSV; 95% CI: stratified bootstrap)")
    return "\n".join(out)


_TABLE_COLUMNS = [("claim", "claim"), ("map", "map"), ("data", "data"), ("scope", "scope"),
                  ("statement", "statement"), ("value", "value [95% CI]"), ("expectation", "expected"),
                  ("verdict", "verdict"), ("source", "source"), ("note", "note")]


def _cells(row: pd.Series) -> list[str]:
    out = []
    for col, _ in _TABLE_COLUMNS:
        if col == "value":
            out.append(_value(row))
        elif col == "verdict":
            out.append(_verdict(row))
        elif col == "note":
            out.append(_note(row))
        else:
            out.append(str(row[col]))
    return out


def claims_markdown(frame: pd.DataFrame) -> str:
    """A Markdown (pipe) table of the claims, with a one-line summary."""
    lines = ["| " + " | ".join(h for _, h in _TABLE_COLUMNS) + " |", "|" + "---|" * len(_TABLE_COLUMNS)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(row)) + " |")
    return "\n".join([_summary(frame), "", *lines]) + "\n"


_COLOURS = {"holds": "#d9f2d9", "fails": "#f8d7da", "not run": "#eeeeee", "no claim": "#ffffff"}


def claims_html(frame: pd.DataFrame) -> str:
    """A self-contained HTML page of the claims (for the Snakemake report), verdicts coloured."""
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in _TABLE_COLUMNS)
    body = []
    for _, row in frame.iterrows():
        colour = _COLOURS.get(str(row["verdict"]), "#ffffff")
        cells = "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row))
        body.append(f'<tr style="background:{colour}">{cells}</tr>')
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Claims</title>"
        "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}</style></head><body>"
        f"<p>{html.escape(_summary(frame))}. Verdicts are decided on the point statistic; the interval is a 95% "
        "stratified bootstrap over trials (word sensitivity) or simulations (generalisation).</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>\n"
    )
