"""The command line: `wordsens claims` on hand-made results folders, `wordsens maps`, and `wordsens ws`
with a plugin's map and its options."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wordsens import cli
from wordsens.arguments import add_command, parse_option, picked
from wordsens.claims import COLUMNS
from wordsens.studies.claims import compute_claims

ROOT = Path(__file__).resolve().parents[3]


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
            rows.append(
                {
                    "map": "rf",
                    "data": "synthetic",
                    "d": 64,
                    "n": n,
                    "L": None,
                    "trial": trial,
                    "lower": (1 + np.sqrt(2 / n)) / np.sqrt(n) * (1 + 0.01 * (-1) ** trial),
                }
            )
            rows.append(
                {
                    "map": "raf",
                    "data": "synthetic",
                    "d": 384,
                    "n": n,
                    "L": None,
                    "trial": trial,
                    "lower": 0.5 + 0.01 * trial,
                }
            )
    frame = pd.DataFrame(rows)
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    for map_name in ("rf", "raf"):
        frame[frame["map"] == map_name].to_parquet(tables / f"ws_{map_name}.parquet")
    return tmp_path / "results", {f"ws_{m}": frame[frame["map"] == m] for m in ("rf", "raf")}


def test_claims_prints_the_table_in_three_formats(tmp_path):
    results, tables = _results(tmp_path)
    expected = compute_claims(tables)
    code, text, _ = _run("claims", str(results))
    assert code == 0
    lines = {line.split()[0]: line for line in text.splitlines() if line and not line.startswith(" ")}
    assert "holds" in lines["rf_slope"] and "fails" in lines["raf_floor"]
    assert "not run" in lines["fig4_rf_alignment"]
    code, markdown, _ = _run("claims", str(results), "--format", "markdown")
    assert code == 0 and markdown.count("\n| ") == len(expected) + 1  # header and one line per row
    code, csv, _ = _run("claims", str(results), "--format", "csv")
    assert code == 0
    parsed = pd.read_csv(io.StringIO(csv))
    assert list(parsed.columns) == COLUMNS and list(parsed["verdict"]) == list(expected["verdict"])
    np.testing.assert_allclose(parsed["value"], expected["value"], rtol=1e-5)


def test_claims_of_a_folder_without_tables_names_the_fix(tmp_path):
    code, out, err = _run("claims", str(tmp_path / "nowhere"))
    assert code == 2 and not out
    assert "wordsens claims: error" in err and "results folder" in err


def test_claims_add_the_variant_maps_without_a_table_of_their_own(tmp_path):
    from wordsens.studies.claims import claims_inputs

    results, tables = _results(tmp_path)
    rows = []
    for map_name, slope in (("sigmoid_raf", 0.0), ("rf", -2.0)):
        for n in (10, 50, 250):
            for trial in range(3):
                rows.append(
                    {
                        "map": map_name,
                        "data": "synthetic",
                        "d": 768,
                        "n": n,
                        "L": None,
                        "trial": trial,
                        "lower": n**slope * (1 + 0.01 * trial),
                    }
                )
    variants = pd.DataFrame(rows)
    variants.to_parquet(results / "tables" / "variants.parquet")
    inputs = claims_inputs({**tables, "variants": variants})
    assert sorted(inputs) == ["ws_raf", "ws_rf", "ws_sigmoid_raf"]
    assert inputs["ws_rf"] is tables["ws_rf"]  # the paper's grid keeps its own table
    expected = compute_claims(inputs)
    code, csv, _ = _run("claims", str(results), "--format", "csv")
    parsed = pd.read_csv(io.StringIO(csv))
    assert code == 0 and list(parsed["claim"]) == list(expected["claim"])
    (slope,) = parsed[(parsed["claim"] == "map_slope") & (parsed["map"] == "sigmoid_raf")]["value"]
    assert abs(slope) < 0.01
    assert (parsed.loc[parsed["claim"] == "rf_slope", "verdict"] == "holds").all()  # from ws_rf, not variants


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter (a plugin, once registered, stays registered in a process)."""
    return subprocess.run(
        [sys.executable, "-m", "wordsens.cli", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "WORDSENS_PLUGINS": ""},
        timeout=1200,
    )


