"""Figures 4 and 5: generalisation after changing one word (the configuration's ``gen``): its jobs
(``GenJob``, their rows: ``run``), claims (``claims``) and figures (``wordsens.plots.generalisation``).
Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute.limits import Limits
from ...compute.placement import GpuRate, Placement, placed
from ...maps import registry
from ..checks import map_problems, pool_problem, position_problem, stored_length_problem, width_problem
from ..jobs import Job, JobFiles, chunks, data_label, main_store
from ..spec import Figure, Output, PlanView, StudySpec, beside, schema_beside

NUMERICS = ("gen", "gen-5")

# The figures, by the stem of their files: Figure 4 (colour N) and Figure 5 (colour penalty).
FIGURES = {"fig4_generalisation": "fig4", "fig5_penalised": "fig5"}

_FIXED_GEN = 2.19


@dataclass(frozen=True, kw_only=True)
class GenJob(Job):
    """A chunk of the simulations of one point of Figure 4 or 5 (``figure``): ``map`` at n, N and d, each
    simulation serving every (training, loss, penalty) search of the figure (``searches``), moving the row at
    ``position``; the Delta searches' settings (``search``) and the map's options."""

    rule = "gen"
    output = "gen/{figure}/{data}/{setting}/chunk{chunk}"
    summary = ("simulation", "training", "loss", "penalty", "err", "gamma_min", "steps")
    coefficients: ClassVar = {
        "gen:*": (_FIXED_GEN, 0.78),
        "gen:rf": (_FIXED_GEN, 0.61),
        "gen:raf": (_FIXED_GEN, 0.78),
        "gen:relu_raf": (_FIXED_GEN, 0.70),
    }
    gpu_rates: ClassVar = {  # fitted on the H200 run (docs/gpu.md)
        "gen:rf": GpuRate(0.0218, 0.0099),
        "gen:raf": GpuRate(0.0358, 0.0275),
        "gen:relu_raf": GpuRate(0.0287, 0.0294),
    }

    map: str
    figure: str
    n: int
    N: int
    d: int
    simulations: tuple[int, ...]
    searches: tuple[tuple[str, str, float], ...]
    position: int = 0
    data_label: str = "synthetic"
    min_tokens: bool = False
    search: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def setting(self) -> str:
        return f"{self.map}_n{self.n}_N{self.N}_d{self.d}"

    @property
    def point(self) -> str:
        return f"{self.figure} {self.data} {self.setting}"

    @property
    def group(self) -> str:
        return self.figure

    @property
    def rows(self) -> int:
        return len(self.simulations) * len(self.searches)

    def values(self) -> dict[str, Any]:
        return {"figure": self.figure, "data": self.data, "n": self.n, "N": self.N, "d": self.d}

    def run(self, files: JobFiles) -> Any:
        from ...data.store import load_embeddings
        from .run import gen_rows

        meta = files.store()
        return gen_rows(self, load_embeddings(meta) if meta else "synthetic")


# A penalised search (Figure 5) in Figure 4 searches of the same map and n, from the width where it runs to
# the step cap (docs/benchmarks.md, "Where the constants come from"); by Levenberg-Marquardt steps (a smooth
# map's, SearchSettings.least_squares) it stops by its rule.
PENALISED_SEARCH_WEIGHT = 3.0  # at the step cap it was measured with (the default, 500)
MEASURED_CAP = 500
PENALISED_CAPPED_FROM_D = 128
LEAST_SQUARES_SEARCH_WEIGHT = 1.75


def search_load(
    searches: tuple[tuple[str, str, float], ...], d: int, max_steps: int | None, least_squares: bool = False
) -> float:
    """The searches of one simulation in Figure 4 searches (the cost models' ``searches``): from
    ``PENALISED_CAPPED_FROM_D``, a penalised one weighs ``LEAST_SQUARES_SEARCH_WEIGHT`` by Levenberg-Marquardt
    steps, else ``PENALISED_SEARCH_WEIGHT`` times ``max_steps / MEASURED_CAP`` (None: the default cap)."""
    weight = 1.0
    if d >= PENALISED_CAPPED_FROM_D:
        cap = max_steps or MEASURED_CAP
        weight = LEAST_SQUARES_SEARCH_WEIGHT if least_squares else PENALISED_SEARCH_WEIGHT * cap / MEASURED_CAP
    return sum(weight if loss == "penalised" else 1.0 for _, loss, _ in searches)


def gen_searches(figure: str, fig: dict) -> tuple[tuple[str, str, float], ...]:
    """The (training, loss, penalty) searches every simulation of a figure runs."""
    if figure == "fig5":
        return tuple((t, "penalised", float(p)) for t in fig["trainings"] for p in fig["penalties"])
    return tuple((t, loss, 0.0) for t in fig["trainings"] for loss in fig["losses"])


def jobs(config: dict, limits: Limits, version: str) -> list[GenJob]:
    """Every job of Figures 4 and 5, with its settings and estimates."""
    gen = config["gen"]
    d, per_job = gen["d"], gen["simulations_per_job"]
    search = {key: value for key, value in gen["search"].items() if value is not None}
    out: list[GenJob] = []
    for figure in ("fig4", "fig5"):
        fig = gen[figure]
        if not fig:
            continue
        searches = gen_searches(figure, fig)
        for data in gen["data"]:
            label = data_label(config, data, main_store(config))
            for map_name, ns in fig["maps"].items():
                spec = registry.get(map_name)
                options = dict(gen["options"].get(map_name) or {})
                load = search_load(searches, d, gen["search"]["max_steps"], spec.settings.least_squares)
                for n in ns:
                    for N in fig["N"]:
                        unit = Placement.on(
                            limits, f"gen:{map_name}", spec.gen_seconds(n, d, N, options, searches=load), len(searches)
                        )
                        device = unit.device(gen["device"], limits, per_job, spec.cost.prefers_gpu)
                        arrays = spec.gen_memory(n, d, N, options).bytes
                        out += [
                            GenJob(
                                study="gen",
                                map=map_name,
                                data=data,
                                table=f"gen_{figure}_{data}",
                                store="main" if data == "imdb" else None,
                                device=device,
                                chunk=chunk,
                                cost=placed(arrays, device, unit.seconds(device) * len(sims), threads=gen["threads"]),
                                figure=figure,
                                n=n,
                                N=N,
                                d=d,
                                simulations=sims,
                                searches=searches,
                                position=gen["position"],
                                seed=config["seed"],
                                data_label=label,
                                min_tokens=gen["min_tokens"],
                                search=search,
                                options=options,
                                numerics_version=version,
                            )
                            for chunk, sims in enumerate(chunks(gen["simulations"], per_job))
                        ]
    return out


def figures(plan: PlanView) -> list[Figure]:
    """Figure 4 (colour N) and Figure 5 (colour penalty) per data source with a job that fits, each with its
    alignment companion."""
    out = []
    done = sorted({(job.figure, job.data) for job in plan.fit if isinstance(job, GenJob)})
    for figure, data in done:
        stem = next(s for s, f in FIGURES.items() if f == figure)
        maps_ = plan.config["gen"][figure]["maps"]
        category = f"Figure {stem[3]}"
        alignment = Output(
            stem=f"{stem}_alignment_{data}", caption=beside(__file__, "report", "gen_alignment.rst"), category=category
        )
        out.append(
            Figure(
                name=f"{stem}_{data}",
                study="gen",
                tables={"table": f"gen_{figure}_{data}"},
                outputs={"figures": f"{stem}_{data}", "alignment": alignment},
                caption=beside(__file__, "report", "gen_figure.rst"),
                category=category,
                params={
                    "stem": stem,
                    "data": data,
                    # panel order: the registry's (RF, RAF, ReLU-RAF, then the other maps), each by increasing n
                    "columns": [[m, int(n)] for m in registry.names() for n in sorted(maps_.get(m) or [])],
                    "hue": "penalty" if figure == "fig5" else "N",
                    "left_out": plan.left_out(figure=figure, data=data),
                },
                family="gen_figure",
            )
        )
    return out


def draw(tables: dict[str, Any], outputs: dict[str, list[str]], params: dict, settings: dict) -> None:
    """Figure 4 or 5 and its alignment companion (``wordsens.plots.generalisation.gen_figure``)."""
    from ...plots.generalisation import gen_figure

    for name, y in (("figures", "err"), ("alignment", "alignment")):
        columns, hue, left_out = params["columns"], params["hue"], params["left_out"]
        gen_figure(tables["table"], columns, outputs[name], hue=hue, y=y, left_out=left_out, settings=settings)


def normalise(config: dict) -> list[str]:
    """Drop the maps set to null in ``gen.fig4.maps`` and ``gen.fig5.maps`` (as in ``ws.maps``), in place; a
    figure left without maps is a problem."""
    out = []
    for figure in ("fig4", "fig5"):
        fig = (config.get("gen") or {}).get(figure)
        if not fig:
            continue
        fig["maps"] = {name: ns for name, ns in fig["maps"].items() if ns is not None}
        if not fig["maps"]:
            out.append(f"gen.{figure}.maps: every map is null; set gen.{figure}: null to skip the figure")
    return out


def problems(config: dict) -> list[str]:
    """What the generalisation grids cannot run: unknown maps and options, n beyond the stored length or the
    moved position, N beyond the pool, d beyond the encoder's width."""
    out: list[str] = []
    gen = config["gen"]
    imdb = "imdb" in gen["data"]
    figures_ = {f: gen[f] for f in ("fig4", "fig5") if gen[f]}
    for figure, fig in figures_.items():
        for map_name, ns in fig["maps"].items():
            key = f"gen.{figure}.maps.{map_name}"
            out += map_problems(key, map_name, gen["options"].get(map_name), [gen["d"]])
            out += stored_length_problem(f"{key}.n", ns, config) if imdb else []
            out += position_problem("gen.position", gen["position"], ns, key)
        out += pool_problem(f"gen.{figure}.N", max(fig["N"]), config, "N") if imdb else []
    out += [
        f"gen.options.{map_name}: no gen figure runs {map_name}; add it to gen.fig4/fig5.maps or drop it"
        for map_name in gen["options"]
        if not any(map_name in fig["maps"] for fig in figures_.values())
    ]
    return out + (width_problem("gen.d", gen["d"], config) if figures_ and imdb else [])


SPEC = StudySpec(
    name="gen",
    title="Figures 4-5: can one changed word flip a learned label (generalisation after a one-word change)",
    section="gen",
    schema=schema_beside(__file__),
    active=lambda config: any(config["gen"][figure] for figure in ("fig4", "fig5")),
    jobs=jobs,
    kinds=(GenJob,),
    numerics=NUMERICS,
    owns=r"gen_fig[45]_\w+",
    figures=figures,
    draw=draw,
    claims="wordsens.studies.gen.claims:gen_claims",
    problems=problems,
    normalise=normalise,
    coefficients={"gen_figure": (7.0, None)},
    commands={"gen": "wordsens.studies.gen.cli"},
)
