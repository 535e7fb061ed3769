"""Word sensitivity at long contexts (the configuration's ``long_context``): up to n = 4096 on synthetic
rows and up to the encoder's positions on IMDb (a second embedding store of long reviews), each curve with
its fitted log-log slope beside the RF law's over the same n.
"""

from __future__ import annotations

from typing import Any

from ...compute.limits import Limits
from ...data.models import model_width
from ...data.reviews import tokens_to_fill
from ...maps import registry
from ..jobs import Store
from ..sensitivity import WS_NUMERICS, WS_RULE, Point, WSJob, capped_ns, map_problems, options_of, ws_jobs
from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside

__all__ = ["SPEC", "long_context_ns", "store"]


def store(config: dict) -> Store:
    """The store of long IMDb reviews: a pool of its own (reviews of at least max_length - 2 WordPiece
    tokens, so that [CLS], the words and [SEP] fill every position: no [PAD] row at any n), embedded at
    ``long_context.max_length``."""
    section = config["long_context"]
    return Store(
        name="long",
        max_length=int(section["max_length"]),
        pool_size=int(section["pool_size"]),
        section="long_context",
        min_tokens=tokens_to_fill(int(section["max_length"])),
    )


def long_context_ns(section: dict, map_name: str, data: str) -> list[int]:
    """Context lengths of one curve: the grid's n up to the map's ``max_n``; on IMDb also up to
    ``max_length`` (the encoder's position limit), and ``max_length`` itself."""
    ns = capped_ns(section["n"], map_name, section["max_n"])
    if data != "imdb":
        return ns
    limit = section["max_length"]
    cap = section["max_n"].get(map_name)
    return sorted({n for n in ns if n <= limit} | ({limit} if cap is None or cap >= limit else set()))


def _points(config: dict) -> list[Point]:
    """A curve per data source (results folder and table ``long_<data>``) and map, over its n."""
    section = config["long_context"]
    out = []
    for data in section["data"]:
        for map_name in section["maps"]:
            opts, swept = options_of(map_name, section["options"].get(map_name))
            for n in long_context_ns(section, map_name, data):
                out.append(
                    Point(
                        study="long_context",
                        folder=f"long_{data}",
                        table=f"long_{data}",
                        map=map_name,
                        data=data,
                        d=section["d"],
                        n=n,
                        swept=swept,
                        options=opts,
                        position=section["position"],
                        trials=section["trials"],
                        per_job=section["trials_per_job"],
                        store=store(config) if data == "imdb" else None,
                    )
                )
    return out


def _jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    return ws_jobs(config, _points(config), limits, version) if config.get("long_context") else []


def _stores(config: dict) -> list[Store]:
    return [store(config)] if config.get("long_context") else []


def _problems(config: dict) -> list[str]:
    section = config.get("long_context")
    if not section:
        return []
    out: list[str] = []
    for map_name in section["maps"]:
        out += map_problems(
            f"long_context.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]]
        )
    for key in ("options", "max_n"):
        for map_name in section.get(key, {}):
            if map_name not in registry.names():
                out.append(f"long_context.{key}.{map_name}: unknown map; registered: {', '.join(registry.names())}")
    ns = [n for m in section["maps"] for n in capped_ns(section["n"], m, section["max_n"])]
    if ns and section["position"] >= min(ns):
        out.append(
            f"long_context.position {section['position']} is beyond the smallest n = {min(ns)} of long_context: "
            "choose a position below every n"
        )
    if "imdb" in section["data"]:
        model = config["model"]
        width = model_width(model["name"])
        if width is not None and section["d"] > width:
            out.append(
                f"long_context.d = {section['d']} > the model width {width} ({model['name']}): lower long_context.d"
            )
    return out


def _figures(plan: PlanView) -> list[Figure]:
    tables = sorted({job.table for job in plan.fit if job.study == "long_context"})
    if not tables:
        return []
    configured = {job.map for job in plan.jobs if job.study == "long_context"}
    section = plan.config["long_context"]
    return [
        Figure(
            name="long_context_figure",
            study="long_context",
            kind="long_context",
            tables={stem.removeprefix("long_"): stem for stem in tables},
            outputs={
                "figures": Output(
                    stem="fig_long_context",
                    caption=beside(__file__, "report", "fig_long_context.rst"),
                    category="Beyond the paper",
                )
            },
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "imdb_limit": section["max_length"],
                "left_out": plan.left_out(study="long_context"),
            },
        )
    ]


def _draw(kind: str, tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    from .figure import long_context_figure

    long_context_figure(
        tables,
        outputs["figures"],
        labels=params["labels"],
        imdb_limit=params["imdb_limit"],
        left_out=params["left_out"],
        settings=settings,
    )


SPEC = StudySpec(
    name="long_context",
    title="word sensitivity at long contexts, with fitted log-log slopes",
    section="long_context",
    active=lambda config: bool(config.get("long_context")),
    schema=schema_beside(__file__),
    jobs=_jobs,
    rules=(WS_RULE,),
    numerics=WS_NUMERICS,
    owns=r"long_\w+",
    figures=_figures,
    draw=_draw,
    stores=_stores,
    problems=_problems,
    coefficients={"long_context_figure": (3.5, None)},
)
