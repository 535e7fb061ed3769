"""The word-sensitivity grid points of a configuration: the paper's grids (``ws.maps``) and those
of the studies beyond the paper (``variants``, ``long_context``, ``positions``), each a ``Point``
with the settings its jobs share. ``wordsens.pipeline.jobs`` turns them into jobs. Torch is not
imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..maps import registry

__all__ = ["STUDIES", "Point", "capped_ns", "long_context_ns", "store_of", "stores", "variant_maps", "ws_points"]


# WS studies beyond the paper's grids (ws.maps, study "ws"): ordinary WS jobs, each study with its
# own results folder and table, so that the paper's figures are untouched
STUDIES = ("variants", "long_synthetic", "long_imdb", "positions")


@dataclass(frozen=True)
class Point:
    """One WS grid point of a study, with the settings its jobs share."""

    study: str
    map: str
    data: str  # imdb | synthetic
    d: int
    n: int
    swept: dict  # the values of the map's swept options (MapSpec.sweep): DRF's depth L
    options: dict
    position: int | str
    trials: int
    per_job: int
    extra: dict = field(default_factory=dict)  # settings only a study has (profile, shared samples)


def _options(map_name: str, options: Mapping[str, Any] | None) -> tuple[dict, dict]:
    """A study's map options without the swept ones (``MapSpec.sweep``), and the swept ones' values
    (defaults where absent): they name the jobs and are columns of the tables."""
    spec = registry.get(map_name)
    opts = dict(options or {})
    return {k: v for k, v in opts.items() if k not in spec.sweep}, spec.swept(opts)


def _sweeps(map_name: str, grid: Mapping[str, Any]) -> list[dict]:
    """Every combination of a grid's swept options (``MapSpec.sweep``: the grid lists each one's values;
    one not listed runs its default), in the order of the job names."""
    spec = registry.get(map_name)
    combos: list[dict] = [{}]
    for key in spec.sweep:
        values = grid.get(key) or [spec.swept()[key]]
        combos = [{**combo, key: int(v)} for combo in combos for v in values]
    return combos


def ws_points(config: dict) -> list[Point]:
    """Every WS grid point: the paper's (``ws.maps``) and those of the studies (``variants``,
    ``long_context``, ``positions``)."""
    points = _paper_points(config["ws"])
    if section := config.get("variants"):
        points += _variants_points(section)
    if section := config.get("long_context"):
        points += _long_context_points(section)
    if section := config.get("positions"):
        points += _positions_points(section)
    return points


def _point(
    section: Mapping[str, Any], study: str, map_name: str, data: str, d: int, n: int, swept: dict, opts: dict
) -> Point:
    """A point with its section's search position and trials (``position``, ``trials``,
    ``trials_per_job``)."""
    return Point(
        study, map_name, data, d, n, swept, opts, section["position"], section["trials"], section["trials_per_job"]
    )


def _paper_points(ws: dict) -> list[Point]:
    """The paper's grids (``ws.maps``): every d, n and combination of the swept options of each map."""
    return [
        _point(ws, "ws", map_name, ws["data"], d, n, swept, dict(grid.get("options") or {}))
        for map_name, grid in ws["maps"].items()
        if grid
        for d in grid["d"]
        for n in grid["n"]
        for swept in _sweeps(map_name, grid)
    ]


def _variants_points(section: dict) -> list[Point]:
    """Every map of the variants study at the section's d, over its n up to the map's ``max_n``."""
    points = []
    for map_name in variant_maps(section):
        opts, swept = _options(map_name, section["options"].get(map_name))
        for n in capped_ns(section["n"], map_name, section["max_n"]):
            points.append(_point(section, "variants", map_name, section["data"], section["d"], n, swept, opts))
    return points


def _long_context_points(section: dict) -> list[Point]:
    """The long-context curves: a study per data source (``long_synthetic``, ``long_imdb``), each map
    over its context lengths (``long_context_ns``)."""
    points = []
    for data in section["data"]:
        for map_name in section["maps"]:
            opts, swept = _options(map_name, section["options"].get(map_name))
            for n in long_context_ns(section, map_name, data):
                points.append(_point(section, f"long_{data}", map_name, data, section["d"], n, swept, opts))
    return points


def _positions_points(section: dict) -> list[Point]:
    """The per-position profiles: every position searched (a profile per review, ``reviews`` of them
    in one job), on the same reviews for every map."""
    points = []
    for map_name in section["maps"]:
        opts, swept = _options(map_name, section["options"].get(map_name))
        points.append(
            Point(
                "positions",
                map_name,
                "imdb",
                section["d"],
                section["n"],
                swept,
                opts,
                "all",
                section["reviews"],
                section["reviews"],
                {"profile": True, "shared_samples": True},
            )
        )
    return points


def capped_ns(ns: Iterable[int], map_name: str, max_n: Mapping[str, int]) -> list[int]:
    """The grid's n up to the map's entry in a section's ``max_n`` (all of them without one)."""
    cap = max_n.get(map_name)
    return [n for n in ns if cap is None or n <= cap]


def variant_maps(section: dict) -> list[str]:
    """The maps of the variants section: for ``all``, every registered map with random weights (plugins
    included; the maps of a pre-trained checkpoint have their own study)."""
    if section["maps"] == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    return list(section["maps"])


def long_context_ns(section: dict, map_name: str, data: str) -> list[int]:
    """Context lengths of one long-context curve: the grid's n up to the map's ``max_n``; on IMDb
    also up to ``max_length`` (the encoder's position limit), and ``max_length`` itself."""
    ns = capped_ns(section["n"], map_name, section["max_n"])
    if data != "imdb":
        return ns
    limit = section["max_length"]
    cap = section["max_n"].get(map_name)
    return sorted({n for n in ns if n <= limit} | ({limit} if cap is None or cap >= limit else set()))


def store_of(data: str, study: str = "ws") -> str | None:
    """The embedding store a job reads: ``"main"`` (IMDb rows at model.max_length), ``"long"`` (the
    long-context study's IMDb rows at long_context.max_length) or None (synthetic rows). The one
    answer to "does this job read IMDb?"."""
    if data != "imdb":
        return None
    return "long" if study == "long_imdb" else "main"


def stores(config: dict) -> set[str]:
    """The embedding stores a configuration's grid reads (``store_of`` of every WS point and of every
    generalisation figure's data sources)."""
    out = {store_of(pt.data, pt.study) for pt in ws_points(config)}
    gen = config["gen"]
    if any(gen[figure] for figure in ("fig4", "fig5")):
        out |= {store_of(data) for data in gen["data"]}
    return {store for store in out if store is not None}
