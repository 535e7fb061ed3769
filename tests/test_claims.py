"""The claims table on hand-made tables whose verdicts are known (wordsens.claims)."""

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
    claims_from_results,
    claims_html,
    claims_markdown,
    compute_claims,
    err_lower_bound,
    format_claims,
)

DATA = "synthetic"
FAST = 300  # bootstrap resamples in most tests


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


# ----------------------------------------------------------------------------- word sensitivity

RF_N = [90, 100, 110, 120, 130, 140, 150]


def test_rf_on_the_law_holds_and_slope_matches_least_squares():
    points = {(d, n): float(law(n)) for d in (192, 384) for n in RF_N}
    table = ws_table("rf", points, noise=0.05)
    out = compute_claims({"ws_rf": table}, resamples=FAST)
    for scope in ("d=192", "d=384", "all d"):
        row = one(out, "rf_slope", scope=scope)
        assert row["verdict"] == "holds"
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        part = table if scope == "all d" else table[table["d"] == int(scope[2:])]
        expected = np.polyfit(np.log(part["n"]), np.log(part["lower"]), 1)[0]  # same n grid: one line
        assert row["value"] == pytest.approx(expected, rel=1e-10)
        assert one(out, "rf_law", scope=scope)["verdict"] == "holds"
        assert one(out, "rf_law", scope=scope)["value"] == pytest.approx(0.0, abs=1e-12)  # means exactly on the law


def test_rf_shallow_slope_and_off_law_fail():
    table = ws_table("rf", {(192, n): 0.9 * n**-0.2 for n in RF_N})
    out = compute_claims({"ws_rf": table}, resamples=FAST)
    slope = one(out, "rf_slope", scope="d=192")
    assert slope["verdict"] == "fails"
    assert slope["value"] == pytest.approx(-0.2, abs=1e-12)
    assert (slope["ci_low"], slope["ci_high"]) == pytest.approx((-0.2, -0.2), abs=1e-12)  # identical trials
    assert not rows_of(out, "rf_slope", scope="all d").shape[0]  # one d: no pooled row
    off = compute_claims({"ws_rf": ws_table("rf", {(192, n): 1.2 * float(law(n)) for n in RF_N})}, resamples=FAST)
    row = one(off, "rf_law", scope="d=192")
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(0.2, rel=1e-12)


def test_pooled_slope_has_an_intercept_per_d():
    # d = 192 on n = 90..120, d = 384 on n = 120..150 and twice as large: one line through all
    # points would be pulled up; a slope with an intercept per d is exactly -0.5.
    points = {(192, n): n**-0.5 for n in (90, 100, 110, 120)}
    points.update({(384, n): 2 * n**-0.5 for n in (120, 130, 140, 150)})
    out = compute_claims({"ws_rf": ws_table("rf", points)}, resamples=FAST)
    assert one(out, "rf_slope", scope="all d")["value"] == pytest.approx(-0.5, abs=1e-12)
    naive = np.polyfit(np.log([k[1] for k in points]), np.log(list(points.values())), 1)[0]
    assert naive > -0.3


def test_drf_increasing_at_one_depth_fails_there_only():
    points = {(768, n, L): 0.3 * n**-0.4 for n in (50, 60, 70, 80) for L in (2, 4)}
    points.update({(768, n, 8): 0.01 * n for n in (50, 60, 70, 80)})
    out = compute_claims({"ws_drf": ws_table("drf", points)}, resamples=FAST)
    assert one(out, "drf_decreasing", scope="d=768, L=2")["verdict"] == "holds"
    assert one(out, "drf_decreasing", scope="d=768, L=4")["value"] == pytest.approx((80 / 70) ** -0.4)
    row = one(out, "drf_decreasing", scope="d=768, L=8")
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(60 / 50)


