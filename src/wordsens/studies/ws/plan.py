"""The paper's word-sensitivity grids (``ws.maps``): their points, jobs, figures and checks. Torch-free."""

from __future__ import annotations

from ...compute.limits import Limits
from ...data.models import model_width
from ..jobs import main_store
from ..sensitivity import Point, WSJob, map_problems, sweep_problems, sweeps, ws_jobs
from ..spec import Figure, Output, PlanView, beside

__all__ = ["WS_FIGURES", "active", "figures", "jobs", "points", "problems"]

# The paper's figures and the maps each draws (one panel a map): Figure 2 (RF, DRF) and Figure 3's
# panels 1-2 (RAF, ReLU-RAF); each also times sqrt(n) (its ``_scaled`` companion).
WS_FIGURES = {"fig2_rf_drf": ("rf", "drf"), "fig3_raf_relu_raf": ("raf", "relu_raf")}


def points(config: dict) -> list[Point]:
    """Every point of the paper's grids: every d, n and combination of the swept options of each map."""
    ws = config["ws"]
    store = main_store(config) if ws["data"] == "imdb" else None
    return [
        Point(
            study="ws",
            folder="ws",
            table=f"ws_{map_name}",
            map=map_name,
            data=ws["data"],
            d=d,
            n=n,
            swept=swept,
            options=dict(grid.get("options") or {}),
            position=ws["position"],
            trials=ws["trials"],
            per_job=ws["trials_per_job"],
            store=store,
        )
        for map_name, grid in ws["maps"].items()
        if grid
        for d in grid["d"]
        for n in grid["n"]
        for swept in sweeps(map_name, grid)
    ]


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    return ws_jobs(config, points(config), limits, version)


def figures(plan: PlanView) -> list[Figure]:
    """Figure 2 and Figure 3's panels 1-2 where a map of theirs is configured (fitting or not: the
    points left out are marked), each plain and times sqrt(n), from the tables of its maps that fit."""
    configured = {job.map for job in plan.jobs if job.study == "ws"}
    fitting = {job.map for job in plan.fit if job.study == "ws"}
    out = []
    for stem, maps in WS_FIGURES.items():
        if not configured & set(maps):
            continue
        category = f"Figure {stem[3]}"
        left_out = [p for m in maps for p in plan.left_out(study="ws", map=m)]
        out.append(
            Figure(
                name=stem,
                study="ws",
                kind="ws",
                tables={m: f"ws_{m}" for m in maps if m in fitting},
                outputs={
                    "plain": Output(stem=stem, caption=beside(__file__, "report", "ws_figure.rst"), category=category),
                    "scaled": Output(
                        stem=f"{stem}_scaled",
                        caption=beside(__file__, "report", "ws_figure_scaled.rst"),
                        category=category,
                    ),
                },
                params={"stem": stem, "maps": list(maps), "left_out": left_out},
                family="ws_figure",
            )
        )
    return out


def problems(config: dict) -> list[str]:
    """What the paper's grids cannot run: unknown maps and options, swept options the map does not
    sweep, n beyond the stored length and d beyond the encoder's width (IMDb rows), a position beyond n."""
    out: list[str] = []
    model, ws = config["model"], config["ws"]
    grids = {m: g for m, g in ws["maps"].items() if g}
    width = model_width(model["name"]) if ws["data"] == "imdb" else None
    for map_name, grid in grids.items():
        out += map_problems(f"ws.maps.{map_name}", map_name, grid.get("options"), grid["d"])
        out += sweep_problems(f"ws.maps.{map_name}", map_name, grid)
        if ws["data"] == "imdb":
            too_long = [n for n in grid["n"] if n > model["max_length"]]
            if too_long:
                out.append(
                    f"ws.maps.{map_name}.n has {too_long} > model.max_length = {model['max_length']}: "
                    "lower n or raise model.max_length"
                )
            too_wide = [d for d in grid["d"] if width is not None and d > width]
            if too_wide:
                out.append(
                    f"ws.maps.{map_name}.d has {too_wide} > the model width {width} ({model['name']}): "
                    "lower d or choose a wider model.name"
                )
        if ws["position"] != "all" and ws["position"] >= min(grid["n"]):
            out.append(
                f"ws.position {ws['position']} is beyond the smallest n = {min(grid['n'])} of "
                f"ws.maps.{map_name}: choose a position below every n, or 'all'"
            )
    return out


def active(config: dict) -> bool:
    return any(grid for grid in config["ws"]["maps"].values())
