"""Figures 2 and 3 (panels 1-2): the word sensitivity of the paper's maps against n on the paper's grids (the
configuration's ``ws.maps``; jobs: ``wordsens.studies.sensitivity``), its claims (``claims``) and figures,
plain and times sqrt(n) (``figure``). Torch-free.
"""

from __future__ import annotations

from ...compute.limits import Limits
from ..checks import map_problems, position_problem, stored_length_problem, sweep_problems, width_problem
from ..jobs import data_label, main_store
from ..sensitivity import WS_NUMERICS, WSJob, sweeps, ws_jobs
from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside

# The paper's figures and the maps each draws (one panel a map), each also times sqrt(n) (``_scaled``)
WS_FIGURES = {"fig2_rf_drf": ("rf", "drf"), "fig3_raf_relu_raf": ("raf", "relu_raf")}


def jobs(config: dict, limits: Limits, version: str) -> list[WSJob]:
    """Every point of the paper's grids (every d, n and combination of each map's swept options), in jobs."""
    ws = config["ws"]
    store = main_store(config) if ws["data"] == "imdb" else None
    points = [
        WSJob(
            study="ws",
            folder="ws",
            table=f"ws_{map_name}",
            map=map_name,
            data=ws["data"],
            data_label=data_label(config, ws["data"], store),
            store=None if store is None else store.name,
            d=d,
            n=n,
            swept=swept,
            options=dict(grid.get("options") or {}),
            position=ws["position"],
            trials=tuple(range(ws["trials"])),
        )
        for map_name, grid in ws["maps"].items()
        if grid
        for d in grid["d"]
        for n in grid["n"]
        for swept in sweeps(map_name, grid)
    ]
    return ws_jobs(config, limits, version, points, ws["trials_per_job"])


def figures(plan: PlanView) -> list[Figure]:
    """Figure 2 and Figure 3's panels 1-2 where a map of theirs is configured (fitting or not: the points
    left out are marked), each plain and times sqrt(n), from the tables of its maps that fit."""
    configured = {job.map for job in plan.jobs if job.study == "ws"}
    fitting = {job.map for job in plan.fit if job.study == "ws"}
    out = []
    for stem, maps in WS_FIGURES.items():
        if not configured & set(maps):
            continue
        category = f"Figure {stem[3]}"
        caption = beside(__file__, "report", "ws_figure.rst")
        scaled = Output(
            stem=f"{stem}_scaled", caption=beside(__file__, "report", "ws_figure_scaled.rst"), category=category
        )
        out.append(
            Figure(
                name=stem,
                study="ws",
                tables={m: f"ws_{m}" for m in maps if m in fitting},
                outputs={"plain": stem, "scaled": scaled},
                caption=caption,
                category=category,
                params={
                    "stem": stem,
                    "maps": list(maps),
                    "left_out": [p for m in maps for p in plan.left_out(study="ws", map=m)],
                },
                family="ws_figure",
            )
        )
    return out


def problems(config: dict) -> list[str]:
    """What the paper's grids cannot run: unknown maps and options, swept options the map does not sweep, n
    beyond the stored length and d beyond the encoder's width (IMDb rows), a position beyond n."""
    out: list[str] = []
    ws = config["ws"]
    for map_name, grid in ((m, g) for m, g in ws["maps"].items() if g):
        key = f"ws.maps.{map_name}"
        out += map_problems(key, map_name, grid.get("options"), grid["d"])
        out += sweep_problems(key, map_name, grid)
        if ws["data"] == "imdb":
            out += stored_length_problem(f"{key}.n", grid["n"], config)
            out += width_problem(f"{key}.d", grid["d"], config)
        out += position_problem("ws.position", ws["position"], grid["n"], key)
    return out


SPEC = StudySpec(
    name="ws",
    title="Figures 2-3: the word sensitivity of the paper's maps against n on the paper's grids",
    section="ws",
    schema=schema_beside(__file__),
    active=lambda config: any(grid for grid in config["ws"]["maps"].values()),
    jobs=jobs,
    kinds=(WSJob,),
    numerics=WS_NUMERICS,
    owns=r"ws_\w+",
    figures=figures,
    draw="wordsens.studies.ws.figure:draw",
    claims="wordsens.studies.ws.claims:ws_claims",
    problems=problems,
    coefficients={"ws_figure": (3.7, None)},
    commands={"ws": "wordsens.studies.ws.cli"},
)