def test_missing_tables_are_not_run():
    out = compute_claims({"ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N})}, resamples=FAST)
    for claim in (
        "drf_decreasing",
        "raf_floor",
        "raf_ratio",
        "relu_raf_below_raf",
        "relu_raf_decreasing",
        "fig4_rf_alignment",
        "fig4_raf_alignment",
        "err_bound",
        "fig5_penalty",
        "not_interpolating",
    ):
        row = one(out, claim)
        assert row["verdict"] == "not run", claim
        assert row["note"]
        assert math.isnan(row["value"])
    assert "ws_drf.parquet" in one(out, "drf_decreasing")["note"]
    assert list(out.columns) == COLUMNS
    empty = compute_claims({}, resamples=FAST)  # no table at all: every claim not run, no error
    assert set(empty["verdict"]) == {"not run"}


def test_raf_floor_and_ratio():
    ns = [10, 20, 50, 100, 150, 200, 250]
    points = {(192, n): 2.0 - n / 1000 for n in ns}  # below the floor's d: not part of raf_floor
    points.update({(384, n): 1.5 - n / 1000 for n in ns})
    points.update({(768, n): 3.0 * (10 / n) for n in ns})  # decays: ratio 0.04, min 0.12
    out = compute_claims({"ws_raf": ws_table("raf", points, noise=0.02)}, resamples=FAST)
    floor = one(out, "raf_floor")
    assert floor["verdict"] == "fails"
    assert floor["value"] == pytest.approx(3.0 * 10 / 250)
    assert floor["units"] == 2 * len(ns) * 5
    assert one(out, "raf_ratio", scope="d=384")["value"] == pytest.approx(1.25 / 1.49)
    assert one(out, "raf_ratio", scope="d=384")["verdict"] == "holds"
    assert one(out, "raf_ratio", scope="d=768")["verdict"] == "fails"
    below = compute_claims({"ws_raf": ws_table("raf", {(384, n): 1.1 for n in ns})}, resamples=FAST)
    assert one(below, "raf_floor")["verdict"] == "holds"
    small = compute_claims({"ws_raf": ws_table("raf", {(64, n): 2.0 for n in ns})}, resamples=FAST)
    assert one(small, "raf_floor")["verdict"] == "not run"
    assert "d = [64]" in one(small, "raf_floor")["note"]


def test_relu_raf_against_raf():
    ns = [10, 20, 50]
    raf = ws_table("raf", {(d, n): 2.0 for d in (192, 384) for n in ns})
    relu = {(d, n): 0.5 / n**0.5 for d in (192, 384) for n in ns}
    out = compute_claims({"ws_raf": raf, "ws_relu_raf": ws_table("relu_raf", relu)}, resamples=FAST)
    assert one(out, "relu_raf_below_raf")["verdict"] == "holds"
    assert one(out, "relu_raf_below_raf")["value"] == pytest.approx(0.25 / 10**0.5)
    assert set(rows_of(out, "relu_raf_decreasing")["verdict"]) == {"holds"}
    relu[(384, 20)] = 2.5  # above RAF at one point, and not decreasing at d = 384
    out = compute_claims({"ws_raf": raf, "ws_relu_raf": ws_table("relu_raf", relu)}, resamples=FAST)
    assert one(out, "relu_raf_below_raf")["verdict"] == "fails"
    assert one(out, "relu_raf_below_raf")["value"] == pytest.approx(1.25)
    assert "d=384, n=20" in one(out, "relu_raf_below_raf")["note"]
    assert one(out, "relu_raf_decreasing", scope="d=384")["verdict"] == "fails"
    assert one(out, "relu_raf_decreasing", scope="d=192")["verdict"] == "holds"


def test_a_registered_toy_map_gets_its_slope_without_a_verdict():
    toy = ws_table("toy_map", {(64, n): 3.0 * n**-0.3 for n in (10, 20, 40)}, noise=0.1)
    out = compute_claims({"ws_toy_map": toy}, resamples=FAST)
    row = one(out, "map_slope", map="toy_map")
    assert row["verdict"] == "no claim"
    assert row["value"] == pytest.approx(np.polyfit(np.log(toy["n"]), np.log(toy["lower"]), 1)[0], rel=1e-10)
    assert row["ci_low"] < row["value"] < row["ci_high"]
    assert row["value"] == pytest.approx(-0.3, abs=0.02)


def test_straddling_interval_is_flagged():
    # mean 1.0 then 0.98 with a large spread: decreasing on the point, the interval reaches past 1
    frame = pd.DataFrame(
        {
            "map": "drf",
            "data": DATA,
            "d": 64,
            "L": pd.array([2] * 8, dtype="Int64"),
            "n": [10] * 4 + [20] * 4,
            "trial": list(range(4)) * 2,
            "lower": [0.5, 1.5, 0.5, 1.5, 0.48, 1.48, 0.48, 1.48],
        }
    )
    row = one(compute_claims({"ws_drf": frame}, resamples=FAST), "drf_decreasing")
    assert row["verdict"] == "holds"
    assert row["straddles"]
    assert row["ci_low"] < 1 < row["ci_high"]
    assert row["note"].startswith("holds (interval straddles)")


def test_bootstrap_is_deterministic_and_seeded():
    tables = {"ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N}, noise=0.2, seed=3)}
    first = compute_claims(tables)
    pd.testing.assert_frame_equal(first, compute_claims(tables))
    other = compute_claims(tables, seed=1)
    pd.testing.assert_series_equal(first["value"], other["value"])
    assert not np.allclose(first["ci_low"], other["ci_low"])
    # adding a table leaves the other rows' intervals unchanged (a generator per row)
    more = compute_claims({**tables, "ws_toy": ws_table("toy", {(8, n): 1.0 / n for n in (4, 8)})})
    pd.testing.assert_frame_equal(first, more[more["claim"] != "map_slope"].reset_index(drop=True))


def test_straddle_rule_per_operator():
    c = CLAIMS
    assert c["rf_slope"].straddles(-0.65, -0.55) and c["rf_slope"].straddles(-0.45, -0.35)
    assert c["rf_slope"].straddles(-0.7, -0.3)  # covers the whole range: both sides reached
    assert not c["rf_slope"].straddles(-0.55, -0.45) and not c["rf_slope"].straddles(-0.9, -0.7)
    assert c["raf_floor"].straddles(0.9, 1.1) and not c["raf_floor"].straddles(1.0, 1.2)
    assert c["drf_decreasing"].straddles(0.9, 1.0) and not c["drf_decreasing"].straddles(0.8, 0.99)
    assert c["rf_law"].straddles(0.1, 0.2) and not c["rf_law"].straddles(0.1, 0.15)


# ----------------------------------------------------------------------------- generalisation


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
):
    """Rows built from the formulas: D1 = D0 + a (y - t0), Err = (D1 + y)^2.

    ``alignment(sim, search_index)`` and ``gamma(sim, search_index, penalty)`` give a and the
    scale of t0, D0 (drawn in [-gamma, gamma], one of them at +-gamma so gamma_min = gamma)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sims):
        for j, (training, loss, penalty) in enumerate(searches):
            a = alignment(s, j) if alignment else rng.uniform(0.9, 1.1)
            g = gamma(s, j, penalty) if gamma else rng.uniform(0, 2)
            y = float(rng.choice([-1.0, 1.0]))
            t0 = g * float(rng.choice([-1.0, 1.0]))
            D0 = rng.uniform(-g, g)
            D1 = D0 + a * (y - t0)
            rows.append(
                {
                    "figure": figure,
                    "map": map_name,
                    "data": DATA,
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
    # outside the premise no bound: a < 0 or gamma >= 1
    assert np.isnan(err_lower_bound([-0.1, 0.5, 0.5], [0.2, 1.0, 1.5])).all()
    # for a < 1 the curve (2 - 2 gamma)^2 is not a bound (why the check uses the row's a)
    g, yy = 0.3, 1.0
    e = (-yy * g + 0.9 * (yy - yy * g) + yy) ** 2
    assert e < (2 - 2 * g) ** 2 and e >= err_lower_bound(0.9, g)


def test_err_bound_claim_on_rows_from_the_formulas_and_a_corrupted_row():
    searches = (("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0))
    gen = gen_rows(
        "fig4",
        "rf",
        sims=30,
        searches=searches,
        alignment=lambda s, j: 0.99 + 0.01 * (s % 3),
        gamma=lambda s, j, p: 0.02 * s,
    )  # gamma from 0 to 0.58: every row satisfies the premise
    out = compute_claims({"gen_fig4_synthetic": gen}, resamples=FAST)
    row = one(out, "err_bound", map="rf")
    assert row["verdict"] == "holds"
    assert row["value"] == 1.0
    assert row["units"] == 30
    assert "60 of 60 rows" in row["note"]
    bad = gen.copy()
    bad.loc[5, "err"] = 0.5 * float(err_lower_bound(bad.loc[5, "alignment"], bad.loc[5, "gamma_min"]))
    row = one(compute_claims({"gen_fig4_synthetic": bad}, resamples=FAST), "err_bound", map="rf")
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(59 / 60)
    out = compute_claims({"gen_fig4_synthetic": gen_rows("fig4", "rf", gamma=lambda s, j, p: 1.5)}, resamples=FAST)
    assert one(out, "err_bound", map="rf")["verdict"] == "not run"  # no row with gamma_min < 1


def test_fig4_alignment_fractions():
    searches = (("fine_tune", "surrogate", 0.0), ("retrain", "surrogate", 0.0))
    rf = gen_rows("fig4", "rf", sims=10, searches=searches, alignment=lambda s, j: 0.5 if (s, j) == (0, 0) else 1.0)
    raf = gen_rows(
        "fig4", "raf", n=40, sims=10, searches=searches, alignment=lambda s, j: 0.1 if s < 7 else 0.9, seed=1
    )
    raf120 = gen_rows("fig4", "raf", n=120, sims=10, searches=searches, alignment=lambda s, j: 0.9, seed=2)
    raf192 = gen_rows("fig4", "raf", d=192, sims=4, searches=searches, alignment=lambda s, j: 0.9, seed=3)
    out = compute_claims({"gen_fig4_synthetic": pd.concat([rf, raf, raf120, raf192])}, resamples=FAST)
    row = one(out, "fig4_rf_alignment")
    assert row["value"] == pytest.approx(0.95)  # 19 of 20 rows
    assert row["verdict"] == "holds"
    assert row["ci_low"] < 0.95 <= row["ci_high"] and row["straddles"]
    assert one(out, "fig4_raf_alignment", scope="d=768, n=40")["value"] == pytest.approx(0.7)
    assert one(out, "fig4_raf_alignment", scope="d=768, n=40")["verdict"] == "holds"
    assert one(out, "fig4_raf_alignment", scope="d=768, n=120")["verdict"] == "fails"
    assert rows_of(out, "fig4_raf_alignment")["scope"].tolist() == ["d=768, n=40", "d=768, n=120"]
    rf2 = gen_rows("fig4", "rf", sims=10, searches=searches, alignment=lambda s, j: 0.5 if s < 1 else 1.0)
    assert one(compute_claims({"gen_fig4_synthetic": rf2}, resamples=FAST), "fig4_rf_alignment")["verdict"] == "fails"


def test_generalisation_tables_without_the_new_columns_are_not_run():
    old = gen_rows("fig4", "rf").drop(columns=["alignment", "d0_shift", "interpolates"])
    out = compute_claims({"gen_fig4_synthetic": old}, resamples=FAST)
    for claim in ("fig4_rf_alignment", "fig4_raf_alignment", "err_bound", "not_interpolating"):
        row = one(out, claim)
        assert row["verdict"] == "not run"
        assert "column" in row["note"]


def test_fig5_median_gamma_decreases_with_the_penalty():
    searches = tuple(("fine_tune", "penalised", p) for p in (0.01, 0.1, 1.0))
    good_g = {0.01: 1.5, 0.1: 0.8, 1.0: 0.3}
    good = gen_rows(
        "fig5", "raf", n=40, N=400, sims=9, searches=searches, gamma=lambda s, j, p: good_g[p] * (1 + 0.1 * (s - 4))
    )
    bad_g = {0.01: 0.5, 0.1: 0.7, 1.0: 0.2}
    bad = gen_rows(
        "fig5",
        "relu_raf",
        n=40,
        N=400,
        sims=9,
        searches=searches,
        gamma=lambda s, j, p: bad_g[p] * (1 + 0.1 * (s - 4)),
        seed=1,
    )
    out = compute_claims({"gen_fig5_synthetic": pd.concat([good, bad])}, resamples=FAST)
    row = one(out, "fig5_penalty", map="raf")
    assert row["verdict"] == "holds"
    medians = good.groupby("penalty")["gamma_min"].median().sort_index().to_numpy()
    assert medians == pytest.approx([1.5, 0.8, 0.3])
    assert row["value"] == pytest.approx(np.diff(medians).max())
    assert row["ci_low"] <= row["value"] <= row["ci_high"] < 0
    row = one(out, "fig5_penalty", map="relu_raf")
    assert row["verdict"] == "fails"
    assert row["value"] == pytest.approx(0.2)
    assert row["scope"] == "n=40, N=400, d=768, fine_tune"
    assert one(out, "fig4_rf_alignment")["verdict"] == "not run"  # no Figure 4 table


def test_not_interpolating_rows_are_counted():
    searches = (("fine_tune", "surrogate", 0.0), ("retrain", "direct", 0.0))
    raf = gen_rows("fig4", "raf", n=120, N=1300, sims=6, searches=searches, interpolates=lambda s: s >= 2)
    rf = gen_rows("fig4", "rf", sims=6, searches=searches)
    out = compute_claims(
        {
            "gen_fig4_synthetic": pd.concat([raf, rf]),
            "gen_fig5_synthetic": gen_rows("fig5", "raf", searches=(("retrain", "penalised", 1.0),)),
        },
        resamples=FAST,
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
    out = claims_from_results(tmp_path, resamples=FAST)
    assert one(out, "rf_slope", scope="d=192")["verdict"] == "holds"
    assert one(out, "fig4_rf_alignment")["verdict"] == "holds"


def test_bad_tables_are_clear_errors():
    with pytest.raises(ValueError, match="unknown table 'figure2'"):
        compute_claims({"figure2": pd.DataFrame()})
    with pytest.raises(ValueError, match=r"lacks the column\(s\) \['lower'\]"):
        compute_claims({"ws_rf": ws_table("rf", {(8, 4): 1.0}).drop(columns="lower")})
    with pytest.raises(ValueError, match="resamples"):
        compute_claims({}, resamples=0)


def test_renderings_show_every_claim():
    tables = {
        "ws_rf": ws_table("rf", {(192, n): float(law(n)) for n in RF_N}, noise=0.05),
        "ws_drf": ws_table("drf", {(64, n, 2): 1.0 / n for n in (10, 20)}),
        "gen_fig4_synthetic": gen_rows("fig4", "rf"),
    }
    frame = compute_claims(tables, resamples=FAST)
    text = format_claims(frame)
    for claim in frame["claim"]:
        assert claim in text
    assert f"{len(frame)} claims:" in text
    assert "not run" in text and "holds" in text
    md = claims_markdown(frame)
    assert md.count("\n| ") == len(frame) + 1  # header + one line per row
    page = claims_html(frame.assign(note=frame["note"].where(frame["claim"] != "rf_law", "a < b & c")))
    assert "a &lt; b &amp; c" in page and page.count("<tr ") == len(frame)


# ----------------------------------------------------------------------------- light imports

HEAVY = ("torch", "matplotlib", "seaborn", "transformers")
LIGHT_RUN = """
import json, sys
from wordsens.claims import claims_from_results, claims_html, claims_markdown, format_claims
frame = claims_from_results(sys.argv[1], resamples=20)
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
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_RUN, str(tmp_path), *HEAVY], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"rf_slope", "rf_law", "fig4_rf_alignment", "err_bound"} <= set(out["claims"])
    assert out["heavy"] == []


def test_rf_law_is_the_papers_estimate_and_one_function():
    from wordsens import theory
    from wordsens.plots import paper, studies

    assert paper.rf_law is theory.rf_law and studies.rf_law is theory.rf_law
    assert theory.rf_law(np.array([90, 150])) == pytest.approx([0.1211, 0.0911], abs=1e-4)  # section 2: 0.12, 0.09
    assert theory.rf_law(4.0) == pytest.approx(law(4.0)) and np.ndim(theory.rf_law(4.0)) == 0
