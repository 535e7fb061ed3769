"""Helpers to run the Snakemake workflow for real in a temporary copy of the project."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "config.yaml", "workflow", "scripts", "config", "profiles")
# merged into a test's config: the studies beyond the paper off (the paper's grids only)
NO_STUDIES = {
    "variants": None,
    "long_context": None,
    "positions": None,
    "trained": None,
    "swaps": None,
    "gen_words": None,
}
# ... and with them the generalisation figures and the probes: word sensitivity alone
WS_ONLY = {**NO_STUDIES, "gen": {"fig4": None, "fig5": None}, "probes": {"enabled": False, "lm": {"enabled": False}}}
BASE_CONFIG, DEMO_CONFIG = ROOT / "config.yaml", ROOT / "config" / "demo.yaml"


def demo_config(changes: dict | None = None, *, check: bool = True) -> dict:
    """config.yaml with config/demo.yaml and ``changes`` merged over it, checked by ``pipeline.check``
    (``check=False``: merged only, for tests of the checks themselves)."""
    from wordsens import pipeline

    config = pipeline.merge(yaml.safe_load(BASE_CONFIG.read_text()), yaml.safe_load(DEMO_CONFIG.read_text()))
    config = pipeline.merge(config, changes or {})
    return pipeline.check(config) if check else config


def run_cli(*args: object) -> subprocess.CompletedProcess[str]:
    """``python -m wordsens.cli ARGS`` in a fresh process, its output captured as text; not checked."""
    command = [sys.executable, "-m", "wordsens.cli", *(str(a) for a in args)]
    return subprocess.run(command, capture_output=True, text=True, env=env())


def copy_workflow(target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, target / name, dirs_exist_ok=True)
        elif src.exists():
            shutil.copy2(src, target / name)
    return target


def env() -> dict[str, str]:
    out = dict(os.environ)
    out.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    return out


def snakemake(
    workdir: Path, *args: str, timeout: int = 3600, check: bool = True, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--directory",
        str(workdir),
        "--snakefile",
        str(workdir / "Snakefile"),
        *args,
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=environ or env(), timeout=timeout, cwd=workdir)
    if check and out.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-6000:]}"
        )
    return out


def planned_jobs(workdir: Path, *configfiles: str, extra: tuple[str, ...] = ()) -> dict[str, int]:
    """Rule -> job count of a dry run (empty when nothing is to be done)."""
    args = ["-n", "--quiet", "rules"]
    for cf in configfiles:
        args += ["--configfile", cf]
    out = snakemake(workdir, *args, *extra)
    text = out.stdout + out.stderr
    counts: dict[str, int] = {}
    match = re.search(r"Job stats:\n(.*?)\n\n", text + "\n\n", re.S)
    if not match:
        return counts
    for line in match.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job"):
            counts[parts[0]] = int(parts[1])
    return counts


def write_config(workdir: Path, name: str, base: str, changes: dict) -> str:
    """A copy of config file ``base`` with ``changes`` merged in; returns its relative path."""
    from wordsens.pipeline import merge

    config = yaml.safe_load((workdir / base).read_text())
    (workdir / name).write_text(yaml.safe_dump(merge(config, changes), sort_keys=False))
    return name


def gpu_memory_in_use(log: str) -> list[dict[str, int]]:
    """At every job start of a Snakemake log, the jobs running (their outputs) with the gpu_mem_mb
    each declared, as the scheduler accounted them: a job runs from its block (``rule ws:``, then
    indented fields: ``jobid: 3``, ``resources: ..., gpu_mem_mb=1037``) until ``Finished jobid: 3``.
    Log order, not wall time: what the scheduler had started and not yet seen finish."""
    running: dict[str, tuple[str, int]] = {}
    states: list[dict[str, int]] = []
    block: dict[str, str] = {}

    def started() -> None:
        mb = re.search(r"\bgpu_mem_mb=(\d+)", block.get("resources", ""))
        running[block["jobid"]] = (block.get("output", ""), int(mb.group(1)) if mb else 0)
        states.append(dict(running.values()))

    for line in [*log.splitlines(), ""]:
        field = re.match(r"\s+(\w+): (.*)", line)
        if block and field:
            block[field.group(1)] = field.group(2)
            continue
        if "jobid" in block:  # the end of a job's block: the job started
            started()
        block = {"rule": line} if re.match(r"(local)?rule \w+:", line) else {}
        finished = re.match(r"Finished jobid: (\d+)", line)
        if finished:
            running.pop(finished.group(1), None)
    return states
