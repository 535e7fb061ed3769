"""What the word-sensitivity studies of a section of maps share (``variants``, ``positions``,
``long_context``): the jobs of one map, the problems of the section's maps, the study's one figure rule
and its registration. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...maps import registry
from ..checks import map_problems, unknown_maps
from ..sensitivity import WS_NUMERICS, WSJob, options_of
from ..spec import Figure, PlanView, StudySpec, beside, schema_beside


def curve_jobs(study: str, section: Mapping[str, Any], map_name: str, ns: Iterable[int], **fields: Any) -> list[WSJob]:
    """A job of ``map_name`` per n of ``ns`` at the section's d, the map's options split into fixed and swept
    ones (``options_of``); ``fields``: the rest of each job (default position and trials: the section's)."""
    options, swept = options_of(map_name, section["options"].get(map_name))
    if "trials" not in fields:
        fields.update(position=section["position"], trials=tuple(range(section["trials"])))
    return [WSJob(study=study, map=map_name, d=section["d"], n=n, swept=swept, options=options, **fields) for n in ns]


def maps_problems(study: str, section: Mapping[str, Any], maps: Iterable[str], *keys: str) -> list[str]:
    """Unknown maps or options of ``maps`` at the section's d, then the unknown maps the section's
    ``options`` and each of ``keys`` (a map -> value mapping: ``max_n``) name."""
    out = [
        problem
        for map_name in maps
        for problem in map_problems(
            f"{study}.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]]
        )
    ]
    return out + [problem for key in ("options", *keys) for problem in unknown_maps(f"{study}.{key}", section[key])]


def map_figures(
    plan: PlanView, study: str, module_file: str, tables: Mapping[str, str] | None = None, **params: Any
) -> list[Figure]:
    """The study's figure rule (``<study>_figure``, files ``fig_<study>``) where a job of it fits: its tables
    (default: the study's one table as ``table``), the labels of its configured maps in the registry's
    order, ``params`` and the points left out."""
    if not any(job.study == study for job in plan.fit):
        return []
    configured = {job.map for job in plan.jobs if job.study == study}
    return [
        Figure(
            name=f"{study}_figure",
            study=study,
            tables=tables or {"table": study},
            outputs={"figures": f"fig_{study}"},
            caption=beside(module_file, "report", f"fig_{study}.rst"),
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                **params,
                "left_out": plan.left_out(study=study),
            },
        )
    ]


def map_study(
    name: str,
    module_file: str,
    *,
    jobs: Callable[..., Sequence[WSJob]],
    problems: Callable[[dict], list[str]],
    figure_seconds: float,
    **more: Any,
) -> StudySpec:
    """The registration of such a study: its section and schema, WS jobs, figure (default: ``map_figures``'
    rule, drawn by ``<name>.figure:draw``; ``figure_seconds`` its built-in calibration), and ``problems`` where
    the section is set."""
    more.setdefault("figures", lambda plan: map_figures(plan, name, module_file))
    return StudySpec(
        name=name,
        section=name,
        schema=schema_beside(module_file),
        jobs=jobs,
        kinds=(WSJob,),
        numerics=WS_NUMERICS,
        draw=f"wordsens.studies.{name}.figure:draw",
        problems=lambda config: problems(config) if config.get(name) else [],
        coefficients={f"{name}_figure": (figure_seconds, None)},
        **more,
    )
