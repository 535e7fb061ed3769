"""The swaps study's rows of the claims table (wordsens.studies.swaps.claims) on hand-made rows:
``continuous_covers_words`` holds and fails, the ratios are reported without a verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wordsens.studies.claims import compute_claims

# ----------------------------------------------------------------------------- claims


def _rows(continuous: list[float], reviews: int = 6) -> pd.DataFrame:
    rows = []
    for review in range(reviews):
        for k, cont in enumerate(continuous):
            rows.append(
                dict(
                    model="m", map="raf", d=16, n=8, review=review, position=k + 1, original="a", best_word="b",
                    s_words=0.4, continuous=cont, mean=0.1, exhaustive=True,
                )
            )  # fmt: skip
    return pd.DataFrame(rows)


def _claim(frame: pd.DataFrame, claim: str) -> pd.Series:
    out = compute_claims({"swaps": frame})
    (row,) = [r for _, r in out.iterrows() if r["claim"] == claim]
    return row


def test_continuous_covers_words_holds_and_fails():
    holds = _claim(_rows([0.5, 0.8]), "continuous_covers_words")
    assert holds["verdict"] == "holds" and holds["value"] == 0 and holds["units"] == 12
    # within the numerical tolerance: no miss
    assert _claim(_rows([0.4 / (1 + 1e-9)]), "continuous_covers_words")["verdict"] == "holds"
    missed = _rows([0.5, 0.8])
    missed.loc[3, "continuous"] = 0.39  # one row whose best word beats the continuous search
    fails = _claim(missed, "continuous_covers_words")
    assert fails["verdict"] == "fails" and fails["value"] == 1
    assert "review 1 position 2: a -> b S_words 0.4 > continuous 0.39" in fails["note"]


def test_the_ratios_are_reported_without_a_verdict():
    ratio = _claim(_rows([0.5, 0.8]), "swaps_ratio")
    assert ratio["verdict"] == "no claim" and ratio["scope"] == "d=16, n=8"
    assert ratio["value"] == pytest.approx(np.mean([0.4 / 0.5, 0.4 / 0.8]))
    assert ratio["ci_low"] == pytest.approx(ratio["value"])  # every review alike: a zero-width interval
    assert _claim(_rows([0.5]), "swaps_mean_ratio")["value"] == pytest.approx(0.25)
    assert _claim(_rows([0.5], reviews=2), "swaps_ratio")["verdict"] == "no claim"  # too few reviews: no interval
    absent = compute_claims({})
    assert set(absent.loc[absent["claim"].str.startswith(("swaps", "continuous")), "verdict"]) == {"not run"}
