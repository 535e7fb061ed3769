"""Simulated tables for the claims' power and coverage (benchmarks/claims_simulate.py): the noise of a real
table resampled around a known truth, and the effects that change a truth."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wordsens.theory import rf_law

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))  # the simulated tables
import claims_simulate as sim


def _real() -> pd.DataFrame:
    """A 'real' table: two points with log-normal trials of very different spreads, one DRF-like key."""
    rng = np.random.default_rng(0)
    rows = [
        {"map": "raf", "data": "x", "d": 192, "n": n, "L": None, "trial": t, "lower": v}
        for n, cv in ((10, 0.05), (250, 0.6))
        for t, v in enumerate(2.0 * np.exp(cv * rng.standard_normal(10)))
    ]
    return pd.DataFrame(rows)


def test_noise_is_each_points_centred_log_residuals_with_the_unbiased_spread():
    real = _real()
    noise = sim.point_noise(real)
    assert set(noise) == {(192, 10), (192, 250)}
    logs = np.log(real.loc[real["n"] == 250, "lower"].to_numpy())
    np.testing.assert_allclose(noise[(192, 250)], (logs - logs.mean()) * math.sqrt(10 / 9))
    assert noise[(192, 250)].std(ddof=0) == pytest.approx(logs.std(ddof=1))
    assert sim.point_means(real)[(192, 10)] == pytest.approx(real.loc[real["n"] == 10, "lower"].mean())


def test_simulated_trials_have_the_truth_as_mean_and_the_measured_spread():
    real = _real()
    noise = sim.point_noise(real)
    truth = {(192, 10): 3.0, (192, 250): 0.5}
    table = sim.simulated_table("raf", truth, noise, 20_000, np.random.default_rng(1), data="synthetic")
    assert list(table.columns) == ["map", "data", "d", "n", "L", "trial", "lower"] and table["L"].isna().all()
    for (d, n), mean in truth.items():
        values = table.loc[table["n"] == n, "lower"].to_numpy()
        log_sd = float(np.std(np.log(values)))
        assert values.mean() == pytest.approx(mean, rel=4 * log_sd / math.sqrt(len(values)))  # 4 standard errors
        assert log_sd == pytest.approx(float(noise[(d, n)].std()), rel=0.05)
        assert np.log(values).mean() == pytest.approx(sim.expected_log(mean, noise[(d, n)]), abs=4 * log_sd / 141)
    with pytest.raises(ValueError, match=r"no measured noise at the grid points \[\(384, 10\)\]"):
        sim.simulated_table("raf", {(384, 10): 1.0}, noise, 3, np.random.default_rng(0))


def test_effects_scale_tilt_and_decay_a_truth():
    truth = {(192, n, 2): 1.0 + n / 100 for n in (50, 60, 70, 80)} | {(192, 50, 4): 2.0, (192, 80, 4): 3.0}
    assert sim.scaled(truth, 0.6)[(192, 60, 2)] == pytest.approx(0.6 * 1.6)
    assert sim.tilted(truth, -0.5, 50)[(192, 80, 2)] == pytest.approx(1.8 * (80 / 50) ** -0.5)
    flat, like_rf = sim.decaying(truth, 0.0), sim.decaying(truth, 1.0)
    assert flat[(192, 80, 2)] == flat[(192, 50, 2)] == 1.5 and flat[(192, 80, 4)] == 2.0  # per stratum: (d, L)
    assert like_rf[(192, 80, 4)] == pytest.approx(2.0 * rf_law(80.0) / rf_law(50.0))
