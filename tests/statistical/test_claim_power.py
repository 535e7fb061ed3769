"""The power of the word-sensitivity claims at the paper's sizes, through ``compute_claims`` (the wiring
of a run) on simulated tables whose trials carry the noise of real runs, over many seeds.

tests/data/claims_noise.csv holds the trials of real runs on the paper's grids (benchmarks/claims_noise.py,
seed 0, 10 trials per point; docs/claims.md): RF at d = 192, 384, 768, n = 90..150; RAF and ReLU-RAF at
d = 192, 384, 768, n = 10..250; DRF at d = 64 (the paper's 768 needs a GPU), n = 50..80, L = 2, 4, 8; on
Gaussian rows (``synthetic``), on IMDb reviews through the BERT-Base architecture's embedding layer with
random weights (``imdb:bert-base-architecture-random-weights:layer0``: the pre-trained weights are not
available offline) and through the packaged MiniLM's (``imdb:all-MiniLM-L6-v2:layer0``, d <= 384). A
simulated table keeps a map's measured per-point means as its truth, or changes them by a known effect
(``benchmarks/claims_simulate.py``: a factor, a tilt, a decay like a share of RF's), and draws every trial by
resampling that point's real log residuals: the spreads (RF 0.2-1%, RAF 1-11%, ReLU-RAF 2-9% on Gaussian
rows and 14-96% on IMDb rows, DRF in the CSV), their skew and their outliers are the measured ones.

Each case counts verdicts over SEEDS tables. A rate asserted as "at least AT_LEAST of SEEDS" is one
that benchmarks/claims_power.py measured at 97% or more over 100 tables (docs/claims.md): a case whose
true rate is 97% fails the assertion with probability 0.7% (binomial). "Never" is asserted where the
benchmark saw no such verdict in 100 tables. The seeds are fixed, so the outcome is the same on every run.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wordsens.claims.stats import raf_alignment_threshold
from wordsens.studies.claims import compute_claims
from wordsens.theory import rf_law

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))  # the simulated tables
import claims_simulate as sim

NOISE = Path(__file__).resolve().parents[1] / "data" / "claims_noise.csv"
SEEDS = 40
AT_LEAST = 36  # of SEEDS: a true rate of 97% falls below it with probability 0.7%
SYNTHETIC = "synthetic"
BERT = "imdb:bert-base-architecture-random-weights:layer0"
MINILM = "imdb:all-MiniLM-L6-v2:layer0"
DATA = (SYNTHETIC, BERT, MINILM)


def _measured(map_name: str, data: str, *, min_d: int = 192) -> tuple[dict, dict]:
    """(per-point means, per-point log residuals) of a map on a data source, at the paper's d."""
    real = pd.read_csv(NOISE)
    part = real[(real["map"] == map_name) & (real["data"] == data) & (real["d"] >= min_d)]
    if part.empty:
        pytest.skip(f"no measured {map_name} rows on {data}")
    return sim.point_means(part), sim.point_noise(part)


def _counts(truths: dict, noise: dict, claim: str, trials: int, data: str, seed: int) -> dict[str, Counter]:
    """Verdicts of ``claim`` per scope over SEEDS simulated tables (truths: map -> key -> mean)."""
    rng = np.random.default_rng(seed)
    out: dict[str, Counter] = {}
    for _ in range(SEEDS):
        tables = {f"ws_{m}": sim.simulated_table(m, t, noise[m], trials, rng, data=data) for m, t in truths.items()}
        rows = compute_claims(tables)
        for _, row in rows[rows["claim"] == claim].iterrows():
            out.setdefault(row["scope"], Counter())[row["verdict"]] += 1
    return out


def _verdicts(out: pd.DataFrame, claim: str) -> dict[str, str]:
    part = out[out["claim"] == claim]
    return dict(zip(part["scope"], part["verdict"], strict=True))


# ----------------------------------------------------------------------------- RF


@pytest.mark.slow
@pytest.mark.parametrize("data", DATA)
def test_rf_law_fails_two_percent_at_every_paper_d_and_never_a_correct_rf(data):
    """At 10 trials (the default) RF x 1.02 and x 0.98 fail at every d >= 192; RF as measured never
    fails and holds at every d."""
    means, noise = _measured("rf", data)
    correct = _counts({"rf": means}, {"rf": noise}, "rf_law", 10, data, seed=1)
    assert all(c["fails"] == 0 and c["holds"] >= AT_LEAST for c in correct.values()), correct
    for seed, factor in enumerate((1.02, 0.98), start=2):
        off = _counts({"rf": sim.scaled(means, factor)}, {"rf": noise}, "rf_law", 10, data, seed=seed)
        assert all(c["fails"] >= AT_LEAST for c in off.values()), (factor, off)


