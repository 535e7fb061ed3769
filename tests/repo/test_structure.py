"""The structure of the package: sub-packages with a public face, small modules, imports that run one
way (no cycle; word sensitivity without generalisation; planning without torch), no module exporting
another's names, and no module using another's private names."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "wordsens"
PLUGIN = ROOT / "tests" / "plugins" / "toy_map.py"


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__``); a study's own
    Snakemake scripts (``studies/<study>/scripts/``: run by its rules, not imported) are not modules."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        if "scripts" in path.relative_to(SRC).parts[:-1]:
            continue
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _package(name: str) -> str:
    """The package a module's relative imports start from."""
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _typing_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:`` (they never run: annotations only)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return out


def _imports(name: str, *, runtime: bool = False) -> Iterator[tuple[str, list[str]]]:
    """``(module, imported names)`` of every import of a module, at any depth (module level, in
    functions, under ``TYPE_CHECKING`` but with ``runtime``), relative imports resolved; ``import x.y`` gives
    ``(x.y, [])``."""
    tree = ast.parse(MODULES[name].read_text())
    skipped = _typing_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(name).split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names]


def _edges(name: str) -> set[str]:
    """The wordsens modules that importing ``name`` or calling its functions runs (function-local imports
    counted; the typing-only ones under ``TYPE_CHECKING`` never run): each imported module (``from P import m``
    with ``m`` a submodule: ``P.m``, else ``P``) and the packages above it that are not above ``name`` too
    (those are being imported already)."""
    own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    out: set[str] = set()
    for module, names in _imports(name, runtime=True):
        if not module.startswith("wordsens"):
            continue
        targets = {f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES}
        if len(targets) < len(names) or not names:
            targets.add(module)
        for target in targets:
            parts = target.split(".")
            out |= {target} | ({".".join(parts[:i]) for i in range(1, len(parts))} - own)
    return {target for target in out - {name} if target in MODULES}


def test_the_layout_has_few_top_level_modules_and_no_long_module():
    top = sorted(path.name for path in SRC.glob("*.py"))
    assert len(top) <= 6, f"at most 6 modules beside the sub-packages, found {top}"
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 450}
    assert not long, f"split these modules (450 lines at most, as ruff formats them): {long}"


def _package_of(module: str) -> str:
    """The sub-package (``wordsens.claims``) or top-level module (``wordsens.io``) a module belongs to."""
    return ".".join(module.split(".")[:2])


