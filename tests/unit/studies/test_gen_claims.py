"""The claims of the generalisation figures (Figures 4 and 5) on hand-made rows whose verdicts are known
(``wordsens.studies.gen.claims`` through ``wordsens.claims``): the Err bound, the identity
D1 - D0 = a (y - t0), RF's alignment and Err, RAF's alignment rate, the rows that do not interpolate, the
penalty of Figure 5 and zero loss."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from claims_tables import SEARCHES, gen_rows, law, one, rows_of, verdict

from wordsens.claims import err_lower_bound
from wordsens.claims.stats import raf_alignment_threshold
from wordsens.studies.claims import compute_claims
from wordsens.studies.gen.claims import check_identity


def test_err_bound_holds_on_every_random_row_satisfying_its_premise():
    rng = np.random.default_rng(12345)
    m = 200_000
    y = rng.choice([-1.0, 1.0], m)
    gamma = rng.uniform(0, 1, m)
    gamma[: m // 10] = rng.uniform(0.999, 1, m // 10)  # near the edge of the premise
    t0 = rng.uniform(-1, 1, m) * gamma
    D0 = rng.uniform(-1, 1, m) * gamma
    corner = slice(m // 10, m // 5)  # the extreme points where the bound is attained
    t0[corner], D0[corner] = y[corner] * gamma[corner], -y[corner] * gamma[corner]
    a = np.concatenate([rng.uniform(0, 3, m // 2), rng.exponential(0.05, m - m // 2)])
    rng.shuffle(a)
    err = (D0 + a * (y - t0) + y) ** 2
    gmin = np.maximum(np.abs(t0), np.abs(D0))
    bound = err_lower_bound(a, gmin)
    assert np.isfinite(bound).all()
    assert (err >= bound - 1e-12 * (1 + bound)).all()
    assert np.allclose(err[corner], bound[corner], rtol=1e-9, atol=1e-12)  # sharp
    assert np.allclose(err_lower_bound(1.0, gmin), (2 - 2 * gmin) ** 2)  # the (2 - 2 gamma)^2 curve at a = 1
    assert np.isnan(err_lower_bound([-0.1, 0.5, 0.5], [0.2, 1.0, 1.5])).all()  # outside the premise


def test_rows_breaking_the_identity_raise():
    """D1 - D0 = a (y - t0) holds by construction: a row that breaks it is a bug, not a claim."""
    gen = gen_rows("fig4", "rf", sims=4, searches=SEARCHES, alignment=lambda s, j: 1.0, gamma=lambda s, j, p: 0.3)
    check_identity(gen)  # rows from the formulas pass
    bad = gen.copy()
    bad.loc[3, "D1"] += 1e-3
    with pytest.raises(ValueError, match=r"internal inconsistency: 1 of 8 .* D1 - D0 = a \(y - t0\)"):
        compute_claims({"gen_fig4_synthetic": bad})
    bad.loc[3, "alignment"] = np.nan  # a non-finite alignment is not checked (and not used)
    check_identity(bad)


def test_fig4_rf_alignment_against_one_minus_the_law():
    """A universal claim: holds without a counterexample, fails on one and names it; never inconclusive."""
    S40 = float(law(40))  # 0.194: RF keeps a >= 0.806 at n = 40
    good = gen_rows("fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: 0.99 - 0.01 * j)
    row = one(compute_claims({"gen_fig4_synthetic": good}), "fig4_rf_alignment")
    assert row["verdict"] == "holds" and row["value"] == 0 and row["units"] == 20
    assert row["note"].startswith("0 counterexamples of 20 rows")
    flips = gen_rows("fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: 0.3 if s < 6 else 1.0)
    row = one(compute_claims({"gen_fig4_synthetic": flips}), "fig4_rf_alignment")
    assert row["verdict"] == "fails" and row["value"] == 12 and row["units"] == 20
    assert "simulation 0 (n=40, N=100, fine_tune, surrogate): a = 0.3000 < 0.8065" in row["note"]
    assert "and 9 more" in row["note"]
    one_sim = gen_rows("fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: 1 - 1.1 * S40 if s == 0 else 1)
    row = one(compute_claims({"gen_fig4_synthetic": one_sim}), "fig4_rf_alignment")
    assert row["verdict"] == "fails" and row["value"] == 2  # one simulation's two rows: a counterexample
    assert np.isnan(row["ci_low"])
    # rounding at the bound is not a counterexample: beyond NUMERICAL_TOL only
    at_bound = gen_rows("fig4", "rf", sims=3, alignment=lambda s, j: (1 - S40) * (1 - 1e-9))
    assert verdict({"gen_fig4_synthetic": at_bound}, "fig4_rf_alignment") == "holds"
    # one row per d, each against the law at its rows' n
    two = pd.concat([good, flips.assign(d=192)])
    out = compute_claims({"gen_fig4_synthetic": two})
    rows = rows_of(out, "fig4_rf_alignment")
    assert dict(zip(rows["scope"], rows["verdict"], strict=True)) == {"d=192": "fails", "d=768": "holds"}


def test_fig4_rf_err_counts_rows_below_the_curve_less_its_slack():
    g = lambda s, j, p: 0.02 * s  # noqa: E731 - gamma from 0 to 0.18: every row has gamma_min < 1
    good = gen_rows("fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: 0.95, gamma=g)
    row = one(compute_claims({"gen_fig4_synthetic": good}), "fig4_rf_err")
    assert row["verdict"] == "holds" and row["value"] == 0 and row["units"] == 20
    flipped = gen_rows("fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: -0.9, gamma=g)
    row = one(compute_claims({"gen_fig4_synthetic": flipped}), "fig4_rf_err")
    assert row["verdict"] == "fails" and row["value"] == 20
    one_sim = gen_rows(
        "fig4", "rf", sims=10, searches=SEARCHES, alignment=lambda s, j: -0.9 if s == 3 else 0.95, gamma=g
    )
    row = one(compute_claims({"gen_fig4_synthetic": one_sim}), "fig4_rf_err")
    assert row["verdict"] == "fails" and row["value"] == 2 and "simulation 3 (n=40, N=100, " in row["note"]
    # what the slack is: with a = 1 - S(n) the row sits exactly on ((2 - S)(1 - gamma))^2
    S = float(law(40))
    edge = gen_rows("fig4", "rf", sims=10, alignment=lambda s, j: 1 - S, gamma=g)
    bound = err_lower_bound(1 - S, edge["gamma_min"])
    assert (edge["err"] >= bound * (1 - 1e-9)).all()
    assert verdict({"gen_fig4_synthetic": edge}, "fig4_rf_err") == "holds"
    large = gen_rows("fig4", "rf", gamma=lambda s, j, p: 1.5)
    assert verdict({"gen_fig4_synthetic": large}, "fig4_rf_err") == "not run"  # no row with gamma_min < 1


def test_generalisation_tables_without_the_new_columns_are_not_run():
    old = gen_rows("fig4", "rf").drop(columns=["alignment", "d0_shift", "interpolates"])
    out = compute_claims({"gen_fig4_synthetic": old})
    for claim in ("fig4_rf_alignment", "not_interpolating"):
        row = one(out, claim)
        assert row["verdict"] == "not run"
        assert "column" in row["note"]


def test_not_interpolating_rows_are_counted():
    raf = gen_rows("fig4", "raf", n=120, N=1300, sims=6, searches=SEARCHES, interpolates=lambda s: s >= 2)
    rf = gen_rows("fig4", "rf", sims=6, searches=SEARCHES)
    out = compute_claims(
        {
            "gen_fig4_synthetic": pd.concat([raf, rf]),
            "gen_fig5_synthetic": gen_rows("fig5", "raf", searches=(("retrain", "penalised", 1.0),)),
        },
    )
    row = one(out, "not_interpolating", scope="fig4")
    assert row["verdict"] == "no claim"
    assert row["value"] == 4  # 2 simulations x 2 searches
    assert row["units"] == 24
    assert "raf n=120 N=1300 d=768: 2" in row["note"]
    assert one(out, "not_interpolating", scope="fig5")["value"] == 0


def test_fig4_raf_alignment_is_a_rate_per_d_n_and_training_on_the_papers_data():
    assert raf_alignment_threshold(768) == pytest.approx(0.5) and raf_alignment_threshold(1536) == 0.5
    assert raf_alignment_threshold(192) == pytest.approx(0.75)
    searches = (("fine_tune", "surrogate", 0.0), ("retrain", "surrogate", 0.0), ("retrain", "direct", 0.0))
    imdb = "imdb:bert-base-uncased:layer0"

    def rows(**kw):
        return gen_rows("fig4", "raf", sims=10, searches=searches, data=imdb, **kw)

    sep = rows(n=40, alignment=lambda s, j: -0.3)  # 10 of 10 separate
    near1 = rows(n=120, alignment=lambda s, j: 0.95 + 0.005 * s)  # none does
    half = rows(n=40, d=384, alignment=lambda s, j: 0.2 if s < 6 else 0.9)  # 6 of 10
    mid = rows(n=40, d=192, alignment=lambda s, j: 0.7)
    out = compute_claims({"gen_fig4_imdb": pd.concat([sep, near1, half, mid])})
    got = {r["scope"]: r for _, r in rows_of(out, "fig4_raf_alignment").iterrows()}
    assert got["d=768, n=40, fine_tune"]["verdict"] == "holds" and got["d=768, n=40, retrain"]["value"] == 1.0
    assert got["d=768, n=40, fine_tune"]["ci_low"] == pytest.approx(0.6915, abs=1e-4)  # Clopper-Pearson, 10 of 10
    assert got["d=768, n=120, fine_tune"]["verdict"] == "fails"  # alignment near 1: RAF does not separate
    assert got["d=384, n=40, retrain"]["verdict"] == "inconclusive"  # 6 of 10 simulations
    assert got["d=192, n=40, fine_tune"]["verdict"] == "holds"  # a = 0.7 separates at d = 192 (threshold 0.75) ...
    assert (
        "a <= 0.75" in got["d=192, n=40, fine_tune"]["statistic"]
        and "a <= 0.5" in got["d=768, n=40, retrain"]["statistic"]
    )
    at768 = compute_claims({"gen_fig4_imdb": mid.assign(d=768)})
    assert set(rows_of(at768, "fig4_raf_alignment")["verdict"]) == {"fails"}  # ... not at the paper's d = 768
    assert got["d=768, n=40, fine_tune"]["units"] == 10  # surrogate rows only, one simulation each
    # the synthetic companion is outside the paper's Figure 4: reported without a verdict
    synthetic = compute_claims({"gen_fig4_synthetic": sep.assign(data="synthetic")})
    row = rows_of(synthetic, "fig4_raf_alignment").iloc[0]
    assert row["verdict"] == "no claim" and row["note"].startswith("outside the paper's setting")
    assert row["value"] == 1.0 and "IMDb" in row["setting"]
    only_direct = gen_rows("fig4", "raf", searches=(("retrain", "direct", 0.0),))
    row = one(compute_claims({"gen_fig4_synthetic": only_direct}), "fig4_raf_alignment")
    assert row["verdict"] == "not run" and "surrogate" in row["note"]


def test_fig5_penalty_is_about_d0_and_zero_loss_is_its_own_case():
    searches = tuple(("fine_tune", "penalised", p) for p in (0.01, 0.1, 1.0))

    def rows(map_name, levels, *, spread=0.1, sims=9, seed=0, gamma=0.3):
        """|D0| = levels[penalty] * (1 + spread (s - 4)), with |t0| = gamma below it."""
        return gen_rows(
            "fig5",
            map_name,
            n=40,
            N=400,
            sims=sims,
            searches=searches,
            gamma=lambda s, j, p: gamma,
            d0=lambda s, j, p: levels[p] * (1 + spread * (s - 4)),
            seed=seed,
        )

    good = rows("raf", {0.01: 1.5, 0.1: 0.8, 1.0: 0.3})
    bad = rows("relu_raf", {0.01: 0.5, 0.1: 0.7, 1.0: 0.7}, seed=1)
    out = compute_claims({"gen_fig5_synthetic": pd.concat([good, bad])})
    row = one(out, "fig5_penalty", map="raf")
    assert row["verdict"] == "holds"
    change = good[good["penalty"] == 1.0]["D0"].abs().to_numpy() - good[good["penalty"] == 0.01]["D0"].abs().to_numpy()
    assert row["value"] == pytest.approx(np.median(change))
    assert row["expectation"] == "< -0.05" and row["units"] == 9
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.sort(change)[[1, 7]]))  # order statistics 2 and 8
    row = one(out, "fig5_penalty", map="relu_raf")
    assert row["verdict"] == "fails" and row["value"] > 0
    assert row["scope"] == "n=40, N=400, d=768, fine_tune"
    # the audit's case: 0.775 -> 0.774, no decrease beyond the searches' reproducibility
    flat = rows("raf", {0.01: 0.775, 0.1: 0.775, 1.0: 0.774}, spread=0.01)
    assert verdict({"gen_fig5_synthetic": flat}, "fig5_penalty") == "fails"
    # too few simulations for a median's interval: not enough data, never a verdict from the point
    few = rows("raf", {0.01: 1.5, 0.1: 0.8, 1.0: 0.3}, sims=5)
    row = one(compute_claims({"gen_fig5_synthetic": few}), "fig5_penalty")
    assert row["verdict"] == "inconclusive" and row["note"].startswith("not enough data (5 simulations")
    # the paper-size IMDb run's case: Err = 0 with D0 = 0 at every penalty: nothing to trade
    zero = gen_rows(
        "fig5",
        "raf",
        n=40,
        N=400,
        sims=8,
        searches=searches,
        alignment=lambda s, j: 1.0,
        gamma=lambda s, j, p: 0.4,
        d0=lambda s, j, p: 0.0,
    )
    # D0 = 0, t0 = 0.4 y, D1 = -y (Err = 0 exactly) and the alignment the identity asks: -1 / 0.6
    zero = zero.assign(t0=zero["y"] * 0.4, D1=-zero["y"], alignment=-1 / 0.6, err=0.0, gamma_min=0.4)
    out = compute_claims({"gen_fig5_imdb": zero.assign(data="imdb:x")})
    pen = one(out, "fig5_penalty")
    assert pen["verdict"] == "not run" and "zero loss at every penalty" in pen["note"]
    z = one(out, "fig5_zero_loss")
    assert z["verdict"] == "no claim" and z["value"] == 8 and z["units"] == 8
    # a mix: the zero-loss simulations are counted apart, the others judged
    mix = pd.concat([good, zero.assign(simulation=zero["simulation"] + 100)])
    out = compute_claims({"gen_fig5_synthetic": mix})
    assert one(out, "fig5_penalty", map="raf")["verdict"] == "holds"
    assert one(out, "fig5_zero_loss", map="raf")["value"] == 8
    assert "8 simulation(s) at zero loss left out" in one(out, "fig5_penalty", map="raf")["note"]
