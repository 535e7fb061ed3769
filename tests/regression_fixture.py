"""The demo's recorded tables: what tests/workflow/test_regression.py compares a fresh demo run with.

Every table of the demo's ``tables/`` folder that holds results (word sensitivity, generalisation,
variants, long contexts, positions, claims) is recorded in ``tests/data/regression`` with every column
except the volatile ones (timings, memory, host, commit: ``VOLATILE``), together with the
numerics versions it was recorded under (``wordsens.studies.numerics_versions``).

What is compared, and how closely (``tolerance``), follows from running the demo under the kernels
that one CPU offers (``ATEN_CPU_CAPABILITY=default`` against AVX2, which changes rounding as another
CPU does; ``MKL_ENABLE_INSTRUCTIONS`` changed nothing on that AMD machine). Measured largest relative
differences between the two runs, and the tolerances set from them:

* keys and every non-float column (seeds, review ids, ranks, flags, samplers): equal;
* floats that no search decides (``phi_norm``, ``upper``, ``t0``, ``t1``, ``gram_cond``, ...):
  at most 3e-7 relative (1e-6 absolute near 0): compared at 1e-5;
* word-sensitivity estimates (``lower``, ``sup_lower``, ``delta_norm``) of float64 searches over
  smooth maps (RAF, sigmoid, linear attention): at most 3e-7: compared at 1e-5, so that a change of
  1e-3 in one estimate fails (tests/workflow/test_regression.py checks it); of float32 searches (RF, DRF,
  mh_raf, the block): at most 4e-4: compared at 2e-3; of ReLU attention, whose value jumps where a
  score changes sign so that rounding can end a search at another local maximum: 1e-3: compared at
  2e-2;
* generalisation searches: ``err`` (what the search minimises) moved by at most 7e-6 absolute for
  RAF and 5e-4 for RF, compared at 1e-3 absolute plus 1e-3 relative; for ReLU-RAF it moved by 6e-2
  and is not compared. The point reached (``D0``, ``D1``, ``gamma_min``, ``alignment``, ``d0_shift``,
  ``delta_norm``) is not compared: where many ``Delta`` reach the same ``err`` (RAF flips a label
  from many of them) rounding picks another one (``D0`` moved by 3e-2 for RAF);
* the claims table: its definitions (``statistic``, ``expectation``, ``source``, ``units``) equal,
  its numbers (``value``, ``ci_low``, ``ci_high``) at 5e-2 relative plus 1e-3 (they summarise the
  rows above: the Bonferroni bound of relu_raf_below_raf moved by 2.4e-2 with ReLU-RAF's rows); the
  verdicts are not compared (a statistic at its threshold may flip with rounding; tests/unit/claims/
  tests each verdict);
* the swaps study: the scan's numbers (``s_words``, the vocabulary's ``mean``, ``median``, ``p99``,
  ``mean_over_best``, ``radius``: float32 scores, the best re-evaluated in float64) moved by at most
  5.5e-7 relative: compared at 1e-4; the continuous search at its map's tolerance (``continuous``,
  ``continuous_sqrt_d``, ``ratio``: RF's moved by 1.9e-4), the best word exactly; the top words' order
  and scores are not compared (near ties among the top 10 swap with rounding);
* the step count of a search is recorded, never compared.

A table recorded under another numerics version than the current one fails with the command that
re-records it. A change that is meant to change results bumps its study's numerics version
(``StudySpec.numerics``) and
re-records; the recorder prints, per table and column, how many rows changed and the largest change.

Re-record (after a demo run, e.g. ``snakemake --cores 2 --configfile config/demo.yaml``)::

    python tests/regression_fixture.py record results/demo/tables
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

FIXTURE = Path(__file__).parent / "data" / "regression"

# table -> (key columns, the numerics family of its study)
_WS_KEY = ["map", "data", "d", "n", "L", "trial", "position"]
TABLES: dict[str, tuple[list[str], str]] = {
    "ws_rf": (_WS_KEY, "ws"),
    "ws_drf": (_WS_KEY, "ws"),
    "ws_raf": (_WS_KEY, "ws"),
    "ws_relu_raf": (_WS_KEY, "ws"),
    "variants": (_WS_KEY, "ws"),
    "long_synthetic": (_WS_KEY, "ws"),
    "long_imdb": (_WS_KEY, "ws"),
    "positions": (_WS_KEY, "ws"),
    **{
        f"gen_{fig}_{data}": (["map", "n", "N", "d", "simulation", "training", "loss", "penalty"], "gen")
        for fig in ("fig4", "fig5")
        for data in ("imdb", "synthetic")
    },
    # the trained study on the demo's tiny BERT: one row per search
    "trained": (["layer", "n", "convention", "keys", "review", "map", "head", "draw", "position"], "trained"),
    # the swaps study on the demo's tiny BERT: one row per (map, n, review, word position)
    "swaps": (["map", "d", "n", "review", "position"], "swaps"),
    # the gen_words study: one row per (map, n, N, simulation, training, loss, penalty, setting)
    "gen_words": (["map", "n", "N", "d", "simulation", "training", "loss", "penalty", "setting"], "gen_words"),
    "claims": (["claim", "map", "data", "scope", "statement"], "claims"),  # the statement names a counterpart
}
# measured per run, not results: timings, memory, where and from which commit it ran
VOLATILE = {
    "search_seconds",
    "wall_seconds",
    "seconds",
    "continuous_seconds",
    "prepare_seconds",
    "peak_memory_mb",
    "job_peak_memory_mb",
    "git_commit",
    "torch",
    "host",
    "slurm_job_id",
    "version",
    "config_hash",
}
WS_SEARCH = {"lower", "sup_lower", "delta_norm", "ws"}
GEN_SEARCH = {"D0", "D1", "gamma_min", "alignment", "d0_shift", "delta_norm"}  # the point reached: not compared
CLAIM_NUMBERS = {"value", "ci_low", "ci_high"}
NOT_COMPARED = {"steps", "verdict", "straddles", "note"}
# the swaps study: its top words' order and their scores as text (near ties among the top 10 may swap
# places with rounding); the best word, its S_words and the vocabulary's statistics are compared
NOT_COMPARED |= {"top_words", "top_scores", "top_values"}
# the gen_words study: the words' loss statistics over the vocabulary (its scan); a row's radius is the
# search's move for the continuous settings (the point reached: not compared)
WORDS_SCAN = {"value", "mean", "median", "p01", "frontier_err_at_1"}
SWAP_SCAN = {"s_words", "mean", "median", "p99", "mean_over_best", "radius"}  # the float32 scan
FLOAT32_SEARCH = {"rf", "drf", "mh_raf", "block", "trained_attention", "trained_layer"}
FLOAT32_SEARCH |= {"matched_attention", "matched_layer", "ln_block"}
KINKED = {"relu_raf"}  # ReLU attention: rounding can end a search at another local optimum
FIRST_STAGE = (1e-5, 1e-6)  # (rtol, atol) of floats that no search decides
SMOOTH_SEARCH = (1e-5, 1e-9)
FLOAT32 = (2e-3, 1e-9)
KINKS = (2e-2, 1e-9)
GEN_ERR = (1e-3, 1e-3)
SCAN = (1e-4, 1e-9)
CLAIMS = (5e-2, 1e-3)


def tolerance(table: str, column: str, map_name: str) -> tuple[float, float] | None:
    """``(rtol, atol)`` of a float ``column`` in a row of ``map_name``; None: not compared (see above)."""
    if column in NOT_COMPARED:
        return None
    if table == "claims":
        return CLAIMS if column in CLAIM_NUMBERS else FIRST_STAGE
    if table == "gen_words" and column in WORDS_SCAN:
        return SCAN
    if table == "gen_words" and column == "radius":
        return None
    if table.startswith("gen_"):
        if column in GEN_SEARCH or (column == "err" and map_name in KINKED):
            return None
        return GEN_ERR if column == "err" else FIRST_STAGE
    if table == "swaps" and column in SWAP_SCAN:
        return SCAN
    if column in WS_SEARCH or (table == "swaps" and column in {"continuous", "continuous_sqrt_d", "ratio"}):
        return KINKS if map_name in KINKED else FLOAT32 if map_name in FLOAT32_SEARCH else SMOOTH_SEARCH
    return FIRST_STAGE


def versions() -> dict[str, str]:
    from wordsens.studies import numerics_versions

    versions = numerics_versions()

    return {**versions, "claims": "+".join(f"{k}={v}" for k, v in sorted(versions.items()))}


def read(tables: Path, name: str) -> pd.DataFrame:
    """A table of a run (Parquet where there is one), the volatile columns dropped."""
    parquet, csv = tables / f"{name}.parquet", tables / f"{name}.csv"
    frame = pd.read_parquet(parquet) if parquet.exists() else pd.read_csv(csv)
    return frame.drop(columns=[c for c in frame.columns if c in VOLATILE])


def _sorted(frame: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    key = [k for k in key if k in frame.columns]
    return frame.sort_values(key, key=lambda s: s.astype(str)).reset_index(drop=True)


def _is_float(series: pd.Series) -> bool:
    return pd.api.types.is_float_dtype(series) and not series.isna().all()


def _as_text(series: pd.Series) -> pd.Series:
    """A non-float column as text, missing values as "NA" (pandas keeps NaN missing through
    ``astype(str)``, and NaN never equals NaN)."""
    return series.astype(object).fillna("NA").astype(str)


def compare(before: pd.DataFrame, after: pd.DataFrame, key: list[str], table: str) -> list[str]:
    """What differs between recorded table ``table`` and a fresh one beyond the tolerances (empty: nothing)."""
    problems = []
    missing = sorted(set(before.columns) - set(after.columns))
    added = sorted(set(after.columns) - set(before.columns) - VOLATILE)
    if missing or added:
        problems.append(f"columns differ: missing {missing}, new {added} (re-record if meant)")
    if len(before) != len(after):
        return [*problems, f"{len(after)} rows instead of {len(before)}"]
    before, after = _sorted(before, key), _sorted(after, key)
    maps = before["map"].astype(str).to_numpy() if "map" in before.columns else np.full(len(before), "")
    for column in before.columns:
        if column in NOT_COMPARED or column not in after.columns:
            continue
        b, a = before[column], after[column]
        if _is_float(b) or _is_float(a):
            tols = [tolerance(table, column, m) for m in maps]
            compared = np.array([t is not None for t in tols])
            rtol = np.array([t[0] if t else np.inf for t in tols])
            atol = np.array([t[1] if t else np.inf for t in tols])
            x, y = b.to_numpy(dtype=float), a.to_numpy(dtype=float)
            both_nan = np.isnan(x) & np.isnan(y)
            dev = np.abs(y - x)
            bad = compared & ~both_nan & ~(dev <= atol + rtol * np.abs(x))
            if bad.any():
                rel = dev / np.maximum(np.abs(x), 1e-300)
                worst = int(np.nanargmax(np.where(bad, rel, -1)))
                problems.append(
                    f"{column}: {int(bad.sum())} of {len(x)} rows beyond tolerance, largest relative change "
                    f"{rel[worst]:.3g} (row {dict(before.loc[worst, [k for k in key if k in before.columns]])}: "
                    f"{x[worst]!r} recorded, {y[worst]!r} now)"
                )
        else:
            x, y = _as_text(b), _as_text(a)
            if not x.equals(y):
                rows = int((x != y).sum())
                problems.append(
                    f"{column}: {rows} of {len(x)} rows differ (e.g. {x[x != y].iloc[0]!r} -> {y[x != y].iloc[0]!r})"
                )
    return problems


def changes(before: pd.DataFrame, after: pd.DataFrame, key: list[str]) -> list[str]:
    """Per column: how many rows changed at all and the largest relative change (for re-recordings)."""
    if len(before) != len(after):
        return [f"{len(before)} rows -> {len(after)}"]
    before, after = _sorted(before, key), _sorted(after, key)
    out = []
    for column in after.columns:
        if column not in before.columns:
            out.append(f"{column}: new")
            continue
        b, a = before[column], after[column]
        if _is_float(b) or _is_float(a):
            x, y = b.to_numpy(dtype=float), a.to_numpy(dtype=float)
            diff = ~((x == y) | (np.isnan(x) & np.isnan(y)))
            if diff.any():
                rel = np.abs(y - x)[diff] / np.maximum(np.abs(x[diff]), 1e-300)
                largest = np.nanmax(rel)
                out.append(f"{column}: {int(diff.sum())} of {len(x)} rows changed, largest {largest:.3g} relative")
        else:
            diff = _as_text(b).to_numpy() != _as_text(a).to_numpy()
            if diff.any():
                out.append(f"{column}: {int(diff.sum())} of {len(b)} rows changed")
    return out


def record(tables: Path) -> None:
    """Write the fixture from a demo run's ``tables`` folder and print what changed, per column."""
    FIXTURE.mkdir(parents=True, exist_ok=True)
    for name, (key, _) in TABLES.items():
        frame = read(tables, name)
        old = FIXTURE / f"{name}.csv"
        if old.exists():
            lines = changes(pd.read_csv(old), _roundtrip(frame), key)
            print(f"{name}: " + ("unchanged" if not lines else "\n  " + "\n  ".join(lines)))
        else:
            print(f"{name}: new, {len(frame)} rows")
        frame.to_csv(old, index=False, float_format="%.17g")
    (FIXTURE / "versions.json").write_text(json.dumps(versions(), indent=1, sort_keys=True) + "\n")


def _roundtrip(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as it reads back from the fixture's CSV (the same dtypes on both sides)."""
    import io

    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, float_format="%.17g")
    buffer.seek(0)
    return pd.read_csv(buffer)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "record":
        sys.exit("usage: python tests/regression_fixture.py record RESULTS/tables")
    record(Path(sys.argv[2]))
