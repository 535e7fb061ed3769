"""A registered study, as data: ``StudySpec``, the study's counterpart of ``wordsens.maps.spec.MapSpec``.

A study is one folder below ``wordsens/studies/`` (or a plugin module) and one registration. Its spec
carries everything the rest of wordsens needs to know about it: its configuration section and that
section's JSON schema, its job builder (``jobs``: typed jobs with their estimates), the rules of its
kinds of jobs and their bodies (``rules``), the figures it draws from its tables (``figures``, drawn
by ``draw``), its claims, its numerics version, the embedding stores and models it reads, the checks
of its section, the steps of rules of its own (``rules_file``, ``steps``, ``targets``) and the
built-in seconds of its steps for the planner. The planner, the workflow's rules and targets, the
calibration, the configuration checks and the claims table loop over the registry
(``wordsens.studies.registry``); no module outside a study's folder names a study.

Torch-free: the planner reads specs without it; a spec's bodies (jobs' rows, figures, claims) import
what they need when they run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..compute.limits import Limits
from .jobs import Job, JobRule, Store

__all__ = ["Command", "Figure", "Needs", "Output", "PlanView", "Step", "StudySpec", "beside", "schema_beside"]


class PlanView(Protocol):
    """What a study's figures read of the plan (``wordsens.pipeline.Grid``): the configuration, every
    job, those that fit, and the grid points left out."""

    config: dict
    jobs: list[Job]
    fit: list[Job]

    def left_out(self, **wildcards: Any) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, kw_only=True)
class Output:
    """A file a figure rule writes: a figure ``stem`` below ``figures/`` in every format of
    ``plots.formats``, or (``text``) the file ``stem`` below ``tables/``; each an entry of the report
    with its ``caption`` (a file of ``workflow/report/``, or a path) in ``category``."""

    stem: str
    caption: str
    category: str
    text: bool = False


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure rule of a study: its ``name`` (the rule's, unique in the run), the drawing of the study
    it runs (``kind``, the first argument of ``StudySpec.draw``), the tables it reads (input name ->
    table stem), its ``outputs`` (name -> ``Output``) and ``params`` (plain values the drawing needs;
    a change re-draws it), and the calibration ``family`` of its wall time."""

    name: str
    study: str
    kind: str
    tables: Mapping[str, str]
    outputs: Mapping[str, Output]
    params: Mapping[str, Any] = field(default_factory=dict)
    family: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"a figure's name is an identifier (its rule's), got {self.name!r}")
        if not self.family:
            object.__setattr__(self, "family", f"{self.study}_figure")


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What a study reads beyond its embedding stores, for the checks before a run: the review pool
    (``pool``) and models by the key that names them (``encoders``: each must be local, packaged or in
    reach; ``others``: key -> (name, the fix where it is out of reach), e.g. a causal language model)."""

    pool: bool = False
    encoders: Mapping[str, str] = field(default_factory=dict)
    others: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Step:
    """A step of a study's own rules (``StudySpec.rules_file``) as the planner schedules it: its rule
    ``name``, calibration ``family``, the steps it waits for (``after``: names of other steps, or
    ``pool``, ``model:<name>``), the GPU memory it declares, its host memory and device; ``benchmarked``:
    its rule writes a benchmark file (``benchmarks/<rule>/``, which the calibration reads); ``figure``:
    it draws from tables (the plan groups it with the figures)."""

    name: str
    family: str
    after: tuple[str, ...] = ()
    gpu_mem_mb: int = 0
    mem_mb: int = 0
    device: str = "cpu"
    benchmarked: bool = False
    figure: bool = False


@dataclass(frozen=True, kw_only=True)
class Command:
    """A subcommand of ``wordsens`` that a study adds: its ``name``, ``add_parser(subparsers, maps)`` (the
    registered maps its ``--map`` offers) and ``run(args)``, the text it prints (``wordsens.cli``)."""

    name: str
    add_parser: Callable[[Any, Sequence[str]], None]
    run: Callable[[Any], str]


def _no_stores(config: dict) -> list[Store]:
    return []


def _no_needs(config: dict) -> Needs:
    return Needs()


def _no_steps(config: dict, limits: Limits) -> list[Step]:
    return []


def _no_problems(config: dict) -> list[str]:
    return []


def _no_figures(plan: PlanView) -> list[Figure]:
    return []


def _no_targets(config: dict) -> list[str]:
    return []


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """One registered study.

    ``name``: a lower-case identifier; ``title``: what it asks, in a line. ``section``: its key of the
    configuration (None: it has none), with that section's JSON ``schema`` (a mapping; the workflow's
    schema file holds the keys every study shares); ``active(config)``: whether the configuration runs
    it. ``jobs(config, limits, version)``: its jobs (``wordsens.studies.jobs.Job``), planned under
    ``limits`` with its numerics ``version``; ``rules``: the rules of its kinds of jobs, bodies included
    (a kind several studies share is listed by each). ``numerics``: (family, version): the version of its
    numerics, part of its jobs' params and recorded in its rows (bump it when a change of the numerics
    changes its results); several studies may share a family (the word-sensitivity studies share
    ``ws``). ``owns``: a regular expression of the stems of the tables its jobs write (the claims read
    them by it). ``figures(plan)``: its figure rules; ``draw(kind, tables, outputs, params, settings)``
    draws one. ``claims(rows, tables)``: adds its rows to the claims table (``rows``:
    ``wordsens.claims.rows.Rows``) from the run's tables by stem; ``definitions()``: the claims it defines
    beyond the shared ones (``wordsens.claims.stats.Claim``; the catalogue ``wordsens.claims.catalogue``).
    ``stores(config)``: the embedding stores it reads beyond the main one; ``needs(config)``: the pool and
    models it reads; ``problems(config)``: what its section cannot run (one line per problem, naming the key
    and the fix); ``normalise(config)``: its section made canonical in place before those checks (e.g. null
    entries dropped), returning the problems that leaves. ``rules_file``: a Snakemake file of its own,
    included by the workflow, whose rules ``steps(config, limits)`` describes for the planner and whose
    outputs of ``targets(config)`` (rule names) the workflow's ``rule all`` asks for. ``coefficients``: the
    built-in calibration (``wordsens.compute.timing``) of its families (fixed seconds, scale of the model's
    seconds or None). ``commands``: the ``wordsens`` subcommands it adds.
    """

    name: str
    title: str
    section: str | None
    active: Callable[[dict], bool]
    schema: Mapping[str, Any] | None = None
    jobs: Callable[[dict, Limits, str], Sequence[Job]] | None = None
    rules: tuple[JobRule, ...] = ()
    numerics: tuple[str, str] | None = None
    owns: str = ""
    figures: Callable[[PlanView], list[Figure]] = _no_figures
    draw: Callable[..., None] | None = None
    claims: Callable[[Any, Mapping[str, Any]], None] | None = None
    definitions: Callable[[], Sequence[Any]] | None = None
    stores: Callable[[dict], list[Store]] = _no_stores
    needs: Callable[[dict], Needs] = _no_needs
    problems: Callable[[dict], list[str]] = _no_problems
    normalise: Callable[[dict], list[str]] = _no_problems
    rules_file: str | None = None
    steps: Callable[[dict, Limits], list[Step]] = _no_steps
    targets: Callable[[dict], list[str]] = _no_targets
    coefficients: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)
    commands: tuple[Command, ...] = ()
    # its tables hold word-sensitivity rows of maps by name (``map``, ``lower``): the paper's claims read
    # them for a map that has no table of the paper's grids
    lends_ws_rows: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.name.islower():
            raise ValueError(f"study names are lower-case identifiers, got {self.name!r}")
        if self.jobs is not None and (not self.rules or self.numerics is None):
            raise ValueError(f"study {self.name!r} plans jobs: give the rules that run them and its numerics")
        if self.owns:
            re.compile(self.owns)

    def owns_table(self, stem: str) -> bool:
        """Whether the table ``stem`` is one of this study's (``owns``)."""
        return bool(self.owns) and re.fullmatch(self.owns, stem) is not None

    def rule_names(self) -> Sequence[str]:
        return [rule.name for rule in self.rules]


def schema_beside(module_file: str, name: str = "schema.yaml") -> dict[str, Any]:
    """The JSON schema of a study's section, from the YAML file ``name`` beside its module (a study's
    folder keeps its schema there)."""
    from pathlib import Path

    import yaml

    with open(Path(module_file).with_name(name)) as fh:
        return dict(yaml.safe_load(fh))


def beside(module_file: str, *parts: str) -> str:
    """The path of a file of a study's folder (a report caption, a rules file), for the workflow."""
    from pathlib import Path

    return str(Path(module_file).resolve().parent.joinpath(*parts))
