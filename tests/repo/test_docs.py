"""The documentation: the README fits on a screen and sets up what CI sets up, docs/architecture.md
names every module, links resolve, module names and CLI options in the docs exist."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from wordsens.cli import main

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "wordsens"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]


# Pages that other changes add: links to them may point nowhere until they land. Remove a name
# once its page is in docs/.
def _modules() -> list[str]:
    """Every module of the package by its dotted name (a package by its ``__init__``)."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _named(name: str, text: str) -> bool:
    """``name`` occurs as a whole dotted name (``wordsens.search`` is not named by ``wordsens.search.rf``)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\.?\w)", text) is not None


def test_architecture_names_every_module():
    text = (DOCS / "architecture.md").read_text()
    missing = [name for name in _modules() if not _named(name, text)]
    assert not missing, f"docs/architecture.md does not name these modules: {missing}"


def test_the_readme_fits_on_a_screen():
    lines = len(README.read_text().splitlines())
    assert lines <= 150, f"README.md has {lines} lines: move reference material to docs/"


# Numbers that change with every change of the code: how many tests, how many passed or were skipped, and
# how long something took. They live in docs/testing.md (the suite) and docs/benchmarks.md (speeds), each
# with its date, never in the README.
_VOLATILE = {
    "a test count": r"\b\d[\d,]*\s+(?:tests|test modules)\b",
    "a test outcome": r"\b\d[\d,]*\s+(?:passed|failed|skipped|deselected)\b",
    "a duration": r"\b\d+(?:[.:]\d+)?\s*(?:min|minutes|s|sec|seconds|h|hours)\b",
    "a speed-up": r"\b\d+(?:\.\d+)?\s*(?:x|times)\s+(?:faster|slower)\b",
}


def test_the_readme_carries_no_test_counts_or_times_and_points_to_them():
    text = re.sub(r"^ {4}.*$", "", README.read_text(), flags=re.M)  # not in code blocks
    found = [f"{what}: {m.group(0)!r}" for what, pattern in _VOLATILE.items() for m in re.finditer(pattern, text)]
    assert not found, f"README.md carries numbers that change with the code (move them to docs/testing.md): {found}"
    assert "docs/testing.md#how-long-it-takes" in text


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^ {4}.*$", "", page.read_text(), flags=re.M)  # not in code blocks
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", page.read_text())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists():
            broken.append(link)
            continue
        if anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(link)
    assert not broken, f"{page.relative_to(ROOT)}: links to nothing: {broken}"


def _installs(lines: list[str]) -> list[list[str]]:
    """The arguments of each ``pip install`` command (options such as ``--quiet`` left out)."""
    out = []
    for line in lines:
        words = shlex.split(line.split("#")[0]) if not line.lstrip().startswith("#") else []
        if "pip" in words and "install" in words:
            args = words[words.index("install") + 1 :]
            out.append([a for a in args if not a.startswith("--")])
    return out


def test_the_readme_sets_up_what_ci_installs():
    section = README.read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    readme = _installs([line for line in section.splitlines() if line.startswith("    ")])
    ci = _installs((ROOT / ".ci" / "run").read_text().splitlines())
    assert readme == ci == [["torch==2.13.0"], ["-e", ".[test]"]], (readme, ci)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers(page):
    """Readers cannot see the project's issues: cite the paper's figures or describe the thing."""
    found = re.findall(r"\b(?:issues?|PR|pull request)\s*#?\d+|(?<![\w&])#\d+\b", page.read_text(), re.I)
    assert not found, f"{page.relative_to(ROOT)} cites {found}"


def _names(source: Path) -> set[str]:
    """What a module defines at its top level (functions, classes, assignments) and exports (``__all__``)."""
    out: set[str] = set()
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                out |= set(ast.literal_eval(node.value))
    return out


def _resolves(dotted: str) -> bool:
    """``dotted`` is a module of the package, or a module and a name it defines or exports."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = SRC.parent.joinpath(*parts[:cut])
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if source.is_file():
            rest = parts[cut:]
            return not rest or (len(rest) == 1 and rest[0] in _names(source))
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_and_name_the_docs_mention_exists(page):
    names = set(re.findall(r"(?<![\w/.-])wordsens(?:\.[A-Za-z_]\w*)+", page.read_text()))
    stale = sorted(name for name in names if not name.endswith((".yaml", ".md")) and not _resolves(name))
    assert not stale, f"{page.relative_to(ROOT)} names what the package does not have: {stale}"