@pytest.mark.slow
def test_rf_slope_fails_a_tilt_of_016_and_holds_on_rf():
    means, noise = _measured("rf", BERT)
    correct = _counts({"rf": means}, {"rf": noise}, "rf_slope", 10, BERT, seed=4)
    assert all(c["holds"] >= AT_LEAST for c in correct.values()), correct
    for seed, slope in enumerate((0.16, -0.16), start=5):
        off = _counts({"rf": sim.tilted(means, slope, 90)}, {"rf": noise}, "rf_slope", 10, BERT, seed=seed)
        assert all(c["fails"] >= AT_LEAST for c in off.values()), (slope, off)


# ----------------------------------------------------------------------------- decays


@pytest.mark.slow
def test_drf_decays_holds_on_drf_and_fails_on_a_flat_drf_at_every_depth():
    """Both sides: DRF as measured (d = 64, Gaussian rows: it decays like RF) decays at every depth; a
    flat DRF (its level at n = 50 at every n) does not, from 5 trials on, and never holds at 3."""
    means, noise = _measured("drf", SYNTHETIC, min_d=0)
    measured = _counts({"drf": means}, {"drf": noise}, "drf_decays", 10, SYNTHETIC, seed=7)
    assert all(c["holds"] >= AT_LEAST for c in measured.values()), measured
    flat = {"drf": sim.decaying(means, 0.0)}
    five = _counts(flat, {"drf": noise}, "drf_decays", 5, SYNTHETIC, seed=8)
    assert all(c["fails"] >= AT_LEAST for c in five.values()), five
    three = _counts(flat, {"drf": noise}, "drf_decays", 3, SYNTHETIC, seed=9)
    assert all(c["holds"] == 0 for c in three.values()), three


