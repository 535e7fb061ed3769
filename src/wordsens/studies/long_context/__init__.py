"""Word sensitivity at long contexts (the configuration's ``long_context``): up to n = 4096 on synthetic rows
and up to the encoder's positions on IMDb (a second embedding store of long reviews), each curve with its
fitted log-log slope beside the RF law's over the same n (``figure``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ...data.reviews import tokens_to_fill
from ..checks import position_problem, width_problem
from ..jobs import Store, data_label
from ..sensitivity import WSJob, capped_ns, ws_jobs
from ..spec import Figure, PlanView
from ..ws.section import curve_jobs, map_figures, map_study, maps_problems


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
            points += curve_jobs(
                "long_context",
                section,
                map_name,
                long_context_ns(section, map_name, data),
                folder=f"long_{data}",
                table=f"long_{data}",
                data=data,
                data_label=data_label(config, data, on),
                store=None if on is None else on.name,
            )
    return ws_jobs(config, limits, version, points, section["trials_per_job"])


def problems(config: dict) -> list[str]:
    section = config["long_context"]
    out = maps_problems("long_context", section, section["maps"], "max_n")
    ns = [n for m in section["maps"] for n in capped_ns(section["n"], m, section["max_n"])]
    out += position_problem("long_context.position", section["position"], ns, "long_context")
    return out + (width_problem("long_context.d", section["d"], config) if "imdb" in section["data"] else [])


def figures(plan: PlanView) -> list[Figure]:
    tables = sorted({job.table for job in plan.fit if job.study == "long_context"})
    imdb_limit = plan.config["long_context"]["max_length"]
    return map_figures(
        plan, "long_context", __file__, {stem.removeprefix("long_"): stem for stem in tables}, imdb_limit=imdb_limit
    )


SPEC = map_study(
    "long_context",
    __file__,
    title="word sensitivity at long contexts, with fitted log-log slopes",
    jobs=jobs,
    problems=problems,
    figures=figures,
    figure_seconds=3.5,
    owns=r"long_\w+",
    stores=lambda config: [store(config)] if config.get("long_context") else [],
)
