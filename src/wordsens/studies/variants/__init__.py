"""Which attention variants keep word sensitivity (the configuration's ``variants``): every registered map
with random weights (plugins included) on one grid, their word sensitivity against n in one figure
(``figure``); each map's slope joins the claims table through the paper's claims (``lends_ws_rows``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ...maps import registry
from ..checks import map_problems, position_problem, stored_length_problem, unknown_maps, width_problem
from ..jobs import data_label, main_store
from ..sensitivity import WS_NUMERICS, WSJob, capped_ns, options_of, ws_jobs
from ..spec import Figure, PlanView, StudySpec, beside, schema_beside


def variant_maps(section: dict) -> list[str]:
    """The maps of the section: for ``all``, every registered map with random weights (plugins included;
    the maps of a pre-trained checkpoint have their own study)."""
    if section["maps"] == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    return list(section["maps"])


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    """Every map at the section's d, over its n up to the map's ``max_n``."""
    section = config["variants"]
    store = main_store(config) if section["data"] == "imdb" else None
    points = []
    for map_name in variant_maps(section):
        options, swept = options_of(map_name, section["options"].get(map_name))
        points += [
            WSJob(
                study="variants",
                folder="variants",
                table="variants",
                map=map_name,
                data=section["data"],
                data_label=data_label(config, section["data"], store),
                store=None if store is None else store.name,
                d=section["d"],
                n=n,
                swept=swept,
                options=options,
                position=section["position"],
                trials=tuple(range(section["trials"])),
            )
            for n in capped_ns(section["n"], map_name, section["max_n"])
        ]
    return ws_jobs(config, limits, version, points, section["trials_per_job"])


def problems(config: dict) -> list[str]:
    """Unknown maps or options, n beyond the stored length and d beyond the width (IMDb rows), a position
    beyond the smallest n."""
    section = config["variants"]
    maps = variant_maps(section)
    out = [
        problem
        for map_name in maps
        for problem in map_problems(
            f"variants.maps ({map_name})", map_name, section["options"].get(map_name), [section["d"]]
        )
    ]
    out += unknown_maps("variants.options", section["options"]) + unknown_maps("variants.max_n", section["max_n"])
    if section["data"] == "imdb":
        out += stored_length_problem("variants.n", max(section["n"]), config)
        out += width_problem("variants.d", section["d"], config)
    ns = [n for m in maps for n in capped_ns(section["n"], m, section["max_n"])]
    return out + position_problem("variants.position", section["position"], ns, "variants")


def figures(plan: PlanView) -> list[Figure]:
    if not any(job.study == "variants" for job in plan.fit):
        return []
    configured = {job.map for job in plan.jobs if job.study == "variants"}
    return [
        Figure(
            name="variants_figure",
            study="variants",
            tables={"table": "variants"},
            outputs={"figures": "fig_variants"},
            caption=beside(__file__, "report", "fig_variants.rst"),
            params={
                "labels": {m: registry.get(m).label for m in registry.names() if m in configured},
                "left_out": plan.left_out(study="variants"),
            },
        )
    ]


SPEC = StudySpec(
    name="variants",
    title="which attention variants keep word sensitivity: every registered map on one grid",
    section="variants",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(WSJob,),
    numerics=WS_NUMERICS,
    figures=figures,
    draw="wordsens.studies.variants.figure:draw",
    lends_ws_rows=True,
    problems=lambda config: problems(config) if config.get("variants") else [],
    coefficients={"variants_figure": (3.0, None)},
)