@pytest.mark.slow
@pytest.mark.parametrize("data", DATA)
def test_relu_raf_decays_holds_as_measured_and_never_holds_flat(data):
    """At 10 trials ReLU-RAF as measured decays at every d and a flat one never does; on Gaussian rows
    and MiniLM's the flat one fails at every d, on the BERT architecture's IMDb rows (spreads up to
    96%) it fails in 36-79% and is inconclusive otherwise."""
    means, noise = _measured("relu_raf", data)
    measured = _counts({"relu_raf": means}, {"relu_raf": noise}, "relu_raf_decays", 10, data, seed=10)
    assert all(c["fails"] == 0 and c["holds"] >= AT_LEAST for c in measured.values()), measured
    flat = {"relu_raf": sim.decaying(means, 0.0)}
    counts = _counts(flat, {"relu_raf": noise}, "relu_raf_decays", 10, data, seed=11)
    assert all(c["holds"] == 0 for c in counts.values()), counts
    if data != BERT:
        assert all(c["fails"] >= AT_LEAST for c in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("data", DATA)
def test_raf_no_decay_holds_as_measured_and_fails_a_raf_decaying_like_rf(data):
    """Both sides at 3 trials already: RAF as measured, and one decaying a quarter as fast as RF, hold;
    one decaying three quarters as fast fails."""
    means, noise = _measured("raf", data)
    for seed, share, verdict in ((12, None, "holds"), (13, 0.25, "holds"), (14, 0.75, "fails")):
        truth = means if share is None else sim.decaying(means, share)
        counts = _counts({"raf": truth}, {"raf": noise}, "raf_no_decay", 3, data, seed=seed)
        assert all(c[verdict] >= AT_LEAST for c in counts.values()), (share, counts)


# ----------------------------------------------------------------------------- RAF's level, ReLU-RAF below RAF


@pytest.mark.slow
def test_raf_level_fails_a_forty_percent_deflation_at_every_paper_d():
    """On Gaussian rows (the reference's): RAF as measured holds, 0.6 of it fails, at 3 trials already."""
    means, noise = _measured("raf", SYNTHETIC)
    for seed, trials in enumerate((3, 10), start=14):
        measured = _counts({"raf": means}, {"raf": noise}, "raf_level", trials, SYNTHETIC, seed=seed)
        assert all(c["holds"] >= AT_LEAST for c in measured.values()), (trials, measured)
        deflated = {"raf": sim.scaled(means, 0.6)}
        counts = _counts(deflated, {"raf": noise}, "raf_level", trials, SYNTHETIC, seed=seed + 10)
        assert all(c["fails"] >= AT_LEAST for c in counts.values()), (trials, counts)


@pytest.mark.slow
@pytest.mark.parametrize("data", DATA)
def test_raf_floor_holds_as_measured_from_five_trials_and_fails_a_raf_under_one(data):
    """RAF as measured holds at 5 and 10 trials (at 3 the simultaneous intervals of the noisiest points
    reach the floor: it holds in 0-54% of tables); a RAF whose lowest point is 0.8 (every point scaled
    per d) fails at 10 trials."""
    means, noise = _measured("raf", data)
    for seed, trials in ((16, 5), (17, 10)):
        measured = _counts({"raf": means}, {"raf": noise}, "raf_floor", trials, data, seed=seed)
        assert all(c["holds"] >= AT_LEAST for c in measured.values()), (trials, measured)
    lowest = {d: min(v for k, v in means.items() if k[0] == d) for d in {k[0] for k in means}}
    under = {k: v * 0.8 / lowest[k[0]] for k, v in means.items()}
    counts = _counts({"raf": under}, {"raf": noise}, "raf_floor", 10, data, seed=18)
    assert all(c["fails"] >= AT_LEAST for c in counts.values()), counts


@pytest.mark.slow
@pytest.mark.parametrize("data", DATA)
def test_relu_raf_below_raf_holds_as_measured_and_fails_a_relu_raf_above_raf(data):
    """At 10 trials ReLU-RAF as measured holds at every d; one 20% above RAF (in mean, at every n) fails
    at every d on Gaussian rows and MiniLM's; on the BERT architecture's, whose ReLU-RAF trials are so
    skewed that a mean 20-30% above RAF's is a typical (geometric-mean) value near it, one 30% above
    never holds (and fails in 16-95% of tables)."""
    raf, raf_noise = _measured("raf", data)
    relu, relu_noise = _measured("relu_raf", data)
    noise = {"raf": raf_noise, "relu_raf": relu_noise}
    measured = _counts({"raf": raf, "relu_raf": relu}, noise, "relu_raf_below_raf", 10, data, seed=19)
    assert all(c["fails"] == 0 and c["holds"] >= AT_LEAST for c in measured.values()), measured
    factor = 1.3 if data == BERT else 1.2
    above = {"raf": raf, "relu_raf": {k: factor * v for k, v in raf.items() if k in relu}}
    counts = _counts(above, noise, "relu_raf_below_raf", 10, data, seed=20)
    assert all(c["holds"] == 0 for c in counts.values()), counts
    if data != BERT:
        assert all(c["fails"] >= AT_LEAST for c in counts.values()), counts


# ----------------------------------------------------------------------------- Figure 4, and RF at small d


def _fig4_raf(rate: float, seed: int, d: int = 768) -> pd.DataFrame:
    """Figure 4's RAF surrogate rows at one n: 10 simulations per N in {100, 700, 1300}, each
    separating (a = 0.2) with probability ``rate`` or not (a = 0.95); D1 and Err from the identity."""
    rng = np.random.default_rng(seed)
    rows = []
    for N in (100, 700, 1300):
        for s in range(10):
            for training in ("fine_tune", "retrain"):
                a = 0.2 if rng.random() < rate else 0.95
                y, t0, D0 = 1.0, 0.3, 0.1
                D1 = D0 + a * (y - t0)
                rows.append(
                    {
                        "figure": "fig4", "map": "raf", "data": "imdb:bert-base-uncased:layer0", "d": d, "n": 40,
                        "N": N, "simulation": s, "training": training, "loss": "surrogate", "penalty": 0.0,
                        "y": y, "t0": t0, "t1": y, "D0": D0, "D1": D1, "err": (D1 + y) ** 2,
                        "gamma_min": max(abs(t0), abs(D0)), "alignment": a, "interpolates": True,
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_fig4_raf_alignment_rate_has_power_on_thirty_simulations():
    """A rate claim at the paper's 30 simulations per (d, n, training): a RAF that separates in 90% of
    them holds; one at 30% fails (the exact binomial interval of 9 of 30 ends at 0.49)."""
    assert raf_alignment_threshold(768) == 0.5
    assert set(_verdicts(compute_claims({"gen_fig4_imdb": _fig4_raf(0.9, 12)}), "fig4_raf_alignment").values()) == {
        "holds"
    }
    assert set(_verdicts(compute_claims({"gen_fig4_imdb": _fig4_raf(0.2, 13)}), "fig4_raf_alignment").values()) == {
        "fails"
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "d,ns", [(4, (8, 16, 32)), (8, (8, 16, 32)), (16, (8, 16, 24)), (32, (8, 16, 24)), (64, (16, 64))]
)
def test_a_correct_rf_never_fails_rf_law_at_small_d(d, ns):
    """The real RF search (exact sampler, synthetic rows, 5 trials per point): ``rf_law`` holds or is
    inconclusive at every small d, where the finite-size corrections are largest (8-14% at d = 4) and the
    band is widest (its second-order term)."""
    from wordsens import search
    from wordsens.data.samples import synthetic_sample
    from wordsens.seeds import derive_seed

    rows = []
    for n in ns:
        for t in range(5):
            X = synthetic_sample(n, d, derive_seed("rf-power", d, n, t))
            res = search.estimate("rf", X, seed=derive_seed("rf-power-w", d, n, t))
            rows.append({"map": "rf", "data": "synthetic", "d": d, "n": n, "L": None, "trial": t, "lower": res.lower})
    table = pd.DataFrame(rows).astype({"L": "Int64"})
    out = compute_claims({"ws_rf": table})
    row = out[(out["claim"] == "rf_law")].iloc[0]
    assert row["verdict"] in ("holds", "inconclusive"), row.to_dict()
    ratio = table.groupby("n")["lower"].mean().to_numpy() / rf_law(np.array(ns, dtype=float))
    assert (ratio < 1.02).all(), ratio  # the search stays at or below the plain law (a lower bound of the sup)
