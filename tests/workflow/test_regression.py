"""The demo's numbers do not drift: every result table of a demo run against the recorded one.

tests/regression_fixture.py says what is compared and with which tolerance (float64 results tightly,
searches that rounding can end elsewhere within a measured bound, never the step count), and how to
re-record after a change that is meant to change results (bump its study's numerics version (``StudySpec.numerics``)).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from regression_fixture import FIRST_STAGE, FIXTURE, TABLES, compare, read, versions
from workflow_utils import ROOT


def test_the_fixture_was_recorded_under_the_current_numerics_versions():
    recorded = json.loads((FIXTURE / "versions.json").read_text())
    stale = {k: (recorded.get(k), v) for k, v in versions().items() if recorded.get(k) != v}
    assert not stale, (
        f"the numerics versions changed since the regression tables were recorded {stale}: run the demo and "
        "re-record them with `python tests/regression_fixture.py record results/demo/tables`"
    )


@pytest.mark.slow
def test_demo_tables_equal_the_recorded_ones(demo_run):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    tables = demo_run / config["results"] / "tables"
    problems = []
    for name, (key, _) in TABLES.items():
        before = pd.read_csv(FIXTURE / f"{name}.csv")
        problems += [f"{name}.{line}" for line in compare(before, read(tables, name), key, name)]
    assert not problems, "\n".join(problems)


def _fixture(name: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURE / f"{name}.csv")


@pytest.mark.parametrize(
    "name,map_name,column,change",
    [
        ("ws_raf", "raf", "lower", 1e-3),  # a float64 search: compared at 1e-5
        ("variants", "sigmoid_raf", "lower", 1e-3),
        ("positions", "raf", "lower", 1e-3),
        ("ws_rf", "rf", "lower", 5e-3),  # a float32 search: compared at 2e-3
        ("ws_relu_raf", "relu_raf", "lower", 5e-2),  # ReLU attention: compared at 2e-2
        ("gen_fig4_synthetic", "raf", "err", 1e-2),  # compared at 1e-3 + 1e-3 relative
        ("gen_fig4_imdb", "rf", "t0", 1e-4),  # no search decides it: compared at 1e-5
        ("swaps", "raf", "s_words", 1e-2),  # the float32 scan: compared at 1e-4
        ("swaps", "raf", "continuous", 1e-3),  # a float64 search: compared at 1e-5
    ],
)
def test_a_change_of_one_number_fails_the_comparison(name, map_name, column, change):
    key = TABLES[name][0]
    before = _fixture(name)
    assert compare(before, before.copy(), key, name) == []
    row = before.index[before["map"].eq(map_name) & before[column].abs().gt(0.1)][0]
    after = before.copy()
    after.loc[row, column] *= 1 + change
    problems = compare(before, after, key, name)
    assert len(problems) == 1 and problems[0].startswith(f"{column}: 1 of"), problems


def test_first_stage_floats_are_compared_tightly():
    before = _fixture("ws_rf")
    after = before.copy()
    after.loc[0, "phi_norm"] *= 1 + 10 * FIRST_STAGE[0]
    assert [p.split(":")[0] for p in compare(before, after, TABLES["ws_rf"][0], "ws_rf")] == ["phi_norm"]


def test_a_missing_row_and_a_changed_key_fail_the_comparison():
    key = TABLES["ws_relu_raf"][0]
    before = _fixture("ws_relu_raf")
    assert compare(before, before.iloc[1:], key, "ws_relu_raf") == [f"{len(before) - 1} rows instead of {len(before)}"]
    after = before.copy()
    after.loc[0, "review_id"] = after["review_id"].max() + 1
    assert any(p.startswith("review_id:") for p in compare(before, after, key, "ws_relu_raf"))
