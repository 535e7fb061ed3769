"""The intervals of the claims table from the independent units a statistic rests on (NumPy only): the
trials of a word-sensitivity grid point, the simulations of a generalisation one, the trained study's
reviews; grid points never share a unit, so pooled points add their variances. One method per kind of
statistic (docs/claims.md says which claim uses which; each method's coverage is measured in
``tests/statistical/test_claim_coverage.py``): :func:`linear` (Welch-Satterthwaite), :func:`geometric`
and :func:`log_ratio` (on the log scale), :func:`worst_point` (Bonferroni), :func:`clopper_pearson` (a
rate) and :func:`median_interval` (order statistics). Below :data:`MIN_UNITS` units per grid point
(:data:`MIN_REVIEWS` reviews, 6 for a median) there is no interval.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95  # the level of every interval of the claims table and of the figures' slopes
MIN_UNITS = 3  # units per grid point below which a sample variance is too rough for an interval
MIN_REVIEWS = 5  # reviews (the trained study's units) below which its mean gets no interval


@dataclass(frozen=True)
class Interval:
    """A statistic, its interval and the number of units it rests on; ``short`` says why there is no
    interval ("not enough data (2 units per grid point; at least 3 needed)"), with NaN bounds."""

    value: float
    low: float
    high: float
    units: int
    short: str = ""


def not_enough(value: float, units: int, why: str) -> Interval:
    return Interval(value, math.nan, math.nan, units, f"not enough data ({why})")


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _t_upper(t: float, df: float) -> float:
    """P(T > t) for t >= 0: ``I_{df / (df + t^2)}(df / 2, 1 / 2) / 2``."""
    return 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=4096)  # the same (q, df) recur: every grid point of m trials has df = m - 1
def t_quantile(q: float, df: float) -> float:
    """Quantile ``q`` (> 0.5) of Student's t with ``df`` (> 0, not necessarily whole) degrees of freedom:
    Newton's method on the distribution function (the incomplete beta function), started at the
    Cornish-Fisher expansion; within 1e-8 relative of scipy.stats.t.ppf for df >= 0.3, q <= 0.99999."""
    if not math.isfinite(df) or df > 1e7:
        return NormalDist().inv_cdf(q)
    z = NormalDist().inv_cdf(q)
    t = max(z + (z**3 + z) / (4 * df), 1e-8)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, hi = 0.0, math.inf
    for _ in range(100):
        excess = (1 - q) - _t_upper(t, df)  # > 0: t is too large
        if excess > 0:
            hi = t
        else:
            lo = t
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = t + excess / density  # Newton on P(T > t) = 1 - q
        t_new = step if lo < step < hi else (lo + (hi if math.isfinite(hi) else 2 * lo + 1)) / 2
        if abs(t_new - t) <= 1e-12 * t:
            return t_new
        t = t_new
    return t


def _few(groups: Sequence[np.ndarray], minimum: int, unit: str) -> str:
    """Why ``groups`` are too few for an interval ("2 trials at a grid point; at least 3 needed"), or ""."""
    counts = [len(g) for g in groups]
    if not counts or min(counts) >= minimum:
        return ""
    where = " at a grid point" if len(groups) > 1 else ""
    return f"{min(counts)} {unit}{where}; at least {minimum} needed"


def _welch(coefs: np.ndarray, groups: Sequence[np.ndarray]) -> tuple[float, float]:
    """Variance of ``sum_p c_p mean_p`` and its Welch-Satterthwaite degrees of freedom."""
    m = np.array([len(g) for g in groups], dtype=float)
    s2 = np.array([np.var(g, ddof=1) for g in groups])
    parts = coefs**2 * s2 / m
    var = float(parts.sum())
    if var <= 0:
        return 0.0, math.inf
    return var, var**2 / float((parts**2 / (m - 1)).sum())


def linear(
    groups: Sequence[np.ndarray],
    coefs: Sequence[float] | np.ndarray,
    *,
    const: float = 0.0,
    level: float = LEVEL,
    minimum: int = MIN_UNITS,
    unit: str = "trials",
) -> Interval:
    """``const + sum_p coefs[p] mean(groups[p])`` (``groups``: each grid point's independent units) with its
    t-interval: variance ``sum_p c_p^2 s_p^2 / m_p``, Satterthwaite's degrees of freedom. A point with fewer
    than ``minimum`` units (and a nonzero coefficient) leaves the statistic without an interval."""
    c = np.asarray(coefs, dtype=float)
    units = int(sum(len(g) for g in groups))
    value = const + float(sum(ci * float(np.mean(g)) for ci, g in zip(c, groups, strict=True)))
    few = _few([g for g, ci in zip(groups, c, strict=True) if ci != 0], minimum, unit)
    if few:
        return not_enough(value, units, few)
    var, df = _welch(c, groups)
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(var) if var > 0 else 0.0
    return Interval(value, value - half, value + half, units)


def geometric(
    values: np.ndarray, *, level: float = LEVEL, minimum: int = MIN_REVIEWS, unit: str = "reviews"
) -> Interval:
    """The geometric mean of positive independent units and its interval: :func:`linear`'s t-interval of
    the mean log, exponentiated. Exact for log-normal units; a skewed positive statistic (a ratio of
    two sensitivities) is far closer to symmetric on the log scale, where a t-interval of the plain mean
    under-covers (measured in ``tests/statistical/test_claim_coverage.py``)."""
    x = np.asarray(values, dtype=float)
    if (x <= 0).any():
        raise ValueError("a geometric mean needs positive values")
    iv = linear([np.log(x)], [1.0], level=level, minimum=minimum, unit=unit)
    return Interval(math.exp(iv.value), math.exp(iv.low), math.exp(iv.high), iv.units, iv.short)


def point_intervals(groups: Sequence[np.ndarray], *, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(means, lows, highs): a t-interval at ``level`` for each group's mean (``len >= 2`` each)."""
    means = np.array([float(np.mean(g)) for g in groups])
    half = np.array(
        [
            t_quantile(0.5 + level / 2, len(g) - 1) * float(np.std(g, ddof=1)) / math.sqrt(len(g))
            if np.std(g, ddof=1) > 0
            else 0.0
            for g in groups
        ]
    )
    return means, means - half, means + half


def _log_ratio_intervals(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point, mean(a) / mean(b) and its interval: delta-method t-interval of the log ratio of two
    independent means (Welch-Satterthwaite degrees of freedom), exponentiated."""
    vals, los, his = [], [], []
    for ga, gb in zip(a, b, strict=True):
        ma, mb = float(np.mean(ga)), float(np.mean(gb))
        ratio, half = ma / mb, math.nan  # no interval for a mean at or below 0
        if ma > 0 and mb > 0:
            var, df = _welch(np.array([1 / ma, -1 / mb]), [ga, gb])
            half = t_quantile(0.5 + level / 2, df) * math.sqrt(var) if var > 0 else 0.0
        vals.append(ratio)
        los.append(ratio * math.exp(-half))
        his.append(ratio * math.exp(half))
    return np.array(vals), np.array(los), np.array(his)


def log_ratio(
    a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, level: float = LEVEL, minimum: int = MIN_UNITS
) -> Interval:
    """Two maps' units at the same grid points (positive): ``exp`` of the mean over the points of
    ``mean(log a_p) - mean(log b_p)``, the geometric mean over the points of the ratio of their geometric
    means, with :func:`linear`'s Welch-Satterthwaite t-interval on the log scale, exponentiated. On the
    log scale the skew and outliers of a map's trials weigh far less than on the means (measured in
    ``tests/statistical/test_claim_coverage.py``)."""
    G = len(a)
    logs = [np.log(np.asarray(g, dtype=float)) for g in [*a, *b]]
    iv = linear(logs, [1 / G] * G + [-1 / G] * G, level=level, minimum=minimum)
    return Interval(math.exp(iv.value), math.exp(iv.low), math.exp(iv.high), iv.units, iv.short)


def worst_point(
    groups: Sequence[np.ndarray], *, lowest: bool, divide_by: Sequence[np.ndarray] | None = None, level: float = LEVEL
) -> tuple[Interval, int]:
    """The smallest (``lowest``) or largest grid-point mean (or ratio of means, ``divide_by``: another map's
    group per point) and that point's index, with a simultaneous interval: each point's t-interval at level
    ``1 - (1 - level) / G`` (Bonferroni), so [extreme of the lows, extreme of the highs] covers the extreme
    of the true means with probability at least ``level``."""
    all_groups = [*groups, *(divide_by or [])]
    units = int(sum(len(g) for g in all_groups))
    G = len(groups)
    each = 1 - (1 - level) / G
    if divide_by is None:
        vals = np.array([float(np.mean(g)) for g in groups])
    else:
        vals = np.array([float(np.mean(a)) / float(np.mean(b)) for a, b in zip(groups, divide_by, strict=True)])
    pick = np.argmin if lowest else np.argmax
    idx = int(pick(vals))
    few = _few(all_groups, MIN_UNITS, "trials")
    if few:
        return not_enough(float(vals[idx]), units, few), idx
    if divide_by is None:
        _, lo, hi = point_intervals(groups, level=each)
    else:
        _, lo, hi = _log_ratio_intervals(groups, divide_by, level=each)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return not_enough(float(vals[idx]), units, "a mean at or below 0 has no interval of its ratio"), idx
    ext = np.min if lowest else np.max
    return Interval(float(vals[idx]), float(ext(lo)), float(ext(hi)), units), idx


def _binom_cdf(k: int, m: int, p: float) -> float:
    return float(sum(math.comb(m, j) * p**j * (1 - p) ** (m - j) for j in range(k + 1)))


def _solve_p(f, target: float) -> float:
    """The p in [0, 1] where the decreasing function ``f(p)`` crosses ``target`` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(hits: int, total: int, *, level: float = LEVEL) -> Interval:
    """The rate ``hits / total`` and its exact (Clopper-Pearson) binomial interval: coverage at least
    ``level`` for every true rate. Without units the rate is undefined (NaN)."""
    if total <= 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    alpha = 1 - level
    # P(X >= hits) = alpha / 2 at the low end, P(X <= hits) = alpha / 2 at the high end; both cdfs fall with p
    low = 0.0 if hits == 0 else _solve_p(lambda p: _binom_cdf(hits - 1, total, p), 1 - alpha / 2)
    high = 1.0 if hits == total else _solve_p(lambda p: _binom_cdf(hits, total, p), alpha / 2)
    return Interval(hits / total, low, high, total)


def median_units_needed(level: float = LEVEL) -> int:
    """The fewest units whose extreme order statistics bound the median at ``level``:
    ``1 - 2 / 2^m >= level`` (6 at 95%)."""
    m = 1
    while 1 - 2 * 0.5**m < level:
        m += 1
    return m


def median_interval(values: np.ndarray, *, level: float = LEVEL) -> Interval:
    """The median of independent units and its distribution-free interval ``[x_(l), x_(m+1-l)]``,
    ``l`` the largest rank with ``P(Binomial(m, 1/2) < l) <= (1 - level) / 2``: coverage at least
    ``level`` for any continuous distribution."""
    x = np.sort(np.asarray(values, dtype=float))
    m = len(x)
    value = float(np.median(x)) if m else math.nan
    need = median_units_needed(level)
    if m < need:
        return not_enough(value, m, f"{m} simulations; a {level:.0%} interval of a median needs at least {need}")
    alpha = 1 - level
    rank = 0
    while _binom_cdf(rank, m, 0.5) <= alpha / 2:  # P(B <= rank) <= alpha/2: rank + 1 is a valid l
        rank += 1
    return Interval(value, float(x[rank - 1]), float(x[m - rank]), m)
