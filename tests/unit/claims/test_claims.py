"""The claims table on hand-made tables whose verdicts are known (wordsens.claims).

Every claim is tested on a table where it holds, one where it fails and one where it is
inconclusive (the 95% interval holds both passing and failing values). Tables are deterministic
(fixed seeds); a ``noise`` of 0 gives identical trials, hence a degenerate interval and a verdict
decided by the point, and the noisy tables are sized so that their intervals are wide (few trials,
large spread) or narrow (many trials, small spread) by a wide margin, as each test says.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from wordsens.claims import (
    CLAIMS,
    COLUMNS,
    VERDICTS,
    check_identity,
    claims_from_results,
    claims_html,
    claims_inputs,
    claims_markdown,
    compute_claims,
    err_lower_bound,
    format_claims,
    law_slope,
    read_tables,
)
from wordsens.claims.slope import loglog_slope, ls_slope
from wordsens.claims.stats import raf_alignment_threshold, raf_floor_threshold, rf_level_band
from wordsens.theory import rf_finite_factor, rf_law_finite

DATA = "synthetic"


def law(n):
    n = np.asarray(n, dtype=float)
    return (1 + np.sqrt(2 / n)) / np.sqrt(n)


def ws_table(map_name, points, *, trials=5, noise=0.0, seed=0):
    """One row per trial; ``points`` maps (d, n) or (d, n, L) to the mean WS. Multiplicative noise
    with a zero mean per point (trials paired as +e, -e), so the per-point mean is exact."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, mean in points.items():
        d, n = key[0], key[1]
        L = key[2] if len(key) > 2 else None
        eps = rng.uniform(-noise, noise, size=trials // 2)
        factors = np.concatenate([1 + eps, 1 - eps, [1.0] * (trials % 2)])
        for t, f in enumerate(factors):
            rows.append(
                {"map": map_name, "data": DATA, "d": d, "n": n, "L": L, "trial": t, "lower": mean * f, "upper": None}
            )
    frame = pd.DataFrame(rows)
    frame["L"] = frame["L"].astype("Int64")
    return frame


def rows_of(frame, claim, **match):
    part = frame[frame["claim"] == claim]
    for col, value in match.items():
        part = part[part[col] == value]
    return part


def one(frame, claim, **match):
    part = rows_of(frame, claim, **match)
    assert len(part) == 1, part
    return part.iloc[0]


def verdict(tables, claim, **match):
    return one(compute_claims(tables), claim, **match)["verdict"]


# ----------------------------------------------------------------------------- verdicts


# ----------------------------------------------------------------------------- the log-log slope


def test_one_slope_function_with_an_intercept_per_stratum():
    rng = np.random.default_rng(0)
    x = np.log(np.repeat([10, 20, 40, 80], 3).astype(float))
    y = -0.4 * x + rng.normal(0, 0.05, x.size)
    assert float(ls_slope(x, y)) == pytest.approx(np.polyfit(x, y, 1)[0], rel=1e-12)
    # two strata with different intercepts: one slope, an intercept each
    strata = np.array([0] * 6 + [1] * 6)
    y2 = -0.5 * x + np.where(strata == 1, 2.0, 0.0)
    assert float(ls_slope(x, y2, strata)) == pytest.approx(-0.5, abs=1e-12)
    assert float(ls_slope(x, y2)) != pytest.approx(-0.5, abs=0.05)  # one line through both: biased
    # replicates share the design
    Y = np.stack([y, 2 * y])
    np.testing.assert_allclose(ls_slope(x, Y), [np.polyfit(x, y, 1)[0], 2 * np.polyfit(x, y, 1)[0]], rtol=1e-12)
    assert np.isnan(ls_slope(np.zeros(3), np.ones(3)))
    from wordsens import plots
    from wordsens.plots import studies

    assert studies.loglog_slope is loglog_slope and not hasattr(plots, "loglog_slope")  # one slope, the claims'


def test_the_laws_slope_depends_on_the_grid():
    """Not -1/2: the sqrt(2/n) term steepens it at small n (the numbers of paper.md, section 2)."""
    assert law_slope([90, 100, 110, 120, 130, 140, 150]) == pytest.approx(-0.558, abs=1e-3)
    assert law_slope([64, 256, 1024]) == pytest.approx(-0.543, abs=1e-3)
    assert law_slope([8, 16, 24]) == pytest.approx(-0.639, abs=1e-3)


# ----------------------------------------------------------------------------- RF

RF_N = [90, 100, 110, 120, 130, 140, 150]
DEMO_N = [8, 16, 24]


@pytest.mark.parametrize("ns", [RF_N, DEMO_N, [64, 256, 1024]])
def test_rf_on_its_law_holds_on_any_grid(ns):
    """A perfect RF (its mean on the finite-size law, 2% spread, 20 trials) holds: the slope of
    log(WS / law) is that of the finite-size factor (within 0.1 of 0), whatever the law's own slope on
    the grid (-0.64 on the demo's n, where a window around -1/2 would reject it)."""
    points = {(d, n): float(rf_law_finite(n, d)) for d in (192, 384) for n in ns}
    out = compute_claims({"ws_rf": ws_table("rf", points, trials=20, noise=0.02)})
    for scope in ("d=192", "d=384", "all d"):
        slope = one(out, "rf_slope", scope=scope)
        assert slope["verdict"] == "holds", slope
        assert abs(slope["value"]) < 0.05 and slope["ci_low"] > -0.1 and slope["ci_high"] < 0.1
        assert f"the RF law's over the same n {law_slope(ns):.3f}" in slope["note"]
        level = one(out, "rf_law", scope=scope)
        assert level["verdict"] == "holds" and level["value"] == pytest.approx(1.0, abs=1e-12)


def test_rf_slope_is_the_least_squares_slope_against_the_law():
    table = ws_table("rf", {(192, n): float(law(n)) * n**0.03 for n in RF_N}, noise=0.05)
    row = one(compute_claims({"ws_rf": table}), "rf_slope", scope="d=192")
    expected = np.polyfit(np.log(table["n"]), np.log(table["lower"] / law(table["n"])), 1)[0]
    assert row["value"] == pytest.approx(expected, rel=1e-10)
    assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_rf_slope_fails_and_is_inconclusive():
    shallow = ws_table("rf", {(192, n): 0.9 * n**-0.2 for n in RF_N})  # decays far slower than the law
    row = one(compute_claims({"ws_rf": shallow}), "rf_slope", scope="d=192")
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(-0.2 - law_slope(RF_N), abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((row["value"], row["value"]), abs=1e-12)
    assert not rows_of(compute_claims({"ws_rf": shallow}), "rf_slope", scope="all d").shape[0]
    # a slope 0.1 off the law's with 20% spread over 3 trials: the interval reaches both sides of 0.1
    edge = ws_table("rf", {(192, n): float(law(n)) * (n / 8) ** 0.1 for n in DEMO_N}, trials=3, noise=0.2, seed=1)
    row = one(compute_claims({"ws_rf": edge}), "rf_slope", scope="d=192")
    assert row["verdict"] == "inconclusive" and row["ci_low"] < 0.1 < row["ci_high"]


def test_pooled_slope_has_an_intercept_per_d():
    # d = 192 on n = 90..120, d = 384 on n = 120..150 and twice as large: one line through all
    # points would be pulled up; a slope with an intercept per d is the law's exactly.
    points = {(192, n): float(law(n)) for n in (90, 100, 110, 120)}
    points.update({(384, n): 2 * float(law(n)) for n in (120, 130, 140, 150)})
    out = compute_claims({"ws_rf": ws_table("rf", points)})
    assert one(out, "rf_slope", scope="all d")["value"] == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- DRF, RAF, ReLU-RAF


def test_drf_decays_holds_fails_inconclusive_per_depth():
    ns = (50, 60, 70, 80)
    points = {(768, n, 2): 0.3 * n**-0.4 for n in ns}
    points.update({(768, n, 4): 0.01 * n for n in ns})  # grows
    points.update({(768, n, 6): 0.2 * n**-0.05 for n in ns})  # decays, but by less than the claim's -0.1
    noisy = {(768, n, 8): 0.2 * n**-0.1 for n in ns}  # at the threshold, with a 30% spread
    table = pd.concat([ws_table("drf", points, trials=10, noise=0.05), ws_table("drf", noisy, trials=4, noise=0.3)])
    out = compute_claims({"ws_drf": table})
    verdicts = {r["scope"]: r["verdict"] for _, r in rows_of(out, "drf_decays").iterrows()}
    assert verdicts == {
        "d=768, L=2": "holds",
        "d=768, L=4": "fails",
        "d=768, L=6": "fails",
        "d=768, L=8": "inconclusive",
    }
    exact = compute_claims({"ws_drf": ws_table("drf", points)})
    assert one(exact, "drf_decays", scope="d=768, L=2")["value"] == pytest.approx(-0.4, abs=1e-12)
    assert one(exact, "drf_decays", scope="d=768, L=2")["expectation"] == "< -0.1"


RAF_N = [10, 20, 50, 100, 150, 200, 250]


def test_raf_floor_has_a_threshold_per_d():
    assert raf_floor_threshold(16) == pytest.approx(0.5) and raf_floor_threshold(32) == pytest.approx(0.5**0.5)
    assert raf_floor_threshold(64) == raf_floor_threshold(768) == 1.0
    points = {(16, n): 0.8 for n in RAF_N}  # order one for d = 16: holds
    points.update({(192, n): 0.5 for n in RAF_N})  # the audit's RAF with WS 0.5 at d = 192: fails
    points.update({(384, n): 1.05 for n in RAF_N})  # near the floor with a 30% spread: inconclusive
    table = pd.concat(
        [
            ws_table("raf", {k: v for k, v in points.items() if k[0] != 384}),
            ws_table("raf", {k: v for k, v in points.items() if k[0] == 384}, trials=3, noise=0.3, seed=4),
        ]
    )
    out = compute_claims({"ws_raf": table})
    rows = {r["scope"]: r for _, r in rows_of(out, "raf_floor").iterrows()}
    assert [rows[s]["verdict"] for s in ("d=16", "d=192", "d=384")] == ["holds", "fails", "inconclusive"]
    assert rows["d=16"]["expectation"] == ">= 0.5" and rows["d=192"]["expectation"] == ">= 1"
    assert "mean WS >= 0.5 at d = 16" in rows["d=16"]["statement"]
    assert rows["d=192"]["value"] == pytest.approx(0.5)


def test_raf_no_decay_compares_the_slope_with_the_laws():
    flat = {(768, n): 2.0 for n in RAF_N}
    like_rf = {(384, n): 3.0 * float(law(n)) for n in RAF_N}  # decays like random features
    half = {(192, n): 2.0 * float(law(n)) ** 0.5 for n in RAF_N}  # exactly half the law's slope ...
    table = pd.concat([ws_table("raf", flat), ws_table("raf", like_rf), ws_table("raf", half, trials=4, noise=0.3)])
    out = compute_claims({"ws_raf": table})
    assert one(out, "raf_no_decay", scope="d=768")["verdict"] == "holds"
    assert one(out, "raf_no_decay", scope="d=768")["value"] == pytest.approx(0.0, abs=1e-12)
    assert one(out, "raf_no_decay", scope="d=384")["verdict"] == "fails"
    assert one(out, "raf_no_decay", scope="d=384")["value"] == pytest.approx(1.0, abs=1e-12)
    assert one(out, "raf_no_decay", scope="d=192")["verdict"] == "inconclusive"  # ... with a 30% spread
    one_n = compute_claims({"ws_raf": ws_table("raf", {(64, 10): 2.0})})
    assert one(one_n, "raf_no_decay")["verdict"] == "not run" and "one n" in one(one_n, "raf_no_decay")["note"]


def test_relu_raf_against_raf_per_d():
    ns = [10, 20, 50]
    raf = ws_table("raf", {(d, n): 2.0 for d in (16, 192, 384) for n in ns})
    relu = {(192, n): 0.5 / n**0.5 for n in ns}  # below and decaying: holds
    relu.update({(384, n): 3.0 for n in ns})  # above and flat: fails
    noisy = {(16, n): 1.9 * (10 / n) ** 0.01 for n in ns}  # just below and nearly flat, noisy
    tables = {
        "ws_raf": raf,
        "ws_relu_raf": pd.concat([ws_table("relu_raf", relu), ws_table("relu_raf", noisy, trials=3, noise=0.4)]),
    }
    out = compute_claims(tables)
    below = {r["scope"]: r for _, r in rows_of(out, "relu_raf_below_raf").iterrows()}
    assert [below[s]["verdict"] for s in ("d=16", "d=192", "d=384")] == ["inconclusive", "holds", "fails"]
    assert below["d=192"]["value"] == pytest.approx(0.25 / 10**0.5)
    assert below["d=384"]["value"] == pytest.approx(1.5)
    decays = {r["scope"]: r["verdict"] for _, r in rows_of(out, "relu_raf_decays").iterrows()}
    assert decays == {"d=16": "inconclusive", "d=192": "holds", "d=384": "fails"}
    only = compute_claims({"ws_raf": ws_table("raf", {(32, 10): 1.0, (32, 20): 1.0}), **tables})
    assert "d=16" in set(rows_of(only, "relu_raf_below_raf")["scope"])


def test_a_registered_toy_map_gets_its_slope_without_a_verdict():
    toy = ws_table("toy_map", {(64, n): 3.0 * n**-0.3 for n in (10, 20, 40)}, noise=0.1)
    out = compute_claims({"ws_toy_map": toy})
    row = one(out, "map_slope", map="toy_map")
    assert row["verdict"] == "no claim"
    assert row["value"] == pytest.approx(np.polyfit(np.log(toy["n"]), np.log(toy["lower"]), 1)[0], rel=1e-10)
    assert row["ci_low"] < row["value"] < row["ci_high"]
    assert row["value"] == pytest.approx(-0.3, abs=0.02)


def test_missing_tables_are_not_run_with_a_reason():
    out = compute_claims({"ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N})})
    for claim in set(CLAIMS) - {"rf_slope", "rf_law", "map_slope"}:
        row = one(out, claim)
        assert row["verdict"] == "not run", claim
        assert row["note"]
        assert math.isnan(row["value"])
    assert "ws_drf.parquet" in one(out, "drf_decays")["note"]
    assert "{" not in one(out, "raf_floor")["statement"]  # the fields' defaults where no d is known
    assert list(out.columns) == COLUMNS
    empty = compute_claims({})  # no table at all: every claim not run, no error
    assert set(empty["verdict"]) == {"not run"}


def gen_rows(
    figure,
    map_name,
    *,
    n=40,
    N=100,
    d=768,
    sims=10,
    searches=(("fine_tune", "surrogate", 0.0),),
    alignment=None,
    gamma=None,
    seed=0,
    interpolates=True,
    data=DATA,
    d0=None,
):
    """Rows built from the formulas: D1 = D0 + a (y - t0), Err = (D1 + y)^2.

    ``alignment(sim, search_index)`` and ``gamma(sim, search_index, penalty)`` give a and the
    scale of t0, D0 (drawn in [-gamma, gamma], one of them at +-gamma so gamma_min = gamma);
    ``d0(sim, search_index, penalty)``, where given, sets D0 itself (t0 then at +-gamma)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sims):
        for j, (training, loss, penalty) in enumerate(searches):
            a = alignment(s, j) if alignment else rng.uniform(0.9, 1.1)
            g = gamma(s, j, penalty) if gamma else rng.uniform(0, 2)
            y = float(rng.choice([-1.0, 1.0]))
            t0 = g * float(rng.choice([-1.0, 1.0]))
            D0 = d0(s, j, penalty) if d0 else rng.uniform(-g, g)
            D1 = D0 + a * (y - t0)
            rows.append(
                {
                    "figure": figure,
                    "map": map_name,
                    "data": data,
                    "d": d,
                    "n": n,
                    "N": N,
                    "simulation": s,
                    "training": training,
                    "loss": loss,
                    "penalty": penalty,
                    "y": y,
                    "t0": t0,
                    "t1": y,
                    "D0": D0,
                    "D1": D1,
                    "err": (D1 + y) ** 2,
                    "gamma_min": max(abs(t0), abs(D0)),
                    "alignment": a,
                    "d0_shift": abs(D0 - t0),
                    "interpolates": interpolates(s) if callable(interpolates) else interpolates,
                }
            )
    return pd.DataFrame(rows)


SEARCHES = (("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0))


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


# ----------------------------------------------------------------------------- I/O and rendering


def test_claims_from_results_reads_the_tables_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="tables"):
        claims_from_results(tmp_path)
    tables = tmp_path / "tables"
    tables.mkdir()
    ws_table("rf", {(192, n): float(law(n)) for n in RF_N}).to_parquet(tables / "ws_rf.parquet")
    gen_rows("fig4", "rf", alignment=lambda s, j: 1.0).to_parquet(tables / "gen_fig4_synthetic.parquet")
    pd.DataFrame({"x": [1]}).to_parquet(tables / "attention_fig1.parquet")  # another table: ignored
    out = claims_from_results(tmp_path)
    assert one(out, "rf_slope", scope="d=192")["verdict"] == "holds"
    assert one(out, "fig4_rf_alignment")["verdict"] == "holds"


def test_bad_tables_are_clear_errors():
    with pytest.raises(ValueError, match="unknown table 'figure2'"):
        compute_claims({"figure2": pd.DataFrame()})
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['lower'\]"):
        compute_claims({"ws_rf": ws_table("rf", {(8, 4): 1.0}).drop(columns="lower")})


def test_renderings_show_every_claim_and_one_verdict_each():
    tables = {
        "ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N}, noise=0.05),
        "ws_drf": ws_table("drf", {(64, n, 2): 1.0 / n for n in (10, 20)}),
        "gen_fig4_synthetic": gen_rows("fig4", "rf"),
    }
    frame = compute_claims(tables)
    assert set(frame["verdict"]) <= set(VERDICTS)
    text = format_claims(frame)
    for claim in frame["claim"]:
        assert claim in text
    assert f"{len(frame)} claims:" in text and "inconclusive" in text
    assert "not run" in text and "holds" in text and "straddles" not in text
    md = claims_markdown(frame)
    assert md.count("\n| ") == len(frame) + 1  # header + one line per row
    page = claims_html(frame.assign(note=frame["note"].where(frame["claim"] != "rf_law", "a < b & c")))
    assert "a &lt; b &amp; c" in page and page.count("<tr ") == len(frame)


# ----------------------------------------------------------------------------- trained encoder (report only)

TRAINED_COLUMNS = ["model", "review", "layer", "n", "d", "convention", "map", "kind", "head", "draw", "position"]
TRAINED_COLUMNS += ["token", "ws", "phi_norm", "row_norm", "radius", "entropy", "steps", "seconds", "seed"]
COUNTERPARTS = {
    ("trained_attention", "paper"): ["mh_raf"],
    ("trained_attention", "model"): ["matched_attention"],
    ("trained_layer", "paper"): ["block", "ln_block"],
    ("trained_layer", "model"): ["matched_layer"],
}


def trained_table(
    ratios, *, layers=(1, 2), n=128, d=384, conventions=("paper",), random_ws=0.5, draws=2, model="minilm", token="word"
):
    """Rows of the trained study: per layer, convention and review, each trained map of ``ratios`` (map ->
    one ratio per review) at ``ratio * random_ws`` beside each of its counterparts in that convention,
    whose ``draws`` draws are at ``random_ws * (1 -+ 0.1)`` (mean ``random_ws``; None: no random rows, the
    trained maps at ``ratio``), whole maps (head 0), one moved row of kind ``token``; entropy 1.5 (trained)
    and 4.0 (random)."""
    rows = []
    for layer in layers:
        for convention in conventions:
            row_norm = math.sqrt(d) if convention == "paper" else 10.0
            for trained, per_review in ratios.items():
                for review, ratio in enumerate(per_review):
                    runs = [(trained, "trained", 0, ratio * (1.0 if random_ws is None else random_ws), 1.5)]
                    if random_ws is not None:
                        spread = np.linspace(-0.1, 0.1, draws) if draws > 1 else [0.0]
                        for name in COUNTERPARTS[(trained, convention)]:
                            runs += [(name, "random", k, random_ws * (1 + e), 4.0) for k, e in enumerate(spread)]
                    for name, kind, draw, ws, entropy in runs:
                        rows.append(
                            {
                                **{"model": model, "review": review, "layer": layer, "n": n, "d": d},
                                **{"convention": convention, "map": name, "kind": kind, "head": 0, "draw": draw},
                                **{"position": 5, "token": token, "ws": ws, "phi_norm": 1.0, "row_norm": row_norm},
                                **{"radius": math.sqrt(d), "entropy": entropy, "steps": 10, "seconds": 0.1, "seed": 7},
                            }
                        )
    return pd.DataFrame(rows, columns=TRAINED_COLUMNS)


def test_trained_ratio_per_convention_and_counterpart_at_the_largest_n_without_a_verdict():
    table = pd.concat(
        [
            trained_table({"trained_attention": [2.0, 4.0], "trained_layer": [1.0, 3.0]}),
            trained_table({"trained_attention": [10.0, 10.0], "trained_layer": [10.0, 10.0]}, n=64),  # smaller n
            trained_table({"trained_attention": [0.5, 1.5], "trained_layer": [0.2, 0.4]}, conventions=("model",)),
        ],
        ignore_index=True,
    )
    heads = trained_table({"trained_attention": [50.0, 50.0]}, random_ws=None).assign(head=1)  # one head: left out
    out = compute_claims({"trained": pd.concat([table, heads], ignore_index=True)})
    rows = rows_of(out, "trained_ratio")
    expected = {}
    for layer in (1, 2):
        paper, model = f"layer={layer}, n=128, convention=paper", f"layer={layer}, n=128, convention=model"
        expected[("trained_attention", "mh_raf", paper)] = 3.0
        expected[("trained_layer", "block", paper)] = 2.0
        expected[("trained_layer", "ln_block", paper)] = 2.0
        expected[("trained_attention", "matched_attention", model)] = 1.0
        expected[("trained_layer", "matched_layer", model)] = 0.3
    got = {(r["map"], r["statement"].split("(")[1].split(")")[0], r["scope"]): r["value"] for _, r in rows.iterrows()}
    assert got == pytest.approx(expected, rel=1e-12)
    assert set(rows["verdict"]) == {"no claim"} and set(rows["units"]) == {2} and set(rows["data"]) == {"imdb"}
    assert set(rows["expectation"]) == {"none (reported)"}
    # two reviews: no interval (at least 5 needed), never the min-max of two numbers
    assert rows["ci_low"].isna().all() and rows["ci_high"].isna().all()
    attention = one(out, "trained_ratio", map="trained_attention", scope="layer=1, n=128, convention=paper")
    assert attention["note"].startswith("not enough data (2 reviews; at least 5 needed)")
    # each row holds its definitions: the convention, what the counterpart matches, the regime
    assert "paper convention: rows rescaled to norm sqrt(d), a ball of radius sqrt(d)" in attention["note"]
    assert "mh_raf: same d and heads; i.i.d. N(0, 1/d) weights" in attention["note"]
    assert "mean attention entropy (nats) trained 1.5, random 4 (uniform: ln n = 4.85)" in attention["note"]
    assert "per-review ratio 2 to 4" in attention["note"] and "2 draw(s) of mh_raf" in attention["note"]
    model = one(out, "trained_ratio", map="trained_attention", scope="layer=2, n=128, convention=model")
    assert "a ball of radius ||x_i|| around the moved row" in model["note"]
    assert "matched_attention: the trained weights' singular values" in model["note"]
    assert "matched_attention" in model["statement"] and "{" not in model["statement"]
    five = compute_claims({"trained": trained_table({"trained_attention": [2.0, 4.0, 3.0, 2.5, 3.5]}, layers=(1,))})
    row = one(five, "trained_ratio")
    assert row["value"] == pytest.approx(3.0) and row["units"] == 5 and row["verdict"] == "no claim"
    half = 2.776445 * np.std([2.0, 4.0, 3.0, 2.5, 3.5], ddof=1) / math.sqrt(5)  # t(4) quantile
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((3.0 - half, 3.0 + half), rel=1e-4)
    four = compute_claims({"trained": trained_table({"trained_attention": [2.0, 4.0, 3.0, 2.5]}, layers=(1,))})
    assert one(four, "trained_ratio")["note"].startswith("not enough data (4 reviews; at least 5 needed)")
    assert not out.duplicated(["claim", "map", "data", "scope", "statement"]).any()
    assert CLAIMS["trained_ratio"].op is None and CLAIMS["trained_ratio"].source.startswith("derived")
    pd.testing.assert_frame_equal(out, compute_claims({"trained": table.iloc[::-1]}))


def test_trained_ratio_averages_draws_and_moved_rows_per_review_and_reports_specials_apart():
    """A review's WS is the mean over its moved rows (and a random map's draws): the ratio of the means,
    not the mean of per-draw ratios; [CLS] rows are their own rows, never pooled with the words."""
    table = trained_table({"trained_attention": [3.0] * 5}, layers=(4,), draws=4)
    draws = table["map"] == "mh_raf"
    table.loc[draws, "ws"] = np.tile([0.25, 0.25, 1.0, 0.5], 5)  # mean 0.5 per review; mean of 1/ws is not 2
    table.loc[~draws, "ws"] = 1.0
    cls = trained_table({"trained_attention": [8.0] * 5}, layers=(4,), token="[CLS]")
    out = compute_claims({"trained": pd.concat([table, cls], ignore_index=True)})
    words = one(out, "trained_ratio", scope="layer=4, n=128, convention=paper")
    assert words["value"] == pytest.approx(2.0) and words["ci_low"] == pytest.approx(2.0)
    assert "4 draw(s) of mh_raf" in words["note"]
    at_cls = one(out, "trained_ratio", scope="layer=4, n=128, convention=paper, at [CLS]")
    assert at_cls["value"] == pytest.approx(8.0)


def test_trained_ratio_without_random_rows_is_not_run_and_says_what_is_absent():
    only_trained = trained_table({"trained_attention": [2.0, 4.0], "trained_layer": [1.0, 3.0]}, random_ws=None)
    out = compute_claims({"trained": only_trained})
    rows = rows_of(out, "trained_ratio")
    assert set(rows["verdict"]) == {"not run"} and rows["value"].isna().all()
    assert len(rows) == 6  # per layer: trained_attention beside mh_raf, trained_layer beside block and ln_block
    note = one(out, "trained_ratio", map="trained_attention", scope="layer=1, n=128, convention=paper")["note"]
    assert "no mh_raf rows" in note
    # one map with its pair, one review of it without: the pair is reported, the lone review noted
    mixed = trained_table({"trained_attention": [2.0, 4.0]}, layers=(3,))
    mixed = mixed[~((mixed["map"] == "mh_raf") & (mixed["review"] == 1))]
    row = one(compute_claims({"trained": mixed}), "trained_ratio")
    assert (row["verdict"], row["value"], row["units"]) == ("no claim", 2.0, 1)
    assert row["scope"] == "layer=3, n=128, convention=paper"
    assert "1 review(s) with one map only left out" in row["note"]
    # no table, an empty one, or single heads only: one row, not run, no error
    for tables in ({}, {"trained": only_trained.iloc[:0]}):
        row = one(compute_claims(tables), "trained_ratio")
        assert row["verdict"] == "not run" and "trained.parquet" in row["note"]
    heads_only = compute_claims({"trained": only_trained.assign(head=1)})
    assert "head 0" in one(heads_only, "trained_ratio")["note"]


def test_trained_table_without_a_required_column_is_an_error():
    table = trained_table({"trained_attention": [2.0]})
    for column in ("ws", "convention", "token", "draw", "model"):
        with pytest.raises(ValueError, match=rf"table 'trained' lacks the column\(s\) \['{column}'\]"):
            compute_claims({"trained": table.drop(columns=column)})
    compute_claims({"trained": table.drop(columns=["kind", "phi_norm", "steps", "entropy"])})  # not needed


def test_trained_pairs_are_the_registry_counterparts():
    from wordsens.maps import CONVENTIONS, registry

    declared = {(name, c.convention): [] for name in registry.names() for c in registry.get(name).counterparts}
    for name in registry.names():
        for c in registry.get(name).counterparts:
            declared[(name, c.convention)].append(c.map)
            assert c.convention in CONVENTIONS and c.map in registry.names() and c.matches
    assert declared == COUNTERPARTS


def test_trained_table_is_read_from_the_results_folder(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    trained_table({"trained_attention": [2.0, 4.0]}).to_parquet(tables / "trained.parquet")
    assert set(read_tables(tmp_path)) == {"trained"}
    assert set(claims_inputs(read_tables(tmp_path))) == {"trained"}
    row = one(claims_from_results(tmp_path), "trained_ratio", scope="layer=2, n=128, convention=paper")
    assert (row["value"], row["verdict"]) == (3.0, "no claim")


# ----------------------------------------------------------------------------- light imports

HEAVY = ("torch", "matplotlib", "seaborn", "transformers")
LIGHT_RUN = """
import json, sys
from wordsens.claims import claims_from_results, claims_html, claims_markdown, format_claims
frame = claims_from_results(sys.argv[1])
format_claims(frame), claims_markdown(frame), claims_html(frame)
print(json.dumps({"claims": sorted(set(frame["claim"])), "heavy": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def test_claims_run_without_torch_or_plotting_libraries(tmp_path):
    """``wordsens claims`` stays light: computing and rendering the table (the RF law included) loads
    neither torch nor the plotting libraries. Run in a fresh interpreter, since this one has them."""
    tables = tmp_path / "tables"
    tables.mkdir()
    ws_table("rf", {(192, n): float(law(n)) for n in RF_N}).to_parquet(tables / "ws_rf.parquet")
    gen_rows("fig4", "rf").to_parquet(tables / "gen_fig4_synthetic.parquet")
    trained_table({"trained_attention": [2.0, 4.0]}).to_parquet(tables / "trained.parquet")
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_RUN, str(tmp_path), *HEAVY], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"rf_slope", "rf_law", "fig4_rf_alignment", "fig4_rf_err", "trained_ratio"} <= set(out["claims"])
    assert out["heavy"] == []


def test_rf_law_is_this_projects_estimate_and_one_function():
    from wordsens import theory
    from wordsens.maps import registry
    from wordsens.plots import common

    # the figures draw the law the registry's RF entry names (MapSpec.law), this one function
    assert registry.resolve(registry.get("rf").law) is theory.rf_law and common.map_law("rf")[0] is theory.rf_law
    assert theory.rf_law(np.array([90, 150])) == pytest.approx([0.1211, 0.0911], abs=1e-4)  # paper.md: 0.12, 0.09
    assert theory.rf_law(4.0) == pytest.approx(law(4.0)) and np.ndim(theory.rf_law(4.0)) == 0
    assert "not a formula of the paper" in theory.rf_law.__doc__
    assert CLAIMS["rf_law"].source.startswith("derived")


def test_one_verdict_per_row_from_the_interval():
    c = CLAIMS["drf_decays"]  # < -0.1
    assert c.verdict(-0.5, -0.6, -0.4) == "holds"
    assert c.verdict(0.2, 0.1, 0.3) == "fails"
    assert c.verdict(-0.1, -0.3, 0.1) == "inconclusive"
    assert c.verdict(-0.5, np.nan, np.nan) == "inconclusive"  # no interval (not enough data): never decided
    band = CLAIMS["rf_law"]  # in [0.97, 1.03] by default; rows pass their own d-dependent band
    assert band.verdict(1.0, 0.99, 1.01) == "holds"
    assert band.verdict(1.1, 1.07, 1.13) == "fails" and band.verdict(0.8, 0.75, 0.85) == "fails"
    assert band.verdict(1.02, 1.0, 1.04) == "inconclusive" and band.verdict(1.0, 0.8, 1.2) == "inconclusive"
    assert band.verdict(1.0, 0.9, 1.1, (0.85, 1.15)) == "holds"
    assert CLAIMS["map_slope"].verdict(-0.5, -0.6, -0.4) == "no claim"
    for claim in CLAIMS.values():  # every op: an interval that reaches both sides is never holds/fails
        if claim.op in (None, "in"):
            continue
        t = claim.threshold
        assert claim.verdict(t, t - 1, t + 1) == "inconclusive", claim.id
        assert {claim.verdict(t - 1, t - 1.5, t - 0.5), claim.verdict(t + 1, t + 0.5, t + 1.5)} == {"holds", "fails"}
    kinds = {c.id: c.kind for c in CLAIMS.values()}
    assert kinds["fig4_rf_alignment"] == kinds["fig4_rf_err"] == "universal"
    assert kinds["fig4_raf_alignment"] == "rate"
    assert all(c.setting for c in CLAIMS.values())


def test_rf_level_is_judged_against_the_finite_size_law_with_a_band_per_size():
    # at the paper's sizes the band is narrow (the finite-size correction is 1-1.5%) ...
    lo, hi = rf_level_band([90, 150], [192, 768])
    assert 0.95 < lo < 0.96 and 1.04 < hi < 1.05
    # ... at small d it is wide, since the first-order corrections themselves are large
    lo, hi = rf_level_band([8, 16], [4, 4])
    assert lo < 0.86 and hi > 1.14
    assert rf_finite_factor(90, 192) == pytest.approx(0.985, abs=1e-3)
    real = ws_table("rf", {(d, n): float(rf_law_finite(n, d)) for d in (192, 384) for n in RF_N}, trials=10, noise=0.02)
    out = compute_claims({"ws_rf": real})
    assert set(rows_of(out, "rf_law")["verdict"]) == {"holds"}
    row = one(out, "rf_law", scope="d=192")
    assert row["expectation"] == "in [{:.4g}, {:.4g}]".format(*rf_level_band(RF_N, [192] * len(RF_N)))
    assert "mean WS / law (no finite-size correction) 0.98" in row["note"]
    for factor in (1.12, 0.88):  # the audit's fake tables: 12% off
        out = compute_claims({"ws_rf": real.assign(lower=real["lower"] * factor)})
        assert set(rows_of(out, "rf_law")["verdict"]) == {"fails"}, factor
        assert one(out, "rf_law", scope="all d")["value"] == pytest.approx(factor, rel=1e-12)
    # 4% above its level with a 30% spread over 3 trials at d = 16: the interval crosses the band
    noisy = ws_table("rf", {(16, n): 1.04 * float(rf_law_finite(n, 16)) for n in DEMO_N}, trials=3, noise=0.3, seed=2)
    row = one(compute_claims({"ws_rf": noisy}), "rf_law", scope="d=16")
    assert row["verdict"] == "inconclusive" and row["value"] == pytest.approx(1.04, rel=1e-12)


def test_too_few_trials_are_not_enough_data_never_a_certain_verdict():
    """One trial per point: no interval, "inconclusive: not enough data", whatever the point says."""
    one_trial = ws_table("rf", {(192, n): 2.0 * float(law(n)) for n in RF_N}, trials=1)
    out = compute_claims({"ws_rf": one_trial})
    for claim in ("rf_law", "rf_slope"):
        row = one(out, claim, scope="d=192")
        assert row["verdict"] == "inconclusive", row
        assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
        assert row["note"].startswith("not enough data (1 trials at a grid point; at least 3 needed)")
    # a point with too few trials beside enough ones is left out, and said so
    mixed = pd.concat(
        [
            ws_table("rf", {(192, n): float(rf_law_finite(n, 192)) for n in RF_N}),
            ws_table("rf", {(192, 160): 5.0}, trials=1),
        ]
    )
    row = one(compute_claims({"ws_rf": mixed}), "rf_law", scope="d=192")
    assert row["verdict"] == "holds" and "1 grid point(s) with fewer than 3 trials left out" in row["note"]


def test_intervals_are_closed_forms_of_each_rows_own_units():
    tables = {"ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N}, noise=0.2, seed=3)}
    first = compute_claims(tables)
    pd.testing.assert_frame_equal(first, compute_claims(tables))
    # adding a table leaves the other rows unchanged
    more = compute_claims({**tables, "ws_toy": ws_table("toy", {(8, n): 1.0 / n for n in (4, 8)})})
    pd.testing.assert_frame_equal(first, more[more["claim"] != "map_slope"].reset_index(drop=True))
    # the rf_law interval is the Welch t-interval of the mean over points of mean WS / rf_law_finite
    from scipy import stats

    table = tables["ws_rf"]
    row = one(first, "rf_law", scope="d=192")
    parts = [g["lower"].to_numpy() / float(rf_law_finite(n, 192)) for n, g in table.groupby("n")]
    G = len(parts)
    var_terms = np.array([p.var(ddof=1) / len(p) / G**2 for p in parts])
    df = var_terms.sum() ** 2 / (var_terms**2 / np.array([len(p) - 1 for p in parts])).sum()
    half = stats.t.ppf(0.975, df) * math.sqrt(var_terms.sum())
    assert row["value"] == pytest.approx(np.mean([p.mean() for p in parts]), rel=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((row["value"] - half, row["value"] + half), rel=1e-4)


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
