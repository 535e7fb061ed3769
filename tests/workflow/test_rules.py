"""The workflow's rules and scripts as files: every compute rule has a benchmark file that the time
calibration reads, every figure rule gets the run's stamp as a param, and the scripts only adapt (no
logic of their own, the configuration read only for the gates that must not re-run a store)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from wordsens import pipeline
from wordsens.pipeline.calibrate import SAME_AS

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((ROOT / "workflow" / "rules").glob("*.smk"))
HEADER = re.compile(r"^(\s*)(?:rule (\w+):|use rule (\w+) as (\w+) with:)\s*$")


def _rules() -> dict[str, dict[str, str]]:
    """Each rule of the rule files by name: its directives (``benchmark``, ``resources``, ``params``,
    ``script``, ...) as text; a ``use rule`` gets its parent's, overridden by its own."""
    rules: dict[str, dict[str, str]] = {}
    for path in RULE_FILES:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            match = HEADER.match(line)
            if not match:
                continue
            indent, name = len(match.group(1)), match.group(2) or match.group(4)
            body = []
            for following in lines[i + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                body.append(following)
            directives: dict[str, str] = dict(rules[match.group(3)]) if match.group(3) else {}
            current = None
            for entry in body:
                found = re.match(rf"^\s{{{indent + 4}}}(\w+):(.*)$", entry)
                if found:
                    current = found.group(1)
                    directives[current] = found.group(2)
                elif current:
                    directives[current] += "\n" + entry
            rules[name] = directives
    return rules


RULES = _rules()
# the rules whose jobs are the grid's (matched by their output path, wordsens.pipeline.Job.key)
GRID_RULES = {"ws", "gen", "trained", "swaps"}


def test_the_rule_files_are_read_whole():
    assert {"embed", "embed_long", "ws", "gen", "trained", "fig1_attention", "claims", "gen_figure"} <= set(RULES)
    assert "mem_mb" in RULES["embed_long"]["resources"] and "embed_long" in RULES["embed_long"]["benchmark"]


def test_every_compute_rule_has_a_benchmark_file():
    """A rule that requests resources (memory, a GPU) computes: its benchmark file is what
    ``wordsens plan --calibrate`` and the benchmarks read."""
    compute = sorted(name for name, rule in RULES.items() if "mem_mb" in rule.get("resources", ""))
    assert {"embed", "ws", "gen", "trained", "fig1_attention", "fig3_probes", "fig1_lm"} <= set(compute)
    missing = [name for name in compute if "benchmark" not in RULES[name]]
    assert not missing, f"compute rules without benchmark: {missing}"
    for name in compute:
        assert "{BENCH}/" in RULES[name]["benchmark"], name


def test_the_calibration_reads_every_steps_benchmark_file(tmp_path):
    """Each benchmarked step outside the grid (embeddings, probes) writes under benchmarks/<rule>/, and
    the calibration takes its file as a sample of the rule's family (not an unmatched job)."""
    steps = {}
    for name, rule in RULES.items():
        if "benchmark" in rule and name not in GRID_RULES:
            first = re.search(r"\{BENCH\}/([^/]+)/", rule["benchmark"]).group(1)
            assert first == name, f"{name} writes its benchmark under {first}/"
            steps[name] = tmp_path / "benchmarks" / first / f"{name}_job.tsv"
    assert {"embed", "embed_long", "fig1_attention", "fig3_probes", "fig1_lm"} <= set(steps)
    for seconds, path in enumerate(steps.values(), start=3):
        path.parent.mkdir(parents=True)
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds}.5\t0:00:0{seconds}\t300\n")
    measured = pipeline.measure([], [tmp_path])
    assert measured.unmatched == 0
    got = sorted((sample.family, sample.measured) for sample in measured.samples)
    assert got == sorted((SAME_AS.get(name, name), seconds + 0.5) for seconds, name in enumerate(steps, start=3))


def test_every_figure_rule_gets_the_stamp_as_a_param():
    figures = sorted(name for name, rule in RULES.items() if "scripts/plot_" in rule.get("script", ""))
    assert len(figures) == 10, figures
    missing = [name for name in figures if not re.search(r"^\s+stamp=run_stamp\(", RULES[name]["params"], re.M)]
    assert not missing, f"figure rules without the stamp param: {missing}"


SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))
# configuration read by a job on purpose: the gates of the pool, the embedding store and the trained
# study's tokenizer check (a change of data.max_unk_share, data.min_distinct_share or the grid's n must
# not re-run them)
READS_CONFIG = {"pool.py", "embed.py", "trained.py"}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_scripts_only_adapt(path):
    """A script reads its params and inputs, calls the package and writes its outputs: no function,
    class, branch or loop of its own (a loop of one call over its outputs at most), a few lines, and
    the configuration read only where a param would re-run what it must not."""
    text = path.read_text()
    tree = ast.parse(text)
    logic = [
        type(node).__name__
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.While, ast.If, ast.With, ast.Try))
        or (isinstance(node, ast.For) and len(node.body) > 1)  # one call per output, at most
    ]
    assert not logic, f"{path.name} has {logic}: move the logic into the package"
    assert len(text.splitlines()) <= 45, f"{path.name}: {len(text.splitlines())} lines"
    if path.name not in READS_CONFIG:
        assert "snakemake.config" not in text, f"{path.name} reads the configuration: pass a param"
