"""Which attention variants keep word sensitivity (the configuration's ``variants``): every registered map
with random weights (plugins included) on one grid, their word sensitivity against n in one figure; each
map's slope joins the claims table through the paper's claims (``lends_ws_rows``).
"""

from __future__ import annotations

from typing import Any

from ...compute.limits import Limits
from ...maps import registry
from ..jobs import main_store
from ..sensitivity import WS_NUMERICS, WS_RULE, Point, WSJob, capped_ns, map_problems, options_of, ws_jobs
from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside

__all__ = ["SPEC", "variant_maps"]


def variant_maps(section: dict) -> list[str]:
    """The maps of the section: for ``all``, every registered map with random weights (plugins included;
    the maps of a pre-trained checkpoint have their own study)."""
    if section["maps"] == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    return list(section["maps"])


def _points(config: dict) -> list[Point]:
    """Every map at the section's d, over its n up to the map's ``max_n``."""
    section = config["variants"]
    store = main_store(config) if section["data"] == "imdb" else None
    out = []
    for map_name in variant_maps(section):
        opts, swept = options_of(map_name, section["options"].get(map_name))
        for n in capped_ns(section["n"], map_name, section["max_n"]):
            out.append(
                Point(
                    study="variants",
                    folder="variants",
                    table="variants",
                    map=map_name,
                    data=section["data"],
                    d=section["d"],
                    n=n,
                    swept=swept,
                    options=opts,
                    position=section["position"],
                    trials=section["trials"],
                    per_job=section["trials_per_job"],
                    store=store,
                )
            )
    return out


def _jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    return ws_jobs(config, _points(config), limits, version) if config.get("variants") else []


def _problems(config: dict) -> list[str]:
    """Unknown maps or options, n beyond the stored length and d beyond the width (IMDb rows), a position
    beyond the smallest n."""
    section = config.get("variants")
    if not section:
        return []
    out: list[str] = []
    for map_name in variant_maps(section):
        out += map_problems(f"variants.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]])
    for key in ("options", "max_n"):
        for map_name in section.get(key, {}):
            if map_name not in registry.names():
                out.append(f"variants.{key}.{map_name}: unknown map; registered: {', '.join(registry.names())}")
    if section["data"] == "imdb":
        from ...data.models import model_width

        model = config["model"]
        if max(section["n"]) > model["max_length"]:
            out.append(
                f"variants.n = {max(section['n'])} > model.max_length = {model['max_length']} (IMDb rows): lower n "
                "or raise model.max_length"
            )
        width = model_width(model["name"])
        if width is not None and section["d"] > width:
            out.append(f"variants.d = {section['d']} > the model width {width} ({model['name']}): lower variants.d")
    ns = [n for m in variant_maps(section) for n in capped_ns(section["n"], m, section["max_n"])]
    if ns and section["position"] >= min(ns):
        out.append(
            f"variants.position {section['position']} is beyond the smallest n = {min(ns)} of variants: choose a "
            "position below every n"
        )
    return out


def _figures(plan: PlanView) -> list[Figure]:
    if not any(job.study == "variants" for job in plan.fit):
        return []
    configured = {job.map for job in plan.jobs if job.study == "variants"}
    return [
        Figure(
            name="variants_figure",
            study="variants",
            kind="variants",
            tables={"table": "variants"},
            outputs={
                "figures": Output(
                    stem="fig_variants",
                    caption=beside(__file__, "report", "fig_variants.rst"),
                    category="Beyond the paper",
                )
            },
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "left_out": plan.left_out(study="variants"),
            },
        )
    ]


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import variants_figure

    variants_figure(
        tables["table"], outputs["figures"], labels=params["labels"], left_out=params["left_out"], settings=settings
    )


SPEC = StudySpec(
    name="variants",
    title="which attention variants keep word sensitivity: every registered map on one grid",
    section="variants",
    active=lambda config: bool(config.get("variants")),
    schema=schema_beside(__file__),
    jobs=_jobs,
    rules=(WS_RULE,),
    numerics=WS_NUMERICS,
    owns="variants",
    figures=_figures,
    draw=_draw,
    problems=_problems,
    lends_ws_rows=True,
    coefficients={"variants_figure": (3.0, None)},
)
