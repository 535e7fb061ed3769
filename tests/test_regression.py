"""The demo's numbers do not drift: tables of the demo run compared with recorded ones
(tests/data/demo_before, on the 2-core CI machine, one thread per job). ``ws.csv`` was written
before the numerical core was split into modules (commit 5c4685b) and still holds. ``gen.csv`` was
re-recorded when the first stage moved from a Cholesky solve of the Gram matrix to a pseudo-inverse
through a QR factorisation (issue 13): t0 moved by 1e-13 relative, and 2 of 288 searches ended at
points differing by 6e-7 in Err; the rows also gained the alignment ratio and the fit diagnostics.

A change that is meant to change results bumps ``wordsens.NUMERICS_VERSION``, says why in its
commit, and records new tables here; any other difference is a regression.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import ROOT

pytestmark = pytest.mark.slow

BEFORE = Path(__file__).parent / "data" / "demo_before"
# float64 results of the same operations in the same order: equal up to the last bits that a BLAS
# may order differently between builds
RTOL = 1e-9


def _compare(before: pd.DataFrame, after: pd.DataFrame, key: list[str], exact: list[str], close: list[str]) -> None:
    before = before.sort_values(key).reset_index(drop=True)
    after = after[before.columns].sort_values(key).reset_index(drop=True)
    assert len(before) == len(after)
    for column in key + exact:
        np.testing.assert_array_equal(
            after[column].astype(object).fillna("NA").astype(str).to_numpy(),
            before[column].astype(object).fillna("NA").astype(str).to_numpy(),
            err_msg=column,
        )
    for column in close:
        np.testing.assert_allclose(
            after[column].to_numpy(dtype=float),
            before[column].to_numpy(dtype=float),
            rtol=RTOL,
            atol=1e-12,
            err_msg=column,
        )


def test_demo_ws_tables_equal_the_recorded_ones(demo_run):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    tables = demo_run / config["results"] / "tables"
    after = pd.concat([pd.read_parquet(tables / f"ws_{m}.parquet") for m in ("rf", "drf", "raf", "relu_raf")])
    after["L"] = after["L"].astype("float64")
    before = pd.read_csv(BEFORE / "ws.csv")
    _compare(
        before,
        after,
        ["map", "d", "n", "L", "trial"],
        ["seed", "review_id", "position", "steps", "sampler"],
        ["lower", "upper", "phi_norm", "delta_norm"],
    )


def test_demo_gen_tables_equal_the_recorded_ones(demo_run):
    config = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    tables = demo_run / config["results"] / "tables"
    after = pd.concat(
        [pd.read_parquet(tables / f"gen_{f}_{d}.parquet") for f in ("fig4", "fig5") for d in ("imdb", "synthetic")]
    )
    before = pd.read_csv(BEFORE / "gen.csv")
    _compare(
        before,
        after,
        ["figure", "data", "map", "n", "N", "d", "simulation", "training", "loss", "penalty"],
        ["seed", "review_id", "steps", "gram_rank", "interpolates"],
        ["y", "t0", "D0", "D1", "err", "gamma_min", "delta_norm", "alignment", "d0_shift"],
    )
