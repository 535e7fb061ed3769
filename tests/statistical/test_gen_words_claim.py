"""``gen_words_rf_vs_raf`` through ``compute_claims`` on simulated gen_words tables: its interval's coverage
and its verdict's power and false-alarm rates, at 6 paired simulations (``config/pretrained.yaml``'s count)
and MiniLM's sizes (d = 384, n = 40, radius 26.5: the derived bounds set RF and RAF apart there).

Noise: the paired differences a(RF) - a(RAF) of the MiniLM run of 2026-11-29 (12 simulations, sd 0.029
and 0.039 per training, right-skewed: two of twelve 0.05-0.07 above their mean), either Gaussian at the
larger sd or resampled from those centred residuals. 300 tables per case: a rate's standard error is at
most 2.9 points, and each bound below stands at least 2.4 of them from the rate measured (docs/claims.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wordsens.studies.claims import compute_claims

TABLES = 300
SIMULATIONS = 6
SPREAD = 0.039  # the larger of the two trainings' sd of the paired difference on MiniLM
RUNS = (
    np.array([0.051, 0.039, 0.089, 0.140, 0.040, 0.075]),  # fine-tuned, mean 0.0724
    np.array([0.034, 0.036, 0.065, 0.112, 0.046, 0.060]),  # re-trained, mean 0.0587
)
RESIDUALS = np.concatenate([run - run.mean() for run in RUNS])


def _table(diffs: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    """A gen_words table of the surrogate loss's best words: RAF's alignment per simulation and RF's
    ``diffs`` above it."""
    rows = []
    for simulation, diff in enumerate(diffs):
        a_raf = 0.9 + 0.03 * rng.standard_normal()
        for map_name, a in (("rf", a_raf + diff), ("raf", a_raf)):
            point = {"model": "minilm", "map": map_name, "d": 384, "n": 40, "N": 400, "simulation": simulation}
            rows.append(
                {**point, "training": "fine_tune", "loss": "surrogate", "penalty": 0.0, "setting": "words"}
                | {"alignment": a, "reaches": False, "radius": 26.5}
            )
    return pd.DataFrame(rows)


def _run(truth: float, noise: str, seed: int) -> tuple[float, dict[str, float]]:
    """Coverage of the truth and the share of each verdict over ``TABLES`` tables."""
    rng = np.random.default_rng(seed)
    covered, verdicts = 0, []
    for _ in range(TABLES):
        if noise == "resampled":
            errors = rng.choice(RESIDUALS, SIMULATIONS)
        else:
            errors = SPREAD * rng.standard_normal(SIMULATIONS)
        claims = compute_claims({"gen_words": _table(truth + errors, rng)})
        row = claims[claims["claim"] == "gen_words_rf_vs_raf"].iloc[0]
        covered += int(row["ci_low"] <= truth <= row["ci_high"])
        verdicts.append(row["verdict"])
    shares = pd.Series(verdicts).value_counts(normalize=True).to_dict()
    return covered / TABLES, {v: float(shares.get(v, 0.0)) for v in ("holds", "fails", "inconclusive")}


@pytest.mark.parametrize("noise", ["gaussian", "resampled"])
def test_rf_vs_raf_covers_and_rarely_says_holds_when_the_maps_are_equal(noise):
    """A true difference of 0: "holds" is a false alarm. Measured: 2.7% (Gaussian), 0.7% (resampled);
    coverage 94% and 89%. Under the skewed residuals a sample without the tail reads "fails" in 10.7% of
    tables (the t-interval's known weakness at 6 skewed units; docs/claims.md)."""
    coverage, shares = _run(0.0, noise, seed=11)
    assert shares["holds"] <= 0.06
    if noise == "gaussian":
        assert coverage >= 0.90 and shares["fails"] <= 0.06
    else:
        assert coverage >= 0.83 and shares["fails"] <= 0.17


@pytest.mark.parametrize("noise", ["gaussian", "resampled"])
def test_rf_vs_raf_holds_at_the_measured_difference_and_fails_when_reversed(noise):
    """The MiniLM run's difference (0.07) holds in 93% (Gaussian) and 100% (resampled) of tables at 6
    simulations; the same difference reversed fails in 94% and 98%."""
    coverage, shares = _run(0.07, noise, seed=12)
    assert shares["holds"] >= 0.85 and shares["fails"] == 0.0 and coverage >= 0.85
    _, reversed_ = _run(-0.07, noise, seed=13)
    assert reversed_["fails"] >= 0.85 and reversed_["holds"] == 0.0
