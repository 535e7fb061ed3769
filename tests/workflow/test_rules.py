"""The workflow's rules and scripts: every compute rule has a benchmark file that the time calibration
reads, every figure rule gets the run's stamp as a param, and the scripts only adapt (no logic of their
own, the configuration read only for the gates that must not re-run a store).

Most rules are made from the study registry (a rule per kind of job, the ``table`` rule, a rule per
figure, a rule per embedding store), so the rules are read as Snakemake builds them: the demo's
workflow loaded through Snakemake's API, without running a job."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from workflow_utils import DEMO_CONFIG, copy_workflow, demo_config

from wordsens import compute, pipeline, studies
from wordsens.compute import costs
from wordsens.pipeline import step_family

ROOT = Path(__file__).resolve().parents[2]
LIMITS = compute.Limits(cpu=16 * costs.GB, gpu=None)  # the plan's steps, whatever this machine has


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    """The demo's workflow as Snakemake builds it (in a copy of the project): its rules by name and the
    folder of its benchmark files (``BENCH``)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    work = copy_workflow(tmp_path_factory.mktemp("rules"))
    with SnakemakeApi(OutputSettings()) as api:
        loaded = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[work / DEMO_CONFIG.relative_to(ROOT)]),
            snakefile=work / "Snakefile",
            workdir=work,
        )._workflow
        return {rule.name: rule for rule in loaded.rules}, str(loaded.globals["BENCH"])


def _resources(rule) -> set[str]:
    return set(rule.resources.keys()) if rule.resources else set()


def _steps() -> list[studies.Step]:
    """The steps of the studies' own rules (the probes') that the planner schedules for the demo."""
    config = demo_config()
    return [step for spec in studies.specs() if spec.runs(config) for step in spec.steps(config, LIMITS)]


def test_the_workflow_is_read_whole(workflow):
    """Every rule made from the registry is there: each kind of job, the tables, each figure of the
    plan, each embedding store's pool and embedding, and the studies' own rules."""
    rules, _ = workflow
    grid = pipeline.Grid(demo_config(), limits=LIMITS)
    made = {*studies.job_kinds(), "table", *(figure.name for figure in grid.figures())}
    made |= {store.rule for store in grid.stores().values()} | {store.pool_rule for store in grid.stores().values()}
    assert made >= {"ws", "gen", "trained", "swaps", "fig2_rf_drf", "swaps_figure", "embed_long", "pool_long"}
    assert made | {step.name for step in _steps()} | {"fig1_attention", "claims"} <= set(rules)
    assert "mem_mb" in _resources(rules["embed_long"]) and "/embed_long/" in rules["embed_long"].benchmark


def test_every_compute_rule_has_a_benchmark_file(workflow):
    """A rule that requests resources (memory, a GPU) computes: its benchmark file is what
    ``wordsens plan --calibrate`` and the benchmarks read."""
    rules, bench = workflow
    compute_rules = sorted(name for name, rule in rules.items() if "mem_mb" in _resources(rule))
    assert {"embed", "ws", "gen", "trained", "swaps", "fig1_attention", "fig3_probes", "fig1_lm"} <= set(compute_rules)
    missing = [name for name in compute_rules if rules[name].benchmark is None]
    assert not missing, f"compute rules without benchmark: {missing}"
    for name in compute_rules:
        assert str(rules[name].benchmark).startswith(f"{bench}/"), name


def test_the_calibration_reads_every_steps_benchmark_file(workflow, tmp_path):
    """Each benchmarked step outside the grid (embeddings, probes) writes under benchmarks/<rule>/, the
    planner knows it as benchmarked (``Step.benchmarked``), and the calibration takes its file as a
    sample of the rule's family (not an unmatched job)."""
    rules, bench = workflow
    steps = {}
    for name, rule in rules.items():
        if rule.benchmark is not None and name not in studies.job_kinds():
            first = str(rule.benchmark)[len(bench) + 1 :].split("/")[0]
            assert first == name, f"{name} writes its benchmark under {first}/"
            steps[name] = tmp_path / "benchmarks" / first / f"{name}_job.tsv"
    assert {"embed", "embed_long", "fig1_attention", "fig3_probes", "fig1_lm"} <= set(steps)
    benchmarked = {step.name for step in _steps() if step.benchmarked}
    assert benchmarked == {name for name in steps if step_family(name) != "embed"}
    for seconds, path in enumerate(steps.values(), start=3):
        path.parent.mkdir(parents=True)
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds}.5\t0:00:0{seconds}\t300\n")
    measured = pipeline.measure([], [tmp_path], benchmarked)
    assert measured.unmatched == 0
    got = sorted((sample.family, sample.measured) for sample in measured.samples)
    assert got == sorted((step_family(name), seconds + 0.5) for seconds, name in enumerate(steps, start=3))


def test_every_figure_rule_gets_the_stamp_as_a_param(workflow):
    """Every rule that draws (the studies' figures through scripts/figure.py, the probes' plot scripts)
    gets the run's stamp: on the demo's random models, the toy demo's."""
    rules, _ = workflow
    figures = sorted(
        name
        for name, rule in rules.items()
        if rule.script and (rule.script.endswith("scripts/figure.py") or Path(rule.script).name.startswith("plot_"))
    )
    grid = pipeline.Grid(demo_config(), limits=LIMITS)
    drawn = {figure.name for figure in grid.figures()} | {step.name for step in _steps() if step.figure}
    assert set(figures) == drawn and len(figures) == 15, figures  # the demo draws every figure
    missing = [name for name in figures if not hasattr(rules[name].params, "stamp")]
    assert not missing, f"figure rules without the stamp param: {missing}"
    assert all(str(rules[name].params.stamp).startswith("toy demo: ") for name in figures)


SCRIPTS = sorted((ROOT / "scripts").glob("*.py")) + sorted(
    (ROOT / "src" / "wordsens" / "studies").glob("*/scripts/*.py")
)
# configuration read by a job on purpose: the gates of the pool, the embedding store and the trained
# study's tokenizer check (scripts/job.py hands the configuration to the job's body: a change of
# data.max_unk_share, data.min_distinct_share or the grid's n must not re-run them)
READS_CONFIG = {"pool.py", "embed.py", "job.py"}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
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
