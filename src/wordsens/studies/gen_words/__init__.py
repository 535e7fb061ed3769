"""Can one real word carry a learned label? Figures 4 and 5 with real-word substitutions (the configuration's
``gen_words``; docs/studies.md): one job per map, n, N and chunk of simulations (``GenWordsJob``), its rows
(``run``), its claims (``claims``), its figures and the best words as text (``figure``), and the command
``wordsens gen-words`` for one simulation (``cli``). Torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute import costs, swap_costs
from ...compute.limits import Limits
from ...compute.placement import Placement, placed
from ...data.models import BERT_VOCAB, model_config
from ...maps import registry
from ..checks import bert_problem, map_problems, pool_problem, width_problem, words_problem
from ..jobs import Job, JobFiles, chunks
from ..spec import Figure, Needs, Output, PlanView, StudySpec, beside, schema_beside
from ..swaps import encoder_memory, in_registry_order

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
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
    return {m: sorted(set(grid[m])) for m in in_registry_order(grid)}


def gen_words_d(config: dict) -> int:
    """The study's d: ``gen_words.d``, else ``gen.d``."""
    return int(config["gen_words"]["d"] or config["gen"]["d"])


@dataclass(frozen=True, kw_only=True)
class GenWordsJob(Job):
    """A chunk of the ``simulations`` of one (map, n, N) at d with real words: the encoder ``model`` whose
    vocabulary and embedding layer give the rows, the penalties of the penalised loss, whether the continuous
    settings run beside, the vocabulary, the top words kept, the continuous searches' settings (``search``).
    ``chunk_mb``: the working arrays of a chunk of words (it changes no number)."""

    rule = "gen_words"
    output = "gen_words/{map}/{setting}/chunk{chunk}"
    summary = ("simulation", "training", "loss", "penalty", "setting", "word", "err", "gamma_min", "alignment")
    # a job's start: torch, transformers and the encoder loaded, its vocabulary's rows (not yet fitted)
    coefficients: ClassVar = {"gen_words:*": (8.0, 1.0)}
    EXTRAS = ("chunk_mb",)

    data: str = "imdb"
    map: str
    options: Mapping[str, Any] = field(default_factory=dict)
    n: int
    N: int
    d: int
    simulations: tuple[int, ...]
    model: str
    penalties: tuple[float, ...]
    continuous: bool
    vocabulary: str
    top_k: int
    search: Mapping[str, Any] = field(default_factory=dict)
    chunk_mb: float = 64.0

    @property
    def setting(self) -> str:
        return f"n{self.n}_N{self.N}_d{self.d}"

    def values(self) -> dict[str, Any]:
        return {"study": self.study, "data": self.data, "n": self.n, "N": self.N, "d": self.d}

    @property
    def rows(self) -> int:
        """Per simulation and (training, loss, penalty): the words' row and, with the continuous settings, one
        row of each."""
        losses = len(TRAININGS) * (2 + len(self.penalties))
        return len(self.simulations) * losses * (len(SETTINGS) if self.continuous else 1)

    def run(self, files: JobFiles) -> Any:
        from .run import words_table

        _, tokenizer, encoder = files.encoder(self.model, setting="model.name")
        return words_table(tokenizer, encoder, files.pool(), self, chunk_mb=self.chunk_mb, log=print)


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


