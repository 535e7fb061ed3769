"""Word sensitivity at long contexts (the configuration's ``long_context``): up to n = 4096 on synthetic rows
and up to the encoder's positions on IMDb (a second embedding store of long reviews), each curve with its
fitted log-log slope beside the RF law's over the same n (``figure``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ...data.reviews import tokens_to_fill
from ...maps import registry
from ..checks import map_problems, position_problem, unknown_maps, width_problem
from ..jobs import Store, data_label
from ..sensitivity import WS_NUMERICS, WSJob, capped_ns, options_of, ws_jobs
from ..spec import Figure, PlanView, StudySpec, beside, schema_beside


def store(config: dict) -> Store:
    """The store of long IMDb reviews: a pool of its own (reviews of at least max_length - 2 WordPiece tokens,
    so that [CLS], the words and [SEP] fill every position: no [PAD] row at any n), embedded at
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


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    """A curve per data source (results folder and table ``long_<data>``) and map, over its n."""
    section = config["long_context"]
    points = []
    for data in section["data"]:
        on = store(config) if data == "imdb" else None
        for map_name in section["maps"]:
            options, swept = options_of(map_name, section["options"].get(map_name))
            points += [
                WSJob(
                    study="long_context",
                    folder=f"long_{data}",
                    table=f"long_{data}",
                    map=map_name,
                    data=data,
                    data_label=data_label(config, data, on),
                    store=None if on is None else on.name,
                    d=section["d"],
                    n=n,
                    swept=swept,
                    options=options,
                    position=section["position"],
                    trials=tuple(range(section["trials"])),
                )
                for n in long_context_ns(section, map_name, data)
            ]
    return ws_jobs(config, limits, version, points, section["trials_per_job"])


def problems(config: dict) -> list[str]:
    section = config["long_context"]
    out = [
        problem
        for map_name in section["maps"]
        for problem in map_problems(
            f"long_context.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]]
        )
    ]
    out += unknown_maps("long_context.options", section["options"]) + unknown_maps(
        "long_context.max_n", section["max_n"]
    )
    ns = [n for m in section["maps"] for n in capped_ns(section["n"], m, section["max_n"])]
    out += position_problem("long_context.position", section["position"], ns, "long_context")
    return out + (width_problem("long_context.d", section["d"], config) if "imdb" in section["data"] else [])


def figures(plan: PlanView) -> list[Figure]:
    tables = sorted({job.table for job in plan.fit if job.study == "long_context"})
    if not tables:
        return []
    configured = {job.map for job in plan.jobs if job.study == "long_context"}
    return [
        Figure(
            name="long_context_figure",
            study="long_context",
            tables={stem.removeprefix("long_"): stem for stem in tables},
            outputs={"figures": "fig_long_context"},
            caption=beside(__file__, "report", "fig_long_context.rst"),
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "imdb_limit": plan.config["long_context"]["max_length"],
                "left_out": plan.left_out(study="long_context"),
            },
        )
    ]


SPEC = StudySpec(
    name="long_context",
    title="word sensitivity at long contexts, with fitted log-log slopes",
    section="long_context",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(WSJob,),
    numerics=WS_NUMERICS,
    owns=r"long_\w+",
    figures=figures,
    draw="wordsens.studies.long_context.figure:draw",
    stores=lambda config: [store(config)] if config.get("long_context") else [],
    problems=lambda config: problems(config) if config.get("long_context") else [],
    coefficients={"long_context_figure": (3.5, None)},
)
