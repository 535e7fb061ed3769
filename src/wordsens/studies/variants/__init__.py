"""Which attention variants keep word sensitivity (the configuration's ``variants``): every registered map
with random weights (plugins included) on one grid, their word sensitivity against n in one figure
(``figure``); each map's slope joins the claims table through the paper's claims (``lends_ws_rows``).
"""

from __future__ import annotations

from ...compute.limits import Limits
from ...maps import registry
from ..checks import position_problem, stored_length_problem, width_problem
from ..jobs import data_label, main_store
from ..sensitivity import WSJob, capped_ns, ws_jobs
from ..ws.section import curve_jobs, map_study, maps_problems


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
        points += curve_jobs(
            "variants",
            section,
            map_name,
            capped_ns(section["n"], map_name, section["max_n"]),
            folder="variants",
            table="variants",
            data=section["data"],
            data_label=data_label(config, section["data"], store),
            store=None if store is None else store.name,
        )
    return ws_jobs(config, limits, version, points, section["trials_per_job"])


def problems(config: dict) -> list[str]:
    """Unknown maps or options, n beyond the stored length and d beyond the width (IMDb rows), a position
    beyond the smallest n."""
    section = config["variants"]
    maps = variant_maps(section)
    out = maps_problems("variants", section, maps, "max_n")
    if section["data"] == "imdb":
        out += stored_length_problem("variants.n", max(section["n"]), config)
        out += width_problem("variants.d", section["d"], config)
    ns = [n for m in maps for n in capped_ns(section["n"], m, section["max_n"])]
    return out + position_problem("variants.position", section["position"], ns, "variants")


SPEC = map_study(
    "variants",
    __file__,
    title="which attention variants keep word sensitivity: every registered map on one grid",
    jobs=jobs,
    problems=problems,
    figure_seconds=3.0,
    lends_ws_rows=True,
)
