"""The claims' definitions and the statistics behind every row of the claims table.

:data:`CLAIMS` (each :class:`Claim`: statement, statistic, expectation, source), the thresholds,
the derived bound :func:`err_lower_bound`, the stratified bootstrap (:func:`bootstrap`, one seeded
generator per row from :func:`claim_rng`), the grid-point statistics the claims share, and
:class:`Rows`, which turns a statistic into a row of the table (verdict, interval, straddle flag).
The computations of the claims are in :mod:`wordsens.claims.checks`; what each claim means, how
to read its interval and the proof of the bound are in :mod:`wordsens.claims.table`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..seeds import derive_seed

__all__ = [
    "BOUND_SLACK",
    "CLAIMS",
    "COLUMNS",
    "DERIVED",
    "FIG4_RAF_D",
    "GEN_GRID",
    "KNOWN_MAPS",
    "LEVEL",
    "PAPER",
    "RAF_FLOOR_D",
    "RESAMPLES",
    "Claim",
    "Rows",
    "Stat",
    "bootstrap",
    "claim_rng",
    "err_lower_bound",
    "fraction_stat",
    "grid_means",
    "grid_points",
    "plain",
    "scope_label",
    "sim_units",
    "slope_stat",
    "table_kind",
]

PAPER = "paper"
DERIVED = "derived (not in the paper)"
KNOWN_MAPS = ("rf", "drf", "raf", "relu_raf")
RESAMPLES = 1000
LEVEL = 0.95
BOUND_SLACK = 1e-6  # relative floating-point slack of the err_bound check
RAF_FLOOR_D = 384  # raf_floor: the grid points with d >= this
FIG4_RAF_D = 768  # fig4_raf_alignment: the rows at this d
GEN_GRID = ["figure", "map", "n", "N", "d"]  # a generalisation grid point; simulations are its units

COLUMNS = [
    "claim",
    "map",
    "data",
    "scope",
    "statement",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "expectation",
    "verdict",
    "straddles",
    "units",
    "source",
    "note",
]


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
CLAIMS: dict[str, Claim] = {
    c.id: c
    for c in [
        Claim(
            "rf_slope",
            "RF word sensitivity decays like n^(-1/2)",
            "least-squares slope of log WS on log n over every trial (all d: one slope, an intercept per d)",
            "in",
            (-0.6, -0.4),
            PAPER,
        ),
        Claim(
            "rf_law",
            "RF mean WS lies within 15% of (1 + sqrt(2/n)) / sqrt(n) at every grid point",
            "largest |mean WS / law(n) - 1| over the grid points",
            "<=",
            0.15,
            DERIVED,
        ),
        Claim("drf_decreasing", "DRF mean WS decreases in n at every depth L", _STEP, "<", 1.0, PAPER),
        Claim(
            "raf_floor",
            f"RAF mean WS >= 1 at every n for d >= {RAF_FLOOR_D}",
            f"smallest mean WS over the grid points with d >= {RAF_FLOOR_D}",
            ">=",
            1.0,
            PAPER,
        ),
        Claim(
            "raf_ratio",
            "RAF word sensitivity does not decay: WS(n_max) / WS(n_min) >= 0.5",
            "mean WS at the largest n / mean WS at the smallest n",
            ">=",
            0.5,
            PAPER,
        ),
        Claim(
            "relu_raf_below_raf",
            "ReLU-RAF mean WS is below RAF's at every (d, n) both ran",
            "largest ratio mean WS ReLU-RAF / RAF over the common (d, n)",
            "<",
            1.0,
            PAPER,
        ),
        Claim("relu_raf_decreasing", "ReLU-RAF mean WS decreases in n", _STEP, "<", 1.0, PAPER),
        Claim(
            "fig4_rf_alignment",
            "RF cannot separate the two sentences: a >= 0.95 in >= 95% of Figure 4 rows",
            "fraction of rows with a >= 0.95",
            ">=",
            0.95,
            DERIVED,
        ),
        Claim(
            "fig4_raf_alignment",
            f"RAF with the surrogate loss at d = {FIG4_RAF_D} separates them: a <= 0.5 in >= 70% of Figure 4 rows",
            "fraction of rows with a <= 0.5",
            ">=",
            0.70,
            DERIVED,
        ),
        Claim(
            "err_bound",
            "Err >= ((1 + a)(1 - gamma_min))^2 on every row with a >= 0 and gamma_min < 1 "
            "(the curve (2 - 2 gamma)^2 at a = 1)",
            f"fraction of those rows with Err >= bound - {BOUND_SLACK:g} (1 + bound)",
            ">=",
            1.0,
            DERIVED,
        ),
        Claim(
            "fig5_penalty",
            "Figure 5: the median gamma_min decreases as the penalty grows",
            "largest increase of the median gamma_min between consecutive penalties",
            "<",
            0.0,
            PAPER,
        ),
        Claim(
            "not_interpolating",
            "generalisation rows whose first-stage model does not interpolate its training set "
            "(pseudo-inverse solution)",
            "number of rows with interpolates == False",
            None,
            None,
            DERIVED,
        ),
        Claim(
            "map_slope",
            "word sensitivity of a map the paper makes no claim about",
            "least-squares slope of log WS on log n over every trial (all d: one slope, an intercept per d)",
            None,
            None,
            DERIVED,
        ),
    ]
}


def err_lower_bound(alignment: np.ndarray | float, gamma: np.ndarray | float) -> np.ndarray:
    """``((1 + a)(1 - gamma))^2`` where the derived bound applies (``a >= 0``, ``gamma < 1``), else NaN.

    See the module docstring for the statement and its proof: every generalisation row with
    ``a >= 0`` and ``gamma_min < 1`` has ``Err >= err_lower_bound(a, gamma_min)``.
    """
    a = np.asarray(alignment, dtype=float)
    g = np.asarray(gamma, dtype=float)
    applies = (a >= 0) & (g < 1)
    return np.where(applies, ((1 + a) * (1 - g)) ** 2, np.nan)


def table_kind(key: str) -> tuple[str, str] | None:
    """('ws', map) or ('gen', figure) for a table key, None for another table."""
    if key.startswith("ws_") and len(key) > 3:
        return "ws", key[3:]
    m = re.fullmatch(r"gen_(fig[45])_(.+)", key)
    return ("gen", m.group(1)) if m else None


# ----------------------------------------------------------------------------- bootstrap

Stat = Callable[[list[np.ndarray]], np.ndarray]


def claim_rng(seed: int, *parts: object) -> np.random.Generator:
    """The generator of one row of the table: ``PCG64(derive_seed(seed, "claims", *parts))``."""
    return np.random.Generator(np.random.PCG64(derive_seed(seed, "claims", *parts)))


def bootstrap(
    groups: Sequence[np.ndarray], stat: Stat, rng: np.random.Generator, resamples: int
) -> tuple[float, float, float]:
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


def grid_means(groups: list[np.ndarray]) -> np.ndarray:
    """The mean of every group per replicate: shape ``(R, G)`` from groups of shape ``(R, m_g)``."""
    return np.stack([g.mean(axis=1) for g in groups], axis=1)  # (R, G)


# ----------------------------------------------------------------------------- rows


class Rows:
    """The rows of the claims table, added one claim and scope at a time; :meth:`frame` gives the table."""

    def __init__(self, seed: int, resamples: int) -> None:
        self.seed, self.resamples = seed, resamples
        self.rows: list[dict[str, object]] = []

    def not_run(self, claim: str, why: str, *, map_: str = "", data: str = "", scope: str = "") -> None:
        self._add(claim, map_, data, scope, math.nan, (math.nan, math.nan), 0, "not run", False, why)

    def measured(
        self, claim: str, groups: Sequence[np.ndarray], stat: Stat, *, map_: str, data: str, scope: str, note: str = ""
    ) -> tuple[float, float, float]:
        c = CLAIMS[claim]
        rng = claim_rng(self.seed, claim, map_, data, scope)
        value, lo, hi = bootstrap(groups, stat, rng, self.resamples)
        units = int(sum(len(g) for g in groups))
        if not np.isfinite(value):
            self.not_run(
                claim,
                "the statistic is undefined on these rows" + (f"; {note}" if note else ""),
                map_=map_,
                data=data,
                scope=scope,
            )
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

    def _add(
        self,
        claim: str,
        map_: str,
        data: str,
        scope: str,
        value: float,
        ci: tuple[float, float],
        units: int,
        verdict: str,
        straddles: bool,
        note: str,
    ) -> None:
        c = CLAIMS[claim]
        self.rows.append(
            {
                "claim": claim,
                "map": map_,
                "data": data,
                "scope": scope,
                "statement": c.statement,
                "statistic": c.statistic,
                "value": value,
                "ci_low": ci[0],
                "ci_high": ci[1],
                "expectation": c.expectation(),
                "verdict": verdict,
                "straddles": straddles,
                "units": units,
                "source": c.source,
                "note": note,
            }
        )

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.rows, columns=COLUMNS)
        frame["units"] = frame["units"].astype("int64")
        frame["straddles"] = frame["straddles"].astype(bool)
        for col in ("value", "ci_low", "ci_high"):
            frame[col] = frame[col].astype("float64")
        return frame


# ----------------------------------------------------------------------------- grid points


def grid_points(frame: pd.DataFrame, by: list[str], value: str) -> list[tuple[tuple, np.ndarray]]:
    """(key, values) per grid point, sorted by key."""
    out = []
    for key, part in frame.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append((tuple(plain(k) for k in key), part[value].to_numpy(dtype=float)))
    return out


def plain(v: object) -> object:
    """A grouping key as a plain Python value: None for missing, int for integral numbers."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (np.integer, int)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, (np.floating, float)) and float(v).is_integer():
        return int(v)  # a depth or a size read back as a float (CSV, nullable integers)
    return v


def slope_stat(xs: np.ndarray, strata: np.ndarray) -> Stat:
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


def scope_label(cols: Sequence[str], key: Sequence[object]) -> str:
    """``"d=192, L=2"`` for the columns and values of a grid slice (missing values left out)."""
    return ", ".join(f"{c}={k}" for c, k in zip(cols, key, strict=True) if k is not None)


def sim_units(frame: pd.DataFrame, columns: dict[str, pd.Series]) -> list[np.ndarray]:
    """Per grid point, one row per simulation holding the sums of ``columns`` over its rows."""
    work = frame[[*GEN_GRID, "simulation"]].copy()
    for name, series in columns.items():
        work[name] = series.astype(float)
    names = list(columns)
    sums = work.groupby([*GEN_GRID, "simulation"], sort=True)[names].sum().reset_index()
    return [part[names].to_numpy() for _, part in sums.groupby(GEN_GRID, sort=True)]


def fraction_stat(groups: list[np.ndarray]) -> np.ndarray:
    """Pooled fraction over the groups of :func:`sim_units` with columns (hits, total)."""
    hits = sum(g[..., 0].sum(axis=1) for g in groups)
    total = sum(g[..., 1].sum(axis=1) for g in groups)
    return hits / total
