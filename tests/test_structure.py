"""The structure of the numerical core (issue 9): small modules, and no module using another's
private names."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "wordsens"
WORKFLOW = Path(__file__).resolve().parents[1] / "workflow"


def test_no_module_over_450_lines():
    long = {p.name: n for p in SRC.glob("*.py") if (n := len(p.read_text().splitlines())) > 450}
    assert not long, f"split these modules (450 lines at most): {long}"


def test_no_module_imports_another_modules_private_names():
    found = []
    for path in SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                found += [
                    f"{path.name}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and (SRC / f"{node.value.id}.py").exists()
            ):
                found.append(f"{path.name}: {node.value.id}.{node.attr}")
    for path in [*WORKFLOW.rglob("*.smk"), *Path(SRC.parents[1], "scripts").glob("*.py")]:
        found += [
            f"{path.name}: {line.strip()}"
            for line in path.read_text().splitlines()
            if line.lstrip().startswith("from wordsens") and " import _" in line
        ]
    assert not found, found
