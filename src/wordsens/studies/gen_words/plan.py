"""The gen_words study's plan: one job per map, n, N and chunk of simulations, each simulation scoring every
word of model.name's vocabulary at a word position and running the continuous settings beside; its
figures and checks. Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute import costs, swap_costs
from ...compute.limits import Limits
from ...data.models import BERT_VOCAB, bert_family_problem, encoder_size, model_config, model_heads, model_width
from ...maps import registry
from ..jobs import CUDA_CONTEXT_BYTES, CUDA_HOST_BYTES, Job, JobFiles, JobRule, chunks, job_device
from ..placing import work_placement
from ..sensitivity import SearchOptions, map_problems
from ..spec import Figure, Needs, Output, PlanView, beside
from .settings import GenWordsSettings

__all__ = [
    "GEN_WORDS_RULE",
    "NUMERICS",
    "GenWordsJob",
    "active",
    "figures",
    "gen_words_d",
    "gen_words_jobs",
    "gen_words_maps",
    "needs",
    "problems",
]

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/running.md lists what each version changed)
NUMERICS = ("gen_words", "gen_words-1")
SETTINGS = ("words", "cls", "position", "word_radius")  # the rows' settings (the continuous ones beside)
TRAININGS = ("fine_tune", "retrain")


def gen_words_maps(config: dict) -> dict[str, list[int]]:
    """Map -> context lengths of the study: ``gen_words.maps``, or for ``paper`` the maps and n of
    ``gen.fig4`` and ``gen.fig5`` together (registry order, n sorted)."""
    section = config["gen_words"]
    if section["maps"] != "paper":
        grid = {m: ns for m, ns in section["maps"].items() if ns is not None}
    else:
        grid = {}
        for figure in ("fig4", "fig5"):
            for m, ns in ((config["gen"].get(figure) or {}).get("maps") or {}).items():
                grid[m] = sorted(set(grid.get(m, [])) | set(ns or []))
    order = {name: i for i, name in enumerate(registry.names())}
    return {m: sorted(set(grid[m])) for m in sorted(grid, key=lambda m: (order.get(m, len(order)), m))}


def gen_words_d(config: dict) -> int:
    """The study's d: ``gen_words.d``, else ``gen.d``."""
    return int(config["gen_words"]["d"] or config["gen"]["d"])


def _run(params: Mapping[str, Any], files: JobFiles, *, chunk_mb: float) -> Any:
    """One job's table (``wordsens.studies.gen_words.run.words_table``); ``chunk_mb``: the working arrays of
    a chunk of words (it changes no number)."""
    from .run import words_table

    settings = GenWordsSettings.of(params)
    _, tokenizer, encoder = files.encoder(settings.model, setting="model.name")
    return words_table(tokenizer, encoder, files.pool(), settings, chunk_mb=chunk_mb, log=print)


GEN_WORDS_RULE = JobRule(
    name="gen_words",
    output="gen_words/{map}/{wsetting}/chunk{chunk}",
    constraints=lambda: {
        "map": "|".join(registry.names()),
        "wsetting": r"n\d+_N\d+_d\d+",
        "chunk": r"\d+",
    },
    run=_run,
    summary=("simulation", "training", "loss", "penalty", "setting", "word", "err", "gamma_min", "alignment"),
    # a job's start: torch, transformers and the encoder loaded, its vocabulary's rows (not yet fitted)
    coefficients={"gen_words:*": (8.0, 1.0)},
)


@dataclass(frozen=True, kw_only=True)
class GenWordsJob(Job):
    """A chunk of the simulations of one (map, n, N) with real words (``wordsens.studies.gen_words.run``)."""

    RULE: ClassVar[JobRule] = GEN_WORDS_RULE

    map: str
    n: int
    N: int
    d: int
    chunk_mb: float = 64.0
    settings: GenWordsSettings = field(compare=False, repr=False)

    @property
    def setting(self) -> str:
        return f"n{self.n}_N{self.N}_d{self.d}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"map": self.map, "wsetting": self.setting, "chunk": str(self.chunk)}

    @property
    def table(self) -> str:
        return "gen_words"

    @property
    def needs(self) -> tuple[str, ...]:
        """The review pool and model.name's files (its embedding layer gives every word's row)."""
        return ("pool", f"model:{self.settings.model}")

    @property
    def extras(self) -> dict[str, Any]:
        return {"chunk_mb": self.chunk_mb}

    def values(self) -> dict[str, Any]:
        return {"study": self.study, "data": self.data, "n": self.n, "N": self.N, "d": self.d}

    @property
    def rows(self) -> int:
        """Per simulation and (training, loss, penalty): the words' row and, with the continuous
        settings, one row of each."""
        losses = len(TRAININGS) * (2 + len(self.settings.penalties))
        per = len(SETTINGS) if self.settings.continuous else 1
        return len(self.settings.simulations) * losses * per


