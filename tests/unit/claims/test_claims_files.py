"""The claims table's files and renderings (wordsens.claims): read from a results folder, bad tables
refused clearly, every claim rendered with one verdict, and computed without torch or the plotting
libraries."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from claims_tables import RF_N, gen_rows, law, one, trained_table, ws_table

from wordsens.claims import VERDICTS, claims_html, claims_markdown, format_claims
from wordsens.studies.claims import claims_from_results, compute_claims

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


# ----------------------------------------------------------------------------- light imports

HEAVY = ("torch", "matplotlib", "seaborn", "transformers")
LIGHT_RUN = """
import json, sys
from wordsens.claims import claims_html, claims_markdown, format_claims
from wordsens.studies.claims import claims_from_results
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
