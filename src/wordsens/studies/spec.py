"""A registered study, as data (``StudySpec``, the counterpart of ``wordsens.maps.spec.MapSpec``): its
configuration section, the jobs it plans, the figures it draws, the claims it checks. Everything else loops
over the registry; no module outside a study's folder names a study. Torch-free; drawing, claims and
commands are callables or ``"module:attribute"`` strings (``wordsens.studies.registry.bound``), imported where they run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..compute.limits import Limits
from .jobs import Job, Store


class PlanView(Protocol):
    """What a study's figures read of the plan (``wordsens.pipeline.Grid``): the configuration, every job,
    those that fit, and the grid points left out."""

    config: dict
    jobs: list[Job]
    fit: list[Job]

    def left_out(self, **wildcards: Any) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, kw_only=True)
class Output:
    """A file a figure rule writes: a figure ``stem`` below ``figures/`` in every format of ``plots.formats``,
    or (``text``) the file ``stem`` below ``tables/``; each an entry of the report with its ``caption`` (a
    path) in ``category``."""

    stem: str
    caption: str
    category: str
    text: bool = False


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure rule of a study: its ``name`` (the rule's, unique in the run), the tables it reads (input
    name -> table stem), its ``outputs`` (name -> ``Output``, or a figure's stem with this figure's
    ``caption`` and ``category``), the plain values its drawing needs (``params``: a change re-draws it) and
    the calibration ``family`` of its wall time (default: ``<study>_figure``)."""

    name: str
    study: str
    tables: Mapping[str, str]
    outputs: Mapping[str, Output | str]
    params: Mapping[str, Any] = field(default_factory=dict)
    caption: str = ""
    category: str = "Beyond the paper"
    family: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a figure's name is an identifier (its rule's), got {self.name!r}")
        if not self.family:
            object.__setattr__(self, "family", f"{self.study}_figure")
        given = {
            name: out if isinstance(out, Output) else Output(stem=out, caption=self.caption, category=self.category)
            for name, out in self.outputs.items()
        }
        object.__setattr__(self, "outputs", given)


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What a study reads beyond its embedding stores, for the checks before a run: the review pool
    (``pool``) and models by the key that names them (``encoders``: each must be local, packaged or in reach;
    ``others``: key -> (name, the fix where it is out of reach), e.g. a causal language model)."""

    pool: bool = False
    encoders: Mapping[str, str] = field(default_factory=dict)
    others: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Step:
    """A step of a study's own rules (``StudySpec.rules_file``) as the planner schedules it: its rule
    ``name``, calibration ``family``, the steps it waits for (``after``: names of other steps, or ``pool``,
    ``model:<name>``), the GPU memory it declares, its host memory and device; ``benchmarked``: its rule
    writes a benchmark file (which the calibration reads); ``figure``: it draws from tables."""

    name: str
    family: str
    after: tuple[str, ...] = ()
    gpu_mem_mb: int = 0
    mem_mb: int = 0
    device: str = "cpu"
    benchmarked: bool = False
    figure: bool = False


# A callable, or "module:attribute" naming one (imported where it runs).
Binding = str | Callable[..., Any]


def _nothing(*_: Any) -> list[Any]:
    return []


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """One registered study. A study names what it has; the rest keeps its default."""

    # a lower-case identifier, and what the study asks, in a line
    name: str
    title: str
    # its key of the configuration (None: it has none) and that section's JSON schema (a mapping; the
    # workflow's schema file holds the keys every study shares)
    section: str | None = None
    schema: Mapping[str, Any] | None = None
    # whether a configuration runs it (None: its section is set and not null)
    active: Callable[[dict], bool] | None = None
    # its jobs for a configuration, planned under the limits with its numerics version, and their kinds
    # (``Job`` subclasses; the workflow makes a rule of each kind, a kind several studies share included)
    jobs: Callable[[dict, Limits, str], Sequence[Job]] | None = None
    kinds: tuple[type[Job], ...] = ()
    # (family, version) of its numerics, part of its jobs' params and recorded in its rows: bump it when a
    # change of the numerics changes its results (the WS studies share the family ``ws``)
    numerics: tuple[str, str] | None = None
    # a regular expression of the stems of the tables its jobs write (default: its section's name)
    owns: str = ""
    # its figure rules for a plan, and the drawing of one: draw(tables, outputs, params, settings) with
    # the figure's tables by name, its output files by name, its params and the plot settings (dpi, stamp)
    figures: Callable[[PlanView], list[Figure]] = _nothing
    draw: Binding | None = None
    # its rows of the claims table: claims(rows, tables) with ``wordsens.claims.rows.Rows`` and its own
    # tables by stem; the claims it defines beyond the shared ones (``wordsens.claims.Claim``, or a binding)
    claims: Binding | None = None
    definitions: Sequence[Any] | str = ()
    # its rows are word-sensitivity rows of maps by name: the paper's claims read them for a map without a
    # table of the paper's grids
    lends_ws_rows: bool = False
    # the checks of its section (a line per problem naming the key and the fix), run after ``normalise``
    # made the section canonical in place (returning the problems that leaves)
    problems: Callable[[dict], list[str]] = _nothing
    normalise: Callable[[dict], list[str]] = _nothing
    # the embedding stores it reads beyond the main one, and the pool and models it reads
    stores: Callable[[dict], list[Store]] = _nothing
    needs: Callable[[dict], Needs] = lambda config: Needs()
    # a Snakemake file of rules of its own, the steps of those rules as the planner schedules them, and the
    # rules whose outputs the workflow's ``rule all`` asks for
    rules_file: str | None = None
    steps: Callable[[dict, Limits], list[Step]] = _nothing
    targets: Callable[[dict], list[str]] = _nothing
    # the built-in calibration of its figures' and steps' families: family -> (fixed s, scale or None)
    coefficients: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)
    # the ``wordsens`` subcommands it adds: name -> a module (or its name) with add_parser(sub, maps), run(args)
    commands: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"study names are lower-case identifiers, got {self.name!r}")
        if self.jobs is not None and not self.kinds:
            raise ValueError(f"study {self.name!r} plans jobs: give their kinds")
        for kind in self.kinds:
            unset = [name for name in ("rule", "output") if not isinstance(getattr(kind, name, None), str)]
            if unset or kind.run is Job.run:
                raise ValueError(
                    f"study {self.name!r}: the kind of job {kind.__name__} needs a rule and an output pattern "
                    f"(class attributes; missing {unset}) and its own run(self, files) returning its rows"
                )
        if not self.owns and self.section:
            object.__setattr__(self, "owns", re.escape(self.section))
        if self.numerics is None and self.jobs is not None:
            object.__setattr__(self, "numerics", (self.name, f"{self.name}-1"))
        if self.owns:
            re.compile(self.owns)

    def runs(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` runs the study (``active``, else its section is set)."""
        if self.active is not None:
            return self.active(dict(config))
        return self.section is not None and bool(config.get(self.section))

    def owns_table(self, stem: str) -> bool:
        """Whether the table ``stem`` is one of this study's (``owns``)."""
        return bool(self.owns) and re.fullmatch(self.owns, stem) is not None

    def checked(self) -> bool:
        """Whether the claims read its tables (it has claims, or lends its rows to the paper's)."""
        return self.claims is not None or self.lends_ws_rows


def schema_beside(module_file: str, name: str = "schema.yaml") -> dict[str, Any]:
    """The JSON schema of a study's section, from the YAML file ``name`` beside its module."""
    import yaml

    with open(Path(module_file).with_name(name)) as fh:
        return dict(yaml.safe_load(fh))


def beside(module_file: str, *parts: str) -> str:
    """The path of a file of a study's folder (a report caption, a rules file), for the workflow."""
    return str(Path(module_file).resolve().parent.joinpath(*parts))