def _searches(section: dict) -> int:
    """The continuous searches of one simulation: every (training, loss) in each of the three settings."""
    return 3 * len(TRAININGS) * (2 + len(section["penalties"])) if section["continuous"] else 0


def _seconds(spec: Any, n: int, d: int, N: int, options: dict, section: dict, vocab: int) -> float:
    """CPU cost-model seconds of one simulation: its first stage and searches (the map's ``gen_seconds``: the
    three continuous settings' searches, in units of a Figure 4 search) and the scan of the vocabulary (a
    swaps scan of one position, exhaustive)."""
    values = spec.option_values(options)
    scan = swap_costs.scan_seconds(spec, n, d, values, vocab=vocab, screen=vocab, sample=vocab)
    return spec.gen_seconds(n, d, N, options, searches=max(_searches(section), 1)) + scan


def gen_words_jobs(config: dict, limits: Limits, numerics_version: str) -> list[GenWordsJob]:
    """One ``GenWordsJob`` per map, n, N and chunk of simulations (none without a ``gen_words`` section),
    with its settings and estimates: memory, the first stage and features (the map's ``gen_memory``) beside
    the float32 encoder the job loads and a chunk of words; time, ``_seconds`` per simulation."""
    section = config.get("gen_words")
    if not section:
        return []
    name = config["model"]["name"]
    vocab = int((model_config(name) or {}).get("vocab_size") or BERT_VOCAB)
    d = gen_words_d(config)
    try:
        length = max(max(ns) for ns in gen_words_maps(config).values())
        encoder = costs.encoder_memory(
            parameters=encoder_size(name), copies=1, batch=1, length=length, width=model_width(name) or d,
            heads=model_heads(name) or 12, detail=name,
        )  # fmt: skip
    except ValueError:  # not known without loading it: a BERT-Base-sized allowance
        encoder = costs.MemoryEstimate(int(110e6 * 4) + costs.TRANSFORMERS_OVERHEAD, f"{name}: BERT-Base size")
    jobs = []
    for map_name, ns in gen_words_maps(config).items():
        spec = registry.get(map_name)
        options = dict((section.get("options") or {}).get(map_name) or {})
        for n in ns:
            for N in section["N"]:
                # on a GPU, priced as a generalisation simulation of the map (its searches; the scan of the
                # vocabulary has no GPU measurement of its own)
                per = _seconds(spec, n, d, N, options, section, vocab)
                placed = work_placement(limits, f"gen:{map_name}", per, max(_searches(section), 1))
                pays = placed.pays(section["simulations_per_job"])
                device = job_device(section["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=pays)
                arrays = spec.gen_memory(n, d, N, options).bytes + int(section["chunk_mb"] * costs.MB)
                if device == "cuda":
                    host, on_device = CUDA_HOST_BYTES + encoder.bytes, arrays + CUDA_CONTEXT_BYTES
                else:
                    host = on_device = costs.MemoryEstimate(arrays + encoder.bytes, encoder.detail).job
                per = placed.seconds(device)
                for chunk, sims in enumerate(chunks(section["simulations"], section["simulations_per_job"])):
                    jobs.append(
                        GenWordsJob(
                            study="gen_words",
                            map=map_name,
                            data="imdb",
                            chunk=chunk,
                            device=device,
                            memory_bytes=host,
                            device_bytes=on_device,
                            seconds=per * len(sims),
                            arrays=arrays,
                            n=n,
                            N=N,
                            d=d,
                            chunk_mb=section["chunk_mb"],
                            settings=GenWordsSettings(
                                map=map_name,
                                options=options,
                                n=n,
                                N=N,
                                d=d,
                                simulations=sims,
                                model=name,
                                penalties=tuple(float(p) for p in section["penalties"]),
                                continuous=section["continuous"],
                                vocabulary=section["vocabulary"],
                                top_k=section["top_k"],
                                search=SearchOptions.of(section["search"]),
                                device=device,
                                seed=config["seed"],
                                numerics_version=numerics_version,
                            ),
                        )
                    )
    return jobs


def figures(plan: PlanView) -> list[Figure]:
    """Figures 4 and 5 with real words (``fig_gen_words``: the surrogate and direct losses;
    ``fig_gen_words_penalised``: the penalised loss) and the best words as text, where a job fits."""
    if not any(job.study == "gen_words" for job in plan.fit):
        return []
    category = "Beyond the paper"
    caption = beside(__file__, "report", "fig_gen_words.rst")
    outputs = {
        "figures": Output(stem="fig_gen_words", caption=caption, category=category),
        "text": Output(
            stem="gen_words_top.md",
            caption=beside(__file__, "report", "gen_words_top.rst"),
            category=category,
            text=True,
        ),
    }
    if plan.config["gen_words"]["penalties"]:
        outputs["penalised"] = Output(
            stem="fig_gen_words_penalised",
            caption=beside(__file__, "report", "fig_gen_words_penalised.rst"),
            category=category,
        )
    maps_ = gen_words_maps(plan.config)
    return [
        Figure(
            name="gen_words_figure",
            study="gen_words",
            kind="gen_words",
            tables={"table": "gen_words"},
            outputs=outputs,
            params={
                "columns": [[m, int(n)] for m, ns in maps_.items() for n in ns],
                "left_out": plan.left_out(study="gen_words"),
            },
        )
    ]


def problems(config: dict) -> list[str]:
    """What the gen_words section cannot run: unknown maps and options, a checkpoint's map, d beyond
    model.name's width, n too small for a word or beyond the pool's reviews, N beyond the pool."""
    section = config.get("gen_words")
    if not section:
        return []
    out: list[str] = []
    name = config["model"]["name"]
    facts = model_config(name)
    if facts is not None and facts.get("model_type") is not None and (problem := bert_family_problem(facts)):
        out.append(f"gen_words: the words go through model.name's embedding layer, and {problem}")
    d = gen_words_d(config)
    maps_ = gen_words_maps(config)
    if not maps_:
        out.append("gen_words.maps: no map (paper: gen.fig4 and gen.fig5 have none): give map -> n")
    for map_name, ns in maps_.items():
        options = (section.get("options") or {}).get(map_name)
        out += map_problems(f"gen_words.maps ({map_name})", map_name, options, [d])
        if min(ns) < 3:
            out.append(
                f"gen_words.maps.{map_name} has n = {min(ns)} < 3: a sample needs a word between [CLS] and [SEP]"
            )
        if max(ns) - 2 >= config["data"]["max_tokens"]:
            out.append(
                f"gen_words.maps.{map_name}: n = {max(ns)} needs reviews of at least {max(ns) - 2} words but the pool "
                f"keeps reviews of fewer than data.max_tokens = {config['data']['max_tokens']}: raise it or lower n"
            )
    width = model_width(name)
    if width is not None and d > width and section["d"] is not None:  # gen.d's own check names gen.d
        out.append(f"gen_words.d = {d} > the width {width} of model.name {name!r}: lower gen_words.d")
    if max(section["N"]) + 1 > config["data"]["pool_size"]:
        out.append(
            f"gen_words.N = {max(section['N'])} needs data.pool_size >= {max(section['N']) + 1} (N training reviews "
            "and the new one): raise data.pool_size or lower N"
        )
    for map_name in section.get("options") or {}:
        if map_name not in maps_:
            out.append(
                f"gen_words.options.{map_name}: the study runs no {map_name}; add it to gen_words.maps or drop it"
            )
    return out


def needs(config: dict) -> Needs:
    """The review pool and model.name (its embedding layer)."""
    return Needs(pool=True, encoders={"model.name": config["model"]["name"]}) if config.get("gen_words") else Needs()


def active(config: dict) -> bool:
    return bool(config.get("gen_words"))
