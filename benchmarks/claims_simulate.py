"""Simulated word-sensitivity tables with a known truth and the noise of real runs, for the claims'
power and coverage (NumPy and pandas only).

A real run's trials at a grid point differ by their review (or Gaussian sample) and their weights;
:func:`point_noise` keeps, per grid point, the log residuals of its trials (centred on their mean,
scaled by ``sqrt(m / (m - 1))`` so that their variance is the unbiased one). :func:`simulated_table`
draws a table of any number of trials per point around a chosen truth by a smoothed resampling of those
residuals: ``r = c (r_i + h e)``, ``r_i`` drawn with replacement, ``e`` standard normal, ``h`` Silverman's
bandwidth ``1.06 s m^(-1/5)`` and ``c = 1 / sqrt(1 + h^2 / s^2)`` (``s^2`` the residuals' variance, which
``r`` keeps), trial value ``truth * exp(r) / E[exp(r)]``: the expected trial value is the truth exactly,
the spread, skew and outliers are the measured ones, and three draws are never equal (a plain resampling
of 10 residuals repeats one value in all three draws of a point 1% of the time: a zero variance no real
run gives). :func:`expected_log` gives the expected log of a trial, the truth of the claims whose
statistic is a slope of log WS. :func:`scaled`, :func:`tilted` and :func:`decaying` change a truth by a known effect.
``tests/statistical/test_claim_power.py`` and ``benchmarks/claims_power.py`` pass
such tables through :func:`wordsens.claims.compute_claims`, the very wiring of a run (a developer's tool:
the tests put this folder on ``sys.path``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from wordsens.theory import rf_law

__all__ = ["Key", "decaying", "expected_log", "point_means", "point_noise", "scaled", "simulated_table", "tilted"]

Key = tuple  # (d, n) or (d, n, L): a grid point of one map and data source


def _key(d: object, n: object, L: object) -> Key:
    return (int(d), int(n)) if L is None or pd.isna(L) else (int(d), int(n), int(L))  # type: ignore[call-overload]


def _points(frame: pd.DataFrame) -> list[tuple[Key, np.ndarray]]:
    has_l = "L" in frame and frame["L"].notna().any()
    cols = ["d", "n", "L"] if has_l else ["d", "n"]
    out = []
    for key, part in frame.groupby(cols, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append((_key(key[0], key[1], key[2] if has_l else None), part["lower"].to_numpy(dtype=float)))
    return out


def point_noise(frame: pd.DataFrame) -> dict[Key, np.ndarray]:
    """The log residuals of each grid point's trials (``lower`` > 0) of one map and data source:
    ``log x - mean(log x)``, times ``sqrt(m / (m - 1))``; points with fewer than 2 trials are left out."""
    out = {}
    for key, values in _points(frame[frame["lower"] > 0]):
        if len(values) >= 2:
            logs = np.log(values)
            out[key] = (logs - logs.mean()) * math.sqrt(len(logs) / (len(logs) - 1))
    return out


def point_means(frame: pd.DataFrame) -> dict[Key, float]:
    """The mean WS of each grid point of one map and data source."""
    return {key: float(values.mean()) for key, values in _points(frame)}


def _smoothing(residuals: np.ndarray) -> tuple[float, float, float]:
    """(h, c, E[exp(r)]) of the smoothed resampling of ``residuals`` (centred, m of them)."""
    s = math.sqrt(float(np.mean(residuals**2)))
    h = 1.06 * s * len(residuals) ** -0.2
    c = 1.0 / math.sqrt(1.0 + (h / s) ** 2) if s > 0 else 1.0
    return h, c, float(np.exp(c * residuals).mean()) * math.exp((c * h) ** 2 / 2)


def expected_log(truth: float, residuals: np.ndarray) -> float:
    """The expected log of a simulated trial at ``truth`` with these residuals (:func:`simulated_table`)."""
    _, c, mean_exp = _smoothing(residuals)
    return math.log(truth) + c * float(residuals.mean()) - math.log(mean_exp)


def simulated_table(
    map_name: str,
    truth: Mapping[Key, float],
    noise: Mapping[Key, np.ndarray],
    trials: int,
    rng: np.random.Generator,
    *,
    data: str = "synthetic",
) -> pd.DataFrame:
    """A ``ws_<map>`` table (the columns the claims read) with ``trials`` trials at every grid point of
    ``truth`` (key -> true mean WS), each ``truth * exp(r) / E[exp(r)]`` with ``r`` a smoothed resampling
    of ``noise[key]`` (:func:`point_noise`; the module's docstring). A key of ``truth`` without noise is an
    error."""
    missing = sorted(set(truth) - set(noise))
    if missing:
        raise ValueError(f"no measured noise at the grid points {missing[:3]} of {map_name}")
    frames = []
    for key, mean in truth.items():
        residuals = noise[key]
        h, c, mean_exp = _smoothing(residuals)
        draws = c * (rng.choice(residuals, size=trials, replace=True) + h * rng.standard_normal(trials))
        values = mean * np.exp(draws) / mean_exp
        frames.append(
            pd.DataFrame(
                {
                    "map": map_name,
                    "data": data,
                    "d": key[0],
                    "n": key[1],
                    "L": key[2] if len(key) > 2 else None,
                    "trial": np.arange(trials),
                    "lower": values,
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["L"] = frame["L"].astype("Int64")
    return frame


def scaled(truth: Mapping[Key, float], factor: float) -> dict[Key, float]:
    """Every point's truth times ``factor`` (a map off its level)."""
    return {key: value * factor for key, value in truth.items()}


def tilted(truth: Mapping[Key, float], slope: float, n0: float) -> dict[Key, float]:
    """Every point's truth times ``(n / n0)^slope`` (a map whose log-log slope is off by ``slope``)."""
    return {key: value * (key[1] / n0) ** slope for key, value in truth.items()}


def decaying(truth: Mapping[Key, float], share: float) -> dict[Key, float]:
    """A map that decays like ``share`` of the RF law: per stratum (d, and L where the key has it) the
    truth at its smallest n times ``(rf_law(n) / rf_law(n0))^share`` (0: flat, 1: like RF)."""
    first: dict[Key, tuple[int, float]] = {}
    for key, value in sorted(truth.items(), key=lambda kv: kv[0][1]):
        first.setdefault((key[0], *key[2:]), (key[1], value))
    out = {}
    for key in truth:
        n0, v0 = first[(key[0], *key[2:])]
        out[key] = v0 * float(rf_law(float(key[1])) / rf_law(float(n0))) ** share
    return out
