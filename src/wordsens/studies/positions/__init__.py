"""Which position of a review is most sensitive (the configuration's ``positions``): every position of a few
IMDb reviews searched, one profile per review and map (the same reviews for every map; ``figure``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ...maps import registry
from ..checks import map_problems, stored_length_problem, unknown_maps, width_problem
from ..jobs import data_label, main_store
from ..sensitivity import WS_NUMERICS, WSJob, options_of, ws_jobs
from ..spec import Figure, PlanView, StudySpec, beside, schema_beside


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    """Per map, every position searched (a profile per review, all its reviews in one job), on the same
    reviews for every map."""
    section = config["positions"]
    label = data_label(config, "imdb", main_store(config))
    points = []
    for map_name in section["maps"]:
        options, swept = options_of(map_name, section["options"].get(map_name))
        points.append(
            WSJob(
                study="positions",
                folder="positions",
                table="positions",
                map=map_name,
                data="imdb",
                data_label=label,
                store="main",
                d=section["d"],
                n=section["n"],
                swept=swept,
                options=options,
                position="all",
                trials=tuple(range(section["reviews"])),
                profile=True,
                shared_samples=True,
            )
        )
    return ws_jobs(config, limits, version, points, section["reviews"])


def problems(config: dict) -> list[str]:
    section = config["positions"]
    out = [
        problem
        for map_name in section["maps"]
        for problem in map_problems(
            f"positions.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]]
        )
    ]
    out += unknown_maps("positions.options", section["options"])
    return (
        out
        + stored_length_problem("positions.n", section["n"], config)
        + width_problem("positions.d", section["d"], config)
    )


def figures(plan: PlanView) -> list[Figure]:
    if not any(job.study == "positions" for job in plan.fit):
        return []
    configured = {job.map for job in plan.jobs if job.study == "positions"}
    return [
        Figure(
            name="positions_figure",
            study="positions",
            tables={"table": "positions"},
            outputs={"figures": "fig_positions"},
            caption=beside(__file__, "report", "fig_positions.rst"),
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "left_out": plan.left_out(study="positions"),
            },
        )
    ]


SPEC = StudySpec(
    name="positions",
    title="the word sensitivity at every position of a review",
    section="positions",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(WSJob,),
    numerics=WS_NUMERICS,
    figures=figures,
    draw="wordsens.studies.positions.figure:draw",
    problems=lambda config: problems(config) if config.get("positions") else [],
    coefficients={"positions_figure": (4.3, None)},
)