def _help(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*args, "--help"])
    return out.getvalue()


def test_cli_md_describes_every_subcommand_and_option():
    text = (DOCS / "cli.md").read_text()
    subcommands = re.search(r"\{([\w,-]+)\}", _help()).group(1).split(",")
    assert subcommands, "no subcommand found in wordsens --help"
    missing = [f"wordsens {sub}" for sub in subcommands if f"wordsens {sub}" not in text]
    for sub in subcommands:
        options = set(re.findall(r"(?<![\w-])--[A-Za-z][\w-]*", _help(sub))) - {"--help"}
        missing += [f"wordsens {sub} {option}" for option in sorted(options) if f"`{option}" not in text]
    assert not missing, f"docs/cli.md does not describe: {missing}"


def test_testing_page_lists_every_test_module():
    """By its path below tests/ (``unit/claims/test_claims.py``), as the page's tables name them."""
    text = (DOCS / "testing.md").read_text()
    modules = [path.relative_to(ROOT / "tests").as_posix() for path in sorted((ROOT / "tests").rglob("test_*.py"))]
    missing = [module for module in modules if f"`{module}`" not in text]
    assert not missing, f"docs/testing.md does not list these test modules: {missing}"


@pytest.mark.parametrize("left_out", [[], [{"point": "n = 4096", "needs_gb": 3.5}]])
def test_report_captions_render_without_docutils_messages(left_out):
    """Every caption of the report (each study's figures' own, wordsens/studies/<study>/report, and
    workflow/report's), rendered as ``snakemake --report`` renders it (Jinja with the run's config and the
    figure rule's params, then docutils), gives no docutils warning or error (``|...|`` outside a literal
    is an RST substitution, for example). The demo's config: every study on, every figure declared."""
    import types

    import jinja2
    import yaml
    from docutils.core import publish_parts
    from docutils.utils import SystemMessage

    from wordsens import compute, pipeline
    from wordsens.seeds import canonical

    demo = yaml.safe_load((ROOT / "config" / "demo.yaml").read_text())
    config = pipeline.validate(pipeline.merge(yaml.safe_load((ROOT / "config.yaml").read_text()), demo))
    grid = pipeline.Grid(config, limits=compute.Limits(cpu=16 * 1024**3, gpu=None))
    rendered: dict[Path, list[dict]] = {}
    for figure in grid.figures():
        params = {**canonical(dict(figure.params)), "left_out": left_out}
        for out in figure.outputs.values():
            rendered.setdefault(Path(out.caption).resolve(), []).append(params)
    captions = sorted(
        {*(ROOT / "src" / "wordsens" / "studies").glob("*/report/*.rst"), *(ROOT / "workflow" / "report").glob("*.rst")}
    )
    for caption in captions:  # the captions of rules outside the figures (claims, the probes' own rules)
        rendered.setdefault(caption.resolve(), [{"left_out": left_out}])
    assert len(rendered) == len(captions) > 15, sorted(set(rendered) - {c.resolve() for c in captions})
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    settings = {"report_level": 2, "halt_level": 2, "warning_stream": False}
    failed = {}
    for caption, figures in rendered.items():
        for params in figures:
            snakemake = types.SimpleNamespace(config=config, params=types.SimpleNamespace(figure=params, **params))
            text = env.from_string(caption.read_text()).render(snakemake=snakemake, categories={}, files={})
            try:
                publish_parts(text, writer="html", settings_overrides=settings)
            except SystemMessage as err:
                failed[f"{caption.parent.parent.name}/{caption.name}"] = str(err)
    assert not failed, failed
