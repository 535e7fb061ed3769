"""The trained encoder's row of the claims table (report only, no verdict), on hand-made trained-study tables
(``wordsens.studies.trained.claims`` through ``wordsens.claims``): the ratio per convention and counterpart (a
geometric mean over reviews), draws and moved rows averaged per review, the word rows alone apart, what is
absent, the required columns, the registry's counterparts, the table read from a folder."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from claims_tables import COUNTERPARTS, one, rows_of, trained_table

from wordsens.claims import CLAIMS
from wordsens.studies.claims import catalogue, claims_from_results, claims_inputs, compute_claims, read_tables


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
    for layer in (1, 2):  # geometric means over the two reviews
        paper, model = f"layer={layer}, n=128, convention=paper", f"layer={layer}, n=128, convention=model"
        expected[("trained_attention", "mh_raf", paper)] = math.sqrt(2.0 * 4.0)
        expected[("trained_layer", "block", paper)] = math.sqrt(1.0 * 3.0)
        expected[("trained_layer", "ln_block", paper)] = math.sqrt(1.0 * 3.0)
        expected[("trained_attention", "matched_attention", model)] = math.sqrt(0.5 * 1.5)
        expected[("trained_layer", "matched_layer", model)] = math.sqrt(0.2 * 0.4)
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
    # ... and what the convention does to the trained map: where its attention goes, its scale, its biases
    assert "attention of word rows on [CLS]/[SEP] trained 0.7, random 0.03" in attention["note"]
    assert (
        "rows rescaled from the model's mean norm 12 to 19.6 (x1.63: the trained logits' bilinear term x2.67"
        in (attention["note"])
    )
    assert "bias rows / ||phi(X)||: trained 0.4, random 0" in attention["note"]
    model = one(out, "trained_ratio", map="trained_attention", scope="layer=2, n=128, convention=model")
    assert "a ball of radius ||x_i|| around the moved row" in model["note"]
    assert "rows rescaled" not in model["note"]  # the model's own rows
    assert "matched_attention: the trained weights' singular values" in model["note"]
    assert "matched_attention" in model["statement"] and "{" not in model["statement"]
    five = compute_claims({"trained": trained_table({"trained_attention": [2.0, 4.0, 3.0, 2.5, 3.5]}, layers=(1,))})
    row = one(five, "trained_ratio")
    logs = np.log([2.0, 4.0, 3.0, 2.5, 3.5])
    assert row["value"] == pytest.approx(math.exp(logs.mean())) and row["units"] == 5 and row["verdict"] == "no claim"
    half = 2.776445 * np.std(logs, ddof=1) / math.sqrt(5)  # t(4) quantile, on the log scale
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(np.exp([logs.mean() - half, logs.mean() + half]), rel=1e-4)
    four = compute_claims({"trained": trained_table({"trained_attention": [2.0, 4.0, 3.0, 2.5]}, layers=(1,))})
    assert one(four, "trained_ratio")["note"].startswith("not enough data (4 reviews; at least 5 needed)")
    assert not out.duplicated(["claim", "map", "data", "scope", "statement"]).any()
    trained_ratio = catalogue()["trained_ratio"]  # the trained study's own claim
    assert trained_ratio.op is None and trained_ratio.source.startswith("derived") and "trained_ratio" not in CLAIMS
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
    assert (row["value"], row["verdict"]) == (pytest.approx(math.sqrt(8.0)), "no claim")


def test_trained_ratio_on_the_word_rows_alone_is_its_own_row():
    """Samples without [CLS] and [SEP] (``keys`` "words": no attention can go to them) give rows of their
    own, never pooled with the full samples' rows; no attention on the specials to report there."""
    table = pd.concat(
        [
            trained_table({"trained_attention": [3.0] * 5}, layers=(2,)),
            trained_table({"trained_attention": [1.5] * 5}, layers=(2,), keys="words"),
        ],
        ignore_index=True,
    )
    out = compute_claims({"trained": table})
    full = one(out, "trained_ratio", scope="layer=2, n=128, convention=paper")
    words = one(out, "trained_ratio", scope="layer=2, n=128, convention=paper, word keys")
    assert (full["value"], words["value"]) == pytest.approx((3.0, 1.5))
    assert "keys: the word rows alone ([CLS] and [SEP] dropped)" in words["note"]
    assert "(uniform: ln n = 4.84)" in words["note"]  # n - 2 rows
    assert "[CLS]/[SEP] trained" not in words["note"] and "[CLS]/[SEP] trained 0.7" in full["note"]
    # a table written before the column existed: every row is of the full samples
    old = compute_claims({"trained": table[table["keys"] == "all"].drop(columns="keys")})
    assert one(old, "trained_ratio")["scope"] == "layer=2, n=128, convention=paper"