@pytest.mark.slow  # CLI processes (torch start-up each)
def test_a_plugin_map_runs_from_the_cli_with_its_options():
    out = _cli(
        "ws",
        "--plugin",
        "tests/plugins/toy_map.py",
        "--map",
        "toy",
        "--d",
        "8",
        "--n",
        "5",
        "--option",
        "scale=2.5",
        "--max-steps",
        "40",
        "--max-memory-gb",
        "1",
        "--draw-on",
        "cpu",
        "--device",
        "cpu",  # as the library call below: on a CUDA host, auto would search on the GPU
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["map"] == "toy" and result["options"] == {"scale": 2.5, "depth": 1} and result["n"] == 5
    assert result["lower"] > 0 and result["delta_norm"] <= math.sqrt(8) * (1 + 1e-12)
    # the same estimate through the library, with the plugin loaded the same way
    code = (
        "import json, sys; from wordsens import search; from wordsens.data import samples; "
        "from wordsens.maps import registry; from wordsens.seeds import derive_seed; "
        "registry.load_plugins(['tests/plugins/toy_map.py']); "
        "X, _ = samples.draw_sample('synthetic', 5, 8, derive_seed(0, 'sample')); "
        "print(search.estimate('toy', X, seed=0, options={'scale': 2.5}, max_steps=40, device='cpu').lower)"
    )
    direct = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env={**os.environ, "WORDSENS_PLUGINS": ""},
    )
    assert float(direct.stdout) == pytest.approx(result["lower"], rel=1e-12)
    # the plugin's map is a --map choice only with the plugin; options are checked by the map
    assert "invalid choice: 'toy'" in _cli("ws", "--map", "toy", "--d", "8", "--n", "5").stderr
    bad = _cli(
        "ws", "--plugin", "tests/plugins/toy_map.py", "--map", "toy", "--d", "8", "--n", "5", "--option", "heads=2"
    )
    assert bad.returncode == 2 and "has no option heads" in bad.stderr
    assert "cannot import the map plugin" in _cli("--plugin", "no_such_module_xyz", "maps").stderr


def test_maps_lists_every_registered_map_with_its_formula_and_options():
    from wordsens.maps import registry

    out = _cli("maps", "--plugin", "tests/plugins/toy_map.py")
    assert out.returncode == 0, out.stderr
    names = [line.split(":")[0] for line in out.stdout.splitlines() if line and not line.startswith(" ")]
    with registry.isolated():
        registry.load_plugins(["tests/plugins/toy_map.py"])
        assert names == list(registry.names()) and "toy" in names  # the registry's order, the plugin's map too
    assert "toy: toy map (tanh)" in out.stdout and "options:    scale=1.0, depth=1" in out.stdout
    assert "swept:      depth (a grid may list its values)" in out.stdout
    spec = registry.get("mh_raf")
    assert f"  formula:    {spec.formula}" in out.stdout and "options:    heads=12" in out.stdout
    assert f"  weights:    {spec.weight_law}" in out.stdout


def test_option_values_are_parsed():
    assert parse_option("heads=4") == ("heads", 4) and parse_option("scale=2.5") == ("scale", 2.5)
    assert parse_option("k=null") == ("k", None) and parse_option("name=abc") == ("name", "abc")
    assert parse_option("flag=true") == ("flag", True)
    with pytest.raises(argparse.ArgumentTypeError, match="key=value"):
        parse_option("heads")


def test_a_subcommand_is_described_by_its_module_docstring():
    """The first paragraph, less the prefix naming the command, is its line in the top-level help; the rest
    its description; a module without a docstring (``python -OO``) still gets its subcommand."""
    parser = argparse.ArgumentParser(prog="wordsens")
    sub = parser.add_subparsers()
    demo = add_command(sub, "demo", "``wordsens demo``: print a demo\n\nPrint the demo's text,\nrewrapped.")
    assert demo.description == "Print the demo's text,\nrewrapped."
    assert "Print the demo's text, rewrapped." in demo.format_help()
    assert re.search(r"^ +demo +print a demo$", parser.format_help(), re.MULTILINE)
    assert add_command(sub, "bare", None).description is None


def test_picked_hands_options_on_by_name():
    args = argparse.Namespace(seed=3, max_steps=10, device="cpu")
    assert picked(args, "seed", "max_steps") == {"seed": 3, "max_steps": 10}
