"""The command line's table-reading subcommands on hand-made results folders (no workflow run)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd

from wordsens import cli
from wordsens.claims import COLUMNS, compute_claims


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _results(tmp_path):
    """A results folder with an RF table on the law (1 + sqrt(2/n)) / sqrt(n) and a RAF table whose
    WS falls below 1 at d = 384: rf_slope holds, raf_floor fails."""
    rows = []
    for n in (20, 40, 80, 160):
        for trial in range(4):
            rows.append({"map": "rf", "data": "synthetic", "d": 64, "n": n, "L": None, "trial": trial,
                         "lower": (1 + np.sqrt(2 / n)) / np.sqrt(n) * (1 + 0.01 * (-1) ** trial)})
            rows.append({"map": "raf", "data": "synthetic", "d": 384, "n": n, "L": None, "trial": trial,
                         "lower": 0.5 + 0.01 * trial})
    frame = pd.DataFrame(rows)
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    for map_name in ("rf", "raf"):
        frame[frame["map"] == map_name].to_parquet(tables / f"ws_{map_name}.parquet")
    return tmp_path / "results", {f"ws_{m}": frame[frame["map"] == m] for m in ("rf", "raf")}


def test_claims_prints_the_table_in_three_formats(tmp_path):
    results, tables = _results(tmp_path)
    expected = compute_claims(tables, seed=3, resamples=200)
    code, text, _ = _run("claims", str(results), "--seed", "3", "--resamples", "200")
    assert code == 0
    lines = {line.split()[0]: line for line in text.splitlines() if line and not line.startswith(" ")}
    assert "holds" in lines["rf_slope"] and "fails" in lines["raf_floor"]
    assert "not run" in lines["fig4_rf_alignment"]
    code, markdown, _ = _run("claims", str(results), "--format", "markdown", "--seed", "3", "--resamples", "200")
    assert code == 0 and markdown.count("\n| ") == len(expected) + 1  # header and one line per row
    code, csv, _ = _run("claims", str(results), "--format", "csv", "--seed", "3", "--resamples", "200")
    assert code == 0
    parsed = pd.read_csv(io.StringIO(csv))
    assert list(parsed.columns) == COLUMNS and list(parsed["verdict"]) == list(expected["verdict"])
    np.testing.assert_allclose(parsed["value"], expected["value"], rtol=1e-5)


def test_claims_of_a_folder_without_tables_names_the_fix(tmp_path):
    code, out, err = _run("claims", str(tmp_path / "nowhere"))
    assert code == 2 and not out
    assert "wordsens claims: error" in err and "results folder" in err