def jobs(config: dict, limits: Limits, version: str) -> list[GenWordsJob]:
    """One job per map, n, N and chunk of simulations, with its estimates: memory, the first stage and
    features (the map's ``gen_memory``) beside the float32 encoder the job loads and a chunk of words; time,
    ``_seconds`` per simulation."""
    section = config["gen_words"]
    name = config["model"]["name"]
    vocab = int((model_config(name) or {}).get("vocab_size") or BERT_VOCAB)
    d, per_job = gen_words_d(config), section["simulations_per_job"]
    search = {key: value for key, value in section["search"].items() if value is not None}
    grid = gen_words_maps(config)
    encoder = encoder_memory(name, max((n for ns in grid.values() for n in ns), default=1), d)
    out = []
    for map_name, ns in grid.items():
        spec = registry.get(map_name)
        options = dict((section.get("options") or {}).get(map_name) or {})
        for n in ns:
            for N in section["N"]:
                # on a GPU, priced as a generalisation simulation of the map (its searches; the scan of the
                # vocabulary has no GPU measurement of its own)
                seconds = _seconds(spec, n, d, N, options, section, vocab)
                unit = Placement.on(limits, f"gen:{map_name}", seconds, max(_searches(section), 1))
                device = unit.device(section["device"], limits, per_job, spec.cost.prefers_gpu)
                arrays = spec.gen_memory(n, d, N, options).bytes + int(section["chunk_mb"] * costs.MB)
                out += [
                    GenWordsJob(
                        study="gen_words",
                        map=map_name,
                        device=device,
                        chunk=chunk,
                        cost=placed(arrays, device, unit.seconds(device) * len(sims), resident=encoder.bytes),
                        needs=("pool", f"model:{name}"),
                        options=options,
                        n=n,
                        N=N,
                        d=d,
                        simulations=sims,
                        model=name,
                        penalties=tuple(float(p) for p in section["penalties"]),
                        search=search,
                        seed=config["seed"],
                        numerics_version=version,
                        **{key: section[key] for key in ("continuous", "vocabulary", "top_k", "chunk_mb")},
                    )
                    for chunk, sims in enumerate(chunks(section["simulations"], per_job))
                ]
    return out


def figures(plan: PlanView) -> list[Figure]:
    """Figures 4 and 5 with real words (``fig_gen_words``: the surrogate and direct losses;
    ``fig_gen_words_penalised``: the penalised loss) and the best words as text, where a job fits."""
    if not any(job.study == "gen_words" for job in plan.fit):
        return []
    caption = beside(__file__, "report", "fig_gen_words_penalised.rst")
    text = Output(
        stem="gen_words_top.md",
        caption=beside(__file__, "report", "gen_words_top.rst"),
        category="Beyond the paper",
        text=True,
    )
    outputs: dict[str, Output | str] = {"figures": "fig_gen_words", "text": text}
    if plan.config["gen_words"]["penalties"]:
        outputs["penalised"] = Output(stem="fig_gen_words_penalised", caption=caption, category="Beyond the paper")
    maps_ = gen_words_maps(plan.config)
    return [
        Figure(
            name="gen_words_figure",
            study="gen_words",
            tables={"table": "gen_words"},
            outputs=outputs,
            caption=beside(__file__, "report", "fig_gen_words.rst"),
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
    name = config["model"]["name"]
    out = bert_problem("gen_words", name, "the words go through model.name's embedding layer")
    d = gen_words_d(config)
    maps_ = gen_words_maps(config)
    if not maps_:
        out.append("gen_words.maps: no map (paper: gen.fig4 and gen.fig5 have none): give map -> n")
    for map_name, ns in maps_.items():
        out += map_problems(f"gen_words.maps ({map_name})", map_name, (section.get("options") or {}).get(map_name), [d])
        if min(ns) < 3:
            out.append(
                f"gen_words.maps.{map_name} has n = {min(ns)} < 3: a sample needs a word between [CLS] and [SEP]"
            )
        out += words_problem(f"gen_words.maps.{map_name}.n", max(ns), config)
    if section["d"] is not None:  # gen.d's own check names gen.d
        out += width_problem("gen_words.d", d, config)
    out += pool_problem("gen_words.N", max(section["N"]), config, "N")
    out += [
        f"gen_words.options.{map_name}: the study runs no {map_name}; add it to gen_words.maps or drop it"
        for map_name in section.get("options") or {}
        if map_name not in maps_
    ]
    return out


SPEC = StudySpec(
    name="gen_words",
    title="Figures 4-5 with real words: can one real word carry a learned label",
    section="gen_words",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(GenWordsJob,),
    numerics=NUMERICS,
    figures=figures,
    draw="wordsens.studies.gen_words.figure:draw",
    claims="wordsens.studies.gen_words.claims:gen_words_claims",
    definitions="wordsens.studies.gen_words.claims:DEFINITIONS",
    needs=lambda config: (
        Needs(pool=True, encoders={"model.name": config["model"]["name"]}) if config.get("gen_words") else Needs()
    ),
    problems=problems,
    coefficients={"gen_words_figure": (7.0, None)},
    commands={"gen-words": "wordsens.studies.gen_words.cli"},
)
