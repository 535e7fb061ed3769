"""What the benchmark scripts share: hidden worker flags, job selection, one subprocess per run."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


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


def run_worker(script: str, flags: list[str]) -> dict:
    """Run ``script --worker *flags`` in its own process (so its peak memory is its own) and
    return the JSON line it prints, or ``{"error": ...}``."""
    out = subprocess.run([sys.executable, script, "--worker", *flags], capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])
