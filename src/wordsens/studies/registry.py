"""The study registry: one ``StudySpec`` per study. A built-in study (a module of ``BUILTIN``) defines ``SPEC``
in its ``__init__``, imported on first use; a plugin (``plugins:``, ``WORDSENS_PLUGINS``) calls
``register(StudySpec(...))``. Torch-free.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from ..compute import placement, timing
from ..maps import registry as maps_registry
from .jobs import Job
from .spec import StudySpec

# The built-in studies, by module: the paper's experiments (Figures 2-3, Figures 4-5, Figures 1 and 3's
# probes of a pre-trained encoder), then the studies beyond the paper.
BUILTIN = (
    "wordsens.studies.ws",
    "wordsens.studies.gen",
    "wordsens.studies.probes",
    "wordsens.studies.variants",
    "wordsens.studies.long_context",
    "wordsens.studies.positions",
    "wordsens.studies.trained",
    "wordsens.studies.swaps",
    "wordsens.studies.gen_words",
)

_REGISTRY: dict[str, StudySpec] = {}
_builtins_loaded = False


def register(spec: StudySpec, *, replace: bool = False) -> StudySpec:
    """Add ``spec`` to the registry (``replace=True`` to redefine a name); returns it. Its built-in
    calibration (``StudySpec.coefficients`` and its kinds') joins the planner's (``wordsens.compute.timing``),
    its kinds' GPU rates the placement's (``wordsens.compute.placement``)."""
    _load_builtins()
    if spec.name in _REGISTRY and not replace and _REGISTRY[spec.name] != spec:
        raise ValueError(f"a study named {spec.name!r} is already registered")
    sections = {other.section: other.name for other in _REGISTRY.values() if other.name != spec.name}
    if spec.section is not None and spec.section in sections:
        raise ValueError(
            f"study {spec.name!r}: the configuration section {spec.section!r} is {sections[spec.section]}'s"
        )
    _add(spec)
    return spec


def _add(spec: StudySpec) -> None:
    _REGISTRY[spec.name] = spec
    for coefficients in (spec.coefficients, *(kind.coefficients for kind in spec.kinds)):
        for family, (fixed, scale) in coefficients.items():
            timing.add_builtin(family, fixed, scale)
    for kind in spec.kinds:
        placement.add_rates(kind.gpu_rates)
        if not any(family.startswith(f"{kind.rule}:") for family in kind.coefficients):
            # a kind without a time model of its own: priced as a step without a cost model
            timing.add_builtin(f"{kind.rule}:*", timing.BUILTIN["rule:*"].fixed, None)


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for module in BUILTIN:
        _add(importlib.import_module(module).SPEC)


def bound(binding: Any) -> Any:
    """What a binding of a ``StudySpec`` names: a ``"module:attribute"`` string imported, anything else itself."""
    return maps_registry.resolve(binding) if isinstance(binding, str) else binding


def names() -> tuple[str, ...]:
    """Every registered study: the built-in ones in ``BUILTIN``'s order, then the plugins' as registered."""
    _load_builtins()
    maps_registry.load_plugins()
    return tuple(_REGISTRY)


def specs() -> tuple[StudySpec, ...]:
    """The spec of every registered study, in ``names()``' order."""
    return tuple(_REGISTRY[name] for name in names())


def get(name: str) -> StudySpec:
    """The spec of study ``name``; ``ValueError`` naming the registered studies otherwise."""
    known = names()
    if name not in _REGISTRY:
        raise ValueError(f"unknown study {name!r}; registered: {', '.join(known)}")
    return _REGISTRY[name]


def owner(table: str) -> StudySpec | None:
    """The study whose jobs write the table ``table`` (a stem below ``tables/``), or None."""
    return next((spec for spec in specs() if spec.owns_table(table)), None)


def job_kinds() -> dict[str, type[Job]]:
    """Every kind of job of the registered studies, by its rule's name (a kind shared by several studies
    once); two different kinds of one rule are an error."""
    out: dict[str, type[Job]] = {}
    for spec in specs():
        for kind in spec.kinds:
            if out.setdefault(kind.rule, kind) is not kind:
                raise ValueError(f"study {spec.name!r} defines a job rule {kind.rule!r} another study defines too")
    return out


def job_kind(rule: str) -> type[Job]:
    """The kind of job run by the rule ``rule`` (a job's script finds its kind by its rule's name)."""
    kinds = job_kinds()
    if rule not in kinds:
        raise ValueError(f"no registered study runs jobs of a rule {rule!r}; known: {', '.join(kinds)}")
    return kinds[rule]


def numerics_versions() -> dict[str, str]:
    """The numerics version of every family of the registered studies (``StudySpec.numerics``)."""
    out: dict[str, str] = {}
    for spec in specs():
        if spec.numerics is not None:
            family, version = spec.numerics
            if out.setdefault(family, version) != version:
                raise ValueError(f"study {spec.name!r} gives family {family!r} another numerics version")
    return out


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """A block after which the registry holds the studies it held before it (and the maps: plugins register
    both), so that a test's or a plugin's studies do not outlive it."""
    _load_builtins()
    saved = dict(_REGISTRY)
    saved_timing = timing.builtin_snapshot()
    saved_rates = placement.rates_snapshot()
    try:
        with maps_registry.isolated():
            yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)
        timing.restore_builtin(saved_timing)
        placement.restore_rates(saved_rates)
