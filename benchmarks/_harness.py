"""What the benchmark scripts share: hidden worker flags, job selection, one subprocess per run."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # this checkout (its src/ is what a worker imports)


def add_worker_flags(parser: argparse.ArgumentParser, strings: tuple[str, ...], ints: tuple[str, ...]) -> None:
    """Hidden flags through which the script calls itself as a worker."""
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for flag in strings:
        parser.add_argument(flag, help=argparse.SUPPRESS)
    for flag in ints:
        parser.add_argument(flag, type=int, help=argparse.SUPPRESS)


def selected(parser: argparse.ArgumentParser, args: argparse.Namespace, jobs: dict, quick: dict) -> tuple[dict, list]:
    """The job table (``--quick`` or not) and the names asked for with ``--jobs``, validated."""
    table = quick if args.quick else jobs
    names = args.jobs or list(table)
    unknown = [name for name in names if name not in table]
    if unknown:
        parser.error(f"unknown jobs {unknown}; choose from {list(table)}")
    return table, names


def run_worker(script: str, flags: list[str], src: Path | None = None) -> dict:
    """Run ``script --worker *flags`` in its own process (so its peak memory is its own) and
    return the JSON line it prints, or ``{"error": ...}``. The worker imports ``wordsens`` from
    ``src`` (default: this checkout's ``src/``, whatever the editable install points at)."""
    env = {**os.environ, "PYTHONPATH": str(src or ROOT / "src")}
    out = subprocess.run([sys.executable, script, "--worker", *flags], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def baseline_src(commit: str) -> Iterator[Path]:
    """The ``src/`` folder of ``commit`` of this repository, in a temporary detached ``git worktree``
    removed afterwards: run a worker with it to time another commit's code in the same run."""
    with tempfile.TemporaryDirectory(prefix="wordsens-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True, capture_output=True
        )
        try:
            yield tree / "src"
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False, capture_output=True
            )
