"""Which position of a review is most sensitive (the configuration's ``positions``): every position of a few
IMDb reviews searched, one profile per review and map (the same reviews for every map; ``figure``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ..checks import stored_length_problem, width_problem
from ..jobs import data_label, main_store
from ..sensitivity import WSJob, ws_jobs
from ..ws.section import curve_jobs, map_study, maps_problems


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    """Per map, every position searched (a profile per review, all its reviews in one job), on the same
    reviews for every map."""
    section = config["positions"]
    label = data_label(config, "imdb", main_store(config))
    points = []
    for map_name in section["maps"]:
        points += curve_jobs(
            "positions",
            section,
            map_name,
            [section["n"]],
            folder="positions",
            table="positions",
            data="imdb",
            data_label=label,
            store="main",
            position="all",
            trials=tuple(range(section["reviews"])),
            profile=True,
            shared_samples=True,
        )
    return ws_jobs(config, limits, version, points, section["reviews"])


def problems(config: dict) -> list[str]:
    section = config["positions"]
    return (
        maps_problems("positions", section, section["maps"])
        + stored_length_problem("positions.n", section["n"], config)
        + width_problem("positions.d", section["d"], config)
    )


SPEC = map_study(
    "positions",
    __file__,
    title="the word sensitivity at every position of a review",
    jobs=jobs,
    problems=problems,
    figure_seconds=4.3,
)
