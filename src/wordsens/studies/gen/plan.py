"""The generalisation experiments (Figures 4 and 5, the configuration's ``gen``): their jobs (one per
figure, data source, map, n, N and chunk of simulations, each simulation serving every search of its
figure), with their typed settings and estimates, their figures and checks. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute.limits import Limits
from ...compute.placement import GpuRate
from ...data.models import model_width
from ...maps import registry
from ..jobs import Job, JobFiles, JobRule, chunks, data_label, job_device, main_store
from ..jobs import placed as placed_bytes
from ..placing import work_placement
from ..sensitivity import SearchOptions, map_problems
from ..spec import Figure, Output, PlanView, beside
from .settings import GenRun, GenSettings

__all__ = [
    "FIGURES",
    "GEN_RULE",
    "NUMERICS",
    "GenJob",
    "active",
    "figures",
    "gen_jobs",
    "gen_searches",
    "gen_setting",
    "normalise",
    "problems",
    "search_load",
]

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
NUMERICS = ("gen", "gen-5")

# The figures, by the stem of their files: Figure 4 (colour N) and Figure 5 (colour penalty).
FIGURES = {"fig4_generalisation": "fig4", "fig5_penalised": "fig5"}


def gen_setting(map_name: str, n: int, N: int, d: int) -> str:
    """The path component of one generalisation point: ``raf_n40_N100_d768``."""
    return f"{map_name}_n{n}_N{N}_d{d}"


def _run(params: Mapping[str, Any], files: JobFiles) -> Any:
    from ...data.store import load_embeddings
    from .run import gen_rows

    meta = files.store()
    return gen_rows(GenSettings.of(params), load_embeddings(meta) if meta else "synthetic")


_FIXED_GEN = 2.19
GEN_RULE = JobRule(
    name="gen",
    output="gen/{figure}/{gdata}/{gsetting}/chunk{chunk}",
    constraints=lambda: {
        "figure": "|".join(FIGURES.values()),
        "gdata": "imdb|synthetic",
        "gsetting": "(" + "|".join(registry.names()) + r")_n\d+_N\d+_d\d+",
        "chunk": r"\d+",
    },
    run=_run,
    summary=("simulation", "training", "loss", "penalty", "err", "gamma_min", "steps"),
    coefficients={
        "gen:*": (_FIXED_GEN, 0.78),
        "gen:rf": (_FIXED_GEN, 0.61),
        "gen:raf": (_FIXED_GEN, 0.78),
        "gen:relu_raf": (_FIXED_GEN, 0.70),
    },
    gpu_rates={  # fitted on the H200 run (docs/gpu.md)
        "gen:rf": GpuRate(0.0218, 0.0099),
        "gen:raf": GpuRate(0.0358, 0.0275),
        "gen:relu_raf": GpuRate(0.0287, 0.0294),
    },
)


@dataclass(frozen=True, kw_only=True)
class GenJob(Job):
    """A generalisation job: a figure's point and a chunk of its simulations, each serving every
    (training, loss, penalty) search of the figure."""

    RULE: ClassVar[JobRule] = GEN_RULE

    map: str
    figure: str
    n: int
    N: int
    d: int
    simulations: tuple[int, ...]
    searches: tuple[tuple[str, str, float], ...]
    settings: GenSettings = field(compare=False, repr=False)

    @property
    def setting(self) -> str:
        return gen_setting(self.map, self.n, self.N, self.d)

    @property
    def point(self) -> str:
        return f"{self.figure} {self.data} {self.setting}"

    @property
    def group(self) -> str:
        return self.figure

    @property
    def rows(self) -> int:
        """One row per simulation and search."""
        return len(self.simulations) * len(self.searches)

    @property
    def wildcards(self) -> dict[str, str]:
        return {"figure": self.figure, "gdata": self.data, "gsetting": self.setting, "chunk": str(self.chunk)}

    @property
    def table(self) -> str:
        return f"gen_{self.figure}_{self.data}"

    @property
    def store(self) -> str | None:
        return "main" if self.data == "imdb" else None

    def values(self) -> dict[str, Any]:
        return {"figure": self.figure, "data": self.data, "n": self.n, "N": self.N, "d": self.d}


# Figure 5's penalised searches at the paper's widths run to the step cap where Figure 4's stop by their
# rule, at a few times the seconds of a Figure 4 search of the same map and n; at small d they stop by their
# rule like Figure 4's. Smooth maps' penalised searches take Levenberg-Marquardt steps
# (SearchSettings.least_squares) and stop by their rule, at up to about twice a Figure 4 search's seconds
# (docs/benchmarks.md, "Figure 5's penalised searches by Levenberg-Marquardt steps" and "Where the constants
# come from").
PENALISED_SEARCH_WEIGHT = 3.0  # at the cap it was measured with, the default gen.search.max_steps:
MEASURED_CAP = 500  # (null there: search_many's default, the same 500)
PENALISED_CAPPED_FROM_D = 128  # the width from which they are priced at the cap
LEAST_SQUARES_SEARCH_WEIGHT = 1.75


def search_load(
    searches: tuple[tuple[str, str, float], ...], d: int, max_steps: int | None, least_squares: bool = False
) -> float:
    """The searches of one simulation in units of a Figure 4 search (the cost models' ``searches``): a
    penalised search at ``d >= PENALISED_CAPPED_FROM_D`` weighs ``LEAST_SQUARES_SEARCH_WEIGHT`` where the
    map takes Levenberg-Marquardt steps (``least_squares``), else ``PENALISED_SEARCH_WEIGHT``, scaled by
    ``gen.search.max_steps`` / ``MEASURED_CAP`` (the ascent runs to the cap; None: the default cap)."""
    cap = max_steps or MEASURED_CAP
    wide = d >= PENALISED_CAPPED_FROM_D
    weight = 1.0
    if wide:
        weight = LEAST_SQUARES_SEARCH_WEIGHT if least_squares else PENALISED_SEARCH_WEIGHT * cap / MEASURED_CAP
    return sum(weight if loss == "penalised" else 1.0 for _, loss, _ in searches)


def gen_searches(figure: str, fig: dict) -> tuple[tuple[str, str, float], ...]:
    """The (training, loss, penalty) searches every simulation of a figure runs."""
    if figure == "fig5":
        return tuple((t, "penalised", float(p)) for t in fig["trainings"] for p in fig["penalties"])
    return tuple((t, loss, 0.0) for t in fig["trainings"] for loss in fig["losses"])


def gen_jobs(config: dict, limits: Limits, numerics_version: str) -> list[GenJob]:
    """Every generalisation job of ``config["gen"]`` (Figures 4 and 5), with its settings and estimates
    (``numerics_version``: part of every job's params)."""
    gen = config["gen"]
    d = gen["d"]
    jobs: list[GenJob] = []
    for figure in ("fig4", "fig5"):
        fig = gen[figure]
        if not fig:
            continue
        searches = gen_searches(figure, fig)
        for data in gen["data"]:
            for map_name, ns in fig["maps"].items():
                spec = registry.get(map_name)
                options = dict(gen["options"].get(map_name) or {})
                load = search_load(searches, d, gen["search"]["max_steps"], spec.settings.least_squares)
                for n in ns:
                    for N in fig["N"]:
                        model = spec.gen_seconds(n, d, N, options, searches=load)
                        placed = work_placement(limits, f"gen:{map_name}", model, len(searches))
                        pays = placed.pays(gen["simulations_per_job"])
                        device = job_device(gen["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=pays)
                        run = GenRun(
                            position=gen["position"],
                            device=device,
                            min_tokens=gen["min_tokens"],
                            search=SearchOptions.of(gen["search"]),
                            options=options,
                        )
                        estimate = spec.gen_memory(n, d, N, options)
                        host, on_device = placed_bytes(estimate, device)
                        secs = placed.seconds(device)
                        for chunk, sims in enumerate(chunks(gen["simulations"], gen["simulations_per_job"])):
                            jobs.append(
                                GenJob(
                                    study="gen",
                                    map=map_name,
                                    data=data,
                                    chunk=chunk,
                                    device=device,
                                    memory_bytes=host,
                                    device_bytes=on_device,
                                    seconds=secs * len(sims),
                                    arrays=estimate.bytes,
                                    threads=gen["threads"],
                                    figure=figure,
                                    n=n,
                                    N=N,
                                    d=d,
                                    simulations=sims,
                                    searches=searches,
                                    settings=GenSettings(
                                        figure=figure,
                                        map=map_name,
                                        n=n,
                                        N=N,
                                        d=d,
                                        data=data,
                                        data_label=data_label(config, data, main_store(config)),
                                        simulations=sims,
                                        searches=searches,
                                        seed=config["seed"],
                                        settings=run,
                                        numerics_version=numerics_version,
                                    ),
                                )
                            )
    return jobs


def figures(plan: PlanView) -> list[Figure]:
    """Figure 4 (colour N) and Figure 5 (colour penalty) per data source with a job that fits, each with
    its companion (the alignment ratio against gamma_min in the same layout)."""
    out = []
    done = sorted({(job.figure, job.data) for job in plan.fit if isinstance(job, GenJob)})
    maps_order = registry.names()
    for figure, data in done:
        stem = next(s for s, f in FIGURES.items() if f == figure)
        maps_ = plan.config["gen"][figure]["maps"]
        category = f"Figure {stem[3]}"
        out.append(
            Figure(
                name=f"{stem}_{data}",
                study="gen",
                kind="gen",
                tables={"table": f"gen_{figure}_{data}"},
                outputs={
                    "figures": Output(
                        stem=f"{stem}_{data}", caption=beside(__file__, "report", "gen_figure.rst"), category=category
                    ),
                    "alignment": Output(
                        stem=f"{stem}_alignment_{data}",
                        caption=beside(__file__, "report", "gen_alignment.rst"),
                        category=category,
                    ),
                },
                params={
                    "stem": stem,
                    "data": data,
                    # panel order: the registry's (RF, RAF, ReLU-RAF, then the other maps), each by increasing n
                    "columns": [[m, int(n)] for m in maps_order for n in sorted(maps_.get(m) or [])],
                    "hue": "penalty" if figure == "fig5" else "N",
                    "left_out": plan.left_out(figure=figure, gdata=data),
                },
                family="gen_figure",
            )
        )
    return out


def normalise(config: dict) -> list[str]:
    """Drop the maps set to null in ``gen.fig4.maps`` and ``gen.fig5.maps`` (a --configfile removes a
    map of config.yaml that way, as in ``ws.maps``), in place; a figure left without maps is a problem."""
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
    """What the generalisation grids cannot run: unknown maps and options, n beyond the stored length or
    the moved position, N beyond the pool, d beyond the encoder's width."""
    out: list[str] = []
    data, model, gen = config["data"], config["model"], config["gen"]
    figures_ = {f: gen[f] for f in ("fig4", "fig5") if gen[f]}
    for figure, fig in figures_.items():
        for map_name, ns in fig["maps"].items():
            out += map_problems(f"gen.{figure}.maps.{map_name}", map_name, gen["options"].get(map_name), [gen["d"]])
            if "imdb" in gen["data"]:
                too_long = [n for n in ns if n > model["max_length"]]
                if too_long:
                    out.append(
                        f"gen.{figure}.maps.{map_name} has n = {too_long} > model.max_length = "
                        f"{model['max_length']}: lower n or raise model.max_length"
                    )
            if gen["position"] >= min(ns):
                out.append(
                    f"gen.position {gen['position']} is beyond n = {min(ns)} of gen.{figure}.maps.{map_name}: "
                    "choose a position below every n"
                )
        if "imdb" in gen["data"] and max(fig["N"]) + 1 > data["pool_size"]:
            out.append(
                f"gen.{figure}.N = {max(fig['N'])} needs data.pool_size >= {max(fig['N']) + 1} (N training "
                "reviews and the new one): raise data.pool_size or lower N"
            )
    for map_name in gen["options"]:
        if not any(map_name in fig["maps"] for fig in figures_.values()):
            out.append(
                f"gen.options.{map_name}: no gen figure runs {map_name}; add it to gen.fig4/fig5.maps or drop it"
            )
    width = model_width(model["name"]) if "imdb" in gen["data"] else None
    if figures_ and "imdb" in gen["data"] and width is not None and gen["d"] > width:
        out.append(f"gen.d = {gen['d']} > the model width {width} ({model['name']}): lower gen.d")
    return out


def active(config: dict) -> bool:
    return any(config["gen"][figure] for figure in ("fig4", "fig5"))
