"""Which position of a review is most sensitive (the configuration's ``positions``): every position of a
few IMDb reviews searched, one profile per review and map (the same reviews for every map).
"""

from __future__ import annotations

from typing import Any

from ...compute.limits import Limits
from ...data.models import model_width
from ...maps import registry
from ..jobs import main_store
from ..sensitivity import WS_NUMERICS, WS_RULE, Point, WSJob, map_problems, options_of, ws_jobs
from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside

__all__ = ["SPEC"]


def _points(config: dict) -> list[Point]:
    """Per map, every position searched (a profile per review, ``reviews`` of them in one job), on the
    same reviews for every map."""
    section = config["positions"]
    out = []
    for map_name in section["maps"]:
        opts, swept = options_of(map_name, section["options"].get(map_name))
        out.append(
            Point(
                study="positions",
                folder="positions",
                table="positions",
                map=map_name,
                data="imdb",
                d=section["d"],
                n=section["n"],
                swept=swept,
                options=opts,
                position="all",
                trials=section["reviews"],
                per_job=section["reviews"],
                store=main_store(config),
                profile=True,
                shared_samples=True,
            )
        )
    return out


def _jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    return ws_jobs(config, _points(config), limits, version) if config.get("positions") else []


def _problems(config: dict) -> list[str]:
    section = config.get("positions")
    if not section:
        return []
    out: list[str] = []
    for map_name in section["maps"]:
        out += map_problems(f"positions.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]])
    for map_name in section.get("options", {}):
        if map_name not in registry.names():
            out.append(f"positions.options.{map_name}: unknown map; registered: {', '.join(registry.names())}")
    model = config["model"]
    if section["n"] > model["max_length"]:
        out.append(
            f"positions.n = {section['n']} > model.max_length = {model['max_length']} (IMDb rows): lower n or raise "
            "model.max_length"
        )
    width = model_width(model["name"])
    if width is not None and section["d"] > width:
        out.append(f"positions.d = {section['d']} > the model width {width} ({model['name']}): lower positions.d")
    return out


def _figures(plan: PlanView) -> list[Figure]:
    if not any(job.study == "positions" for job in plan.fit):
        return []
    configured = {job.map for job in plan.jobs if job.study == "positions"}
    return [
        Figure(
            name="positions_figure",
            study="positions",
            kind="positions",
            tables={"table": "positions"},
            outputs={
                "figures": Output(
                    stem="fig_positions",
                    caption=beside(__file__, "report", "fig_positions.rst"),
                    category="Beyond the paper",
                )
            },
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "left_out": plan.left_out(study="positions"),
            },
        )
    ]


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import positions_figure

    positions_figure(
        tables["table"], outputs["figures"], labels=params["labels"], left_out=params["left_out"], settings=settings
    )


SPEC = StudySpec(
    name="positions",
    title="the word sensitivity at every position of a review",
    section="positions",
    active=lambda config: bool(config.get("positions")),
    schema=schema_beside(__file__),
    jobs=_jobs,
    rules=(WS_RULE,),
    numerics=WS_NUMERICS,
    owns="positions",
    figures=_figures,
    draw=_draw,
    problems=_problems,
    coefficients={"positions_figure": (4.3, None)},
)