def test_no_package_level_import_loop():
    """The sub-packages import each other one way: no loop among them, counting every import that runs
    (function-local ones included; the typing-only ones under ``TYPE_CHECKING`` never run)."""
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        mine = _package_of(name)
        graph.setdefault(mine, set())
        graph[mine] |= {_package_of(t) for t in _edges(name) if _package_of(t) not in (mine, "wordsens")}
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                pytest.fail("package-level import loop: " + " -> ".join([*path[path.index(target) :], target]))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_no_import_cycle():
    graph = {name: _edges(name) for name in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in MODULES:
        if name not in state:
            visit(name, [name])


def _defined(tree: ast.Module) -> set[str]:
    """Names a module binds itself at module level (functions, classes, assignments)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def _imported(tree: ast.Module) -> set[str]:
    """Names bound by imports anywhere at module level (``TYPE_CHECKING`` blocks included)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def _all(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def test_only_a_package_face_exports_names_it_imports():
    """A module's ``__all__`` lists what it defines; only a package's ``__init__`` (its face) lists
    names of its submodules (imported, imported under ``TYPE_CHECKING`` for a lazy face, or the
    submodules themselves)."""
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        exported = _all(tree)
        if path.name == "__init__.py":
            known = _defined(tree) | _imported(tree) | {p.stem for p in path.parent.glob("*.py")}
            known |= {p.name for p in path.parent.iterdir() if (p / "__init__.py").exists()}
            found += [f"{name}: {entry} (not defined nor imported)" for entry in exported if entry not in known]
        else:
            defined = _defined(tree)
            found += [f"{name}: {entry} (not defined here)" for entry in exported if entry not in defined]
    assert not found, found


def _private_uses(text: str, *, python: bool) -> list[str]:
    """``from wordsens... import _x`` and ``m._x`` for ``m`` bound to a wordsens module (``import
    wordsens.a.b as m``, ``from wordsens.a import b``, ``import wordsens.a.b``: ``wordsens.a.b._x``)."""
    private = re.compile(r"^_(?!_)")
    found = []
    if python:
        tree = ast.parse(text)
        bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("wordsens")):
                found += [
                    f"from {'.' * node.level}{node.module or ''} import {a.name}"
                    for a in node.names
                    if private.match(a.name)
                ]
                bound |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                bound |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("wordsens")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private.match(node.attr):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in bound:
                    found.append(f"{ast.unparse(node)}")
        return found
    # Snakemake files: read line by line, parenthesised imports joined on one line
    text = re.sub(r"import \(([^)]*)\)", lambda m: "import " + " ".join(m.group(1).split()), text)
    bound = set()
    for line in text.splitlines():
        if m := re.match(r"\s*from (wordsens[\w.]*) import (.+)", line):
            names = [n.strip().split(" as ")[-1] for n in m.group(2).strip("()").split(",") if n.strip()]
            found += [line.strip() for n in m.group(2).split(",") if private.match(n.strip().split(" as ")[0])]
            bound |= set(names)
        elif m := re.match(r"\s*import (wordsens[\w.]*)(?: as (\w+))?", line):
            bound.add(m.group(2) or "wordsens")
    for line in text.splitlines():
        found += [
            line.strip() for m in re.finditer(r"\b(\w+)((?:\.\w+)*)\.(_[a-zA-Z]\w*)", line) if m.group(1) in bound
        ]
    return found


def test_no_module_uses_another_modules_private_names():
    """In the package, the scripts, the workflow, the benchmarks and the tests (a test module may use
    its own private names, never the package's)."""
    paths = [
        *SRC.rglob("*.py"),
        *(ROOT / "scripts").glob("*.py"),
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
    ]
    found = [f"{p.relative_to(ROOT)}: {use}" for p in paths for use in _private_uses(p.read_text(), python=True)]
    for path in [ROOT / "Snakefile", *(ROOT / "workflow").rglob("*.smk")]:
        found += [f"{path.relative_to(ROOT)}: {use}" for use in _private_uses(path.read_text(), python=False)]
    assert not found, found


def test_the_private_names_check_sees_aliases():
    code = (
        "import wordsens.maps.paper as P\nfrom wordsens.maps import api\nimport wordsens.io\n"
        "P._scores\napi._x\nwordsens.io._FILES\n"
    )
    assert _private_uses(code, python=True) == ["P._scores", "api._x", "wordsens.io._FILES"]
    assert _private_uses("from wordsens.maps.paper import _scores\n", python=True)
    assert _private_uses("from wordsens.maps import api as A\nx = A._y\n", python=False) == ["x = A._y"]
    assert not _private_uses("import torch\ntorch._C\nself._x\n", python=True)


def test_word_sensitivity_never_imports_generalisation():
    static = sorted(
        f"{name} imports {module}"
        for name in MODULES
        if name.startswith("wordsens.search")
        for module, _ in _imports(name)
        if module.startswith("wordsens.generalisation")
    )
    assert not static, static
    code = "import sys, wordsens.search; assert 'wordsens.generalisation' not in sys.modules, sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_planners_faces_import_neither_torch_nor_snakemake():
    """What the Snakefile imports at parse time: the pipeline's face, the map registry (through the maps
    face) and the facts about encoders."""
    code = (
        "import sys, wordsens.pipeline, wordsens.maps, wordsens.data.models, wordsens.io, wordsens.seeds; "
        "wordsens.maps.names(); "
        "heavy = [m for m in ('torch', 'snakemake', 'transformers') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_every_implementation_string_of_every_registered_map_resolves():
    from wordsens import maps

    with maps.isolated():
        maps.load_plugins([str(PLUGIN)])
        assert "toy" in maps.names()
        for name in maps.names():
            spec = maps.get(name)
            for field in ("forward", "sample", "check", "fast", "infer_options", "gen", "upper"):
                ref = getattr(spec, field)
                if ref is not None:
                    assert callable(maps.resolve(ref)), f"{name}.{field} = {ref!r}"
    assert "toy" not in maps.names()


_RESOLVE = re.compile(r"registry\.resolve\((?:\w+\.)*spec\.(\w+)\)")


def _runtime_edges() -> set[tuple[str, str]]:
    """The imports a map's ``"module:attribute"`` bindings add when they are used: from each module that
    resolves a field of a spec (``registry.resolve(spec.<field>)``) to the module every registered map
    (the toy plugin's too) names for that field."""
    from wordsens import maps

    resolvers: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        for field in _RESOLVE.findall(path.read_text()):
            resolvers.setdefault(field, set()).add(name)
    edges = set()
    with maps.isolated():
        maps.load_plugins([str(PLUGIN)])
        for map_name in maps.names():
            spec = maps.get(map_name)
            for field, callers in resolvers.items():
                ref = getattr(spec, field, None)
                if isinstance(ref, str) and ref.startswith("wordsens."):
                    edges |= {(caller, ref.partition(":")[0]) for caller in callers}
    return edges


def test_the_maps_bindings_add_no_import_cycle_and_run_down_the_layers():
    """Every binding resolves (above); the imports its use adds at run time, counted from the module that
    resolves it, close no cycle with the static imports and run down the layers or stay on their floor."""
    edges = _runtime_edges()
    assert ("wordsens.search.estimate", "wordsens.search.rf") in edges  # the check sees the bindings
    graph = {name: set(_edges(name)) for name in MODULES}
    for caller, target in edges:
        parts, own = target.split("."), {".".join(caller.split(".")[:i]) for i in range(1, caller.count(".") + 1)}
        graph[caller] |= ({target} | {".".join(parts[:i]) for i in range(2, len(parts))}) - own - {caller}
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                pytest.fail("import cycle at run time: " + " -> ".join([*path[path.index(target) :], target]))
            if target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in MODULES:
        if name not in state:
            visit(name, [name])
    floors = _layers()
    up = sorted(f"{c} resolves {t}" for c, t in edges if _floor(t, floors) > _floor(c, floors))
    assert not up, up


def test_every_import_of_the_package_names_one_of_its_modules():
    """A relative import one dot short (``from ..data`` in a study's folder) names no module; mypy, which
    ignores missing imports, does not see it: this test does (imports in functions included)."""
    missing = []
    for name in MODULES:
        for module, _ in _imports(name):
            if module.startswith("wordsens") and module not in MODULES:
                missing.append(f"{name} imports {module}")
    assert not missing, missing


def test_the_registry_imports_no_study_until_used_and_every_builtin_resolves():
    """The built-in studies load by module name at first use, as plugins do (importing the registry
    imports none of them); each is a folder of the package defining its ``SPEC``."""
    code = (
        "import sys, wordsens.studies.registry as r; "
        "assert not [m for m in sys.modules if m.startswith('wordsens.studies.') and m.count('.') == 2 "
        "and m.split('.')[2] not in ('jobs', 'spec', 'registry', 'sensitivity')], sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    from wordsens.studies import registry

    for module in registry.BUILTIN:
        assert module in MODULES and MODULES[module].name == "__init__.py", module
    assert [spec.name for spec in registry.specs()][: len(registry.BUILTIN)] == [
        m.rpartition(".")[2] for m in registry.BUILTIN
    ]


def test_every_registered_map_is_an_attribute_of_the_maps_face():
    import torch

    from wordsens import maps

    with maps.isolated():
        maps.load_plugins([str(PLUGIN)])
        X = torch.randn(3, 12, dtype=torch.float64)
        for name in maps.names():
            if maps.get(name).checkpoint:  # a checkpoint's weights: tests/unit/maps/test_trained.py
                continue
            options = {"heads": 3} if "heads" in maps.get(name).options else {}
            weights = maps.sample_weights(name, 0, 3, 12, dtype=torch.float64, **options)
            out = getattr(maps, name)(X, weights)
            assert torch.equal(out, maps.apply(name, X, weights)), name
    with pytest.raises(AttributeError):
        maps.no_such_map  # noqa: B018


def _layers() -> list[list[str]]:
    """The floors of docs/architecture.md's "Layers" list, bottom up: the module names of each line."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("### Layers", 1)[1].split("\n#", 1)[0]
    floors = [re.findall(r"`(wordsens[\w.*]*)`", line) for line in section.splitlines() if re.match(r"\d+\. ", line)]
    assert floors and all(floors), "docs/architecture.md has no numbered list of layers under '### Layers'"
    return floors


def _floor(name: str, floors: list[list[str]]) -> int:
    """The floor of a module: that of the longest listed name containing it; ``P.*`` names every
    sub-package of P (a study's folder) and what it holds, before P itself."""
    best = (-1, -1)
    for i, units in enumerate(floors):
        for unit in units:
            if unit.endswith(".*"):
                prefix = unit[:-2]
                rest = name.removeprefix(prefix + ".").split(".")[0] if name.startswith(prefix + ".") else ""
                folder = SRC.parent.joinpath(*prefix.split("."), rest)
                if rest and folder.is_dir() and (folder / "__init__.py").exists():
                    return i
                continue
            if (name == unit or name.startswith(unit + ".")) and len(unit) > best[1]:
                best = (i, len(unit))
    assert best[0] >= 0, f"{name} is on no floor of docs/architecture.md's layers"
    return best[0]


def _direct_targets(name: str) -> set[str]:
    """The wordsens modules a module's imports name (``from P import m``: ``P.m`` where m is a module)."""
    out = set()
    for module, names in _imports(name):
        if module.startswith("wordsens"):
            targets = {f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES}
            out |= targets or {module}
    return {t for t in out if t in MODULES}


def test_imports_run_down_the_layers_docs_architecture_states():
    floors = _layers()
    assert {m for m in MODULES if _floor(m, floors) >= 0} == set(MODULES)
    up = sorted(
        f"{name} (floor {_floor(name, floors) + 1}) imports {target} (floor {_floor(target, floors) + 1})"
        for name in MODULES
        for target in _direct_targets(name)
        if _floor(target, floors) > _floor(name, floors)
    )
    assert not up, up


def test_the_layer_check_sees_an_import_that_runs_up():
    floors = [["wordsens.io"], ["wordsens.data.models"], ["wordsens.data"]]
    assert _floor("wordsens.data.models", floors) == 1 and _floor("wordsens.data.embed", floors) == 2
    assert _floor("wordsens.io", floors) < _floor("wordsens.data.store", floors)  # io importing the store: up


def test_a_face_exports_only_names_of_its_own_package():
    """A package's ``__init__`` re-exports its own modules' names, never one another package defines."""
    found = []
    for name, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        exported = set(_all(tree))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level > 1 or (node.level == 0 and node.module)):
                foreign = node.level > 1 or not (node.module or "").startswith(name)
                if foreign:
                    found += [
                        f"{name} exports {a.asname or a.name}" for a in node.names if (a.asname or a.name) in exported
                    ]
    assert not found, found


def test_the_registry_is_reached_one_way_inside_the_package():
    """Outside ``wordsens.maps``, modules reach the registry as the module ``wordsens.maps.registry``
    (``from ..maps import registry``; ``registry.get(name)``), never through the maps face's copies
    (``maps.get``) nor by importing its names one by one."""
    calls = re.compile(r"\bmaps\.(get|names|resolve|register|load_plugins|isolated)\(")
    found = []
    for name, path in MODULES.items():
        if name.startswith("wordsens.maps"):
            continue
        text = path.read_text()
        found += [f"{name}: maps.{m.group(1)}(" for m in calls.finditer(text)]
        for module, names in _imports(name):
            if module == "wordsens.maps.registry":
                found.append(f"{name}: from wordsens.maps.registry import {', '.join(names)}")
            elif module == "wordsens.maps":
                found += [f"{name}: from wordsens.maps import {n}" for n in names if n in ("get", "names", "resolve")]
    assert not found, found


MAX_FUNCTION_LINES = 80
# The functions of the package allowed over MAX_FUNCTION_LINES ("module path in src/wordsens::qualified
# name": its length when listed, a ceiling: an exception may shrink, never grow), each with its reason
LONG_FUNCTIONS = {
    # the public word-sensitivity entry point: its keyword signature and Args docstring (every option documented
    # where it is passed) around the checks, dispatch and the WSResult
    "search/estimate.py::estimate": 105,
}


def _function_lengths(tree: ast.Module) -> dict[str, int]:
    """Lines of every function and method at any depth (``Class.method``, ``outer.inner``), from its
    first decorator to its last line (``end_lineno - lineno + 1``)."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out[prefix + child.name] = (child.end_lineno or child.lineno) - first + 1
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def test_no_function_is_over_80_lines_but_the_listed_exceptions():
    sample = "@a\n@b(1)\ndef f():\n    def g():\n        pass\n    return g\nclass C:\n    def m(self):\n        pass\n"
    assert _function_lengths(ast.parse(sample)) == {"f": 6, "f.g": 2, "C.m": 2}  # decorators counted
    found = {
        f"{path.relative_to(SRC).as_posix()}::{name}": lines
        for path in sorted(SRC.rglob("*.py"))
        for name, lines in _function_lengths(ast.parse(path.read_text())).items()
    }
    long = {key: lines for key, lines in found.items() if lines > MAX_FUNCTION_LINES and key not in LONG_FUNCTIONS}
    assert not long, f"split these functions ({MAX_FUNCTION_LINES} lines at most, decorators included): {long}"
    grown = {key: (found[key], most) for key, most in LONG_FUNCTIONS.items() if found.get(key, 0) > most}
    assert not grown, f"listed long functions grew (lines now, listed): split them: {grown}"
    done = sorted(key for key in LONG_FUNCTIONS if found.get(key, 0) <= MAX_FUNCTION_LINES)
    assert not done, f"no longer over {MAX_FUNCTION_LINES} lines (or gone): remove them from LONG_FUNCTIONS: {done}"
