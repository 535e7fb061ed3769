"""Real words against the continuous worst case (the configuration's ``swaps``; docs/studies.md, "Real words:
the swaps study"): one job per map and n (``SwapJob``), its rows (``run``), its claims (``claims``), its figure
and the readable top substitutions (``figure``) and the command ``wordsens swap`` (``cli``). Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute import costs, swap_costs
from ...compute.limits import Limits
from ...compute.placement import GpuRate, Placement, placed
from ...data.models import BERT_VOCAB, encoder_size, model_config, model_heads, model_positions, model_width
from ...maps import registry
from ..checks import bert_problem, pool_problem, width_problem, words_problem
from ..jobs import Job, JobFiles
from ..spec import Figure, Needs, Output, PlanView, StudySpec, beside, schema_beside

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
NUMERICS = ("swaps", "swaps-2")


@dataclass(frozen=True, kw_only=True)
class SwapJob(Job):
    """The substitutions for one map at one (d, n) with the map's options: on ``reviews`` reviews of the
    encoder ``model``'s pool (reviews with ``n_max`` tokens), at ``positions`` word positions each (drawn
    below ``n_min``: the same at every n), the ``top_k`` words kept from the ``vocabulary``, the screen and its
    sample, the continuous searches (their step cap; ``sqrt_d``: also at radius sqrt(d)). ``chunk_mb``: the
    working arrays of a chunk of words (it changes no number)."""

    rule = "swaps"
    output = "swaps/{map}/{setting}"
    summary = ("position", "original", "best_word", "s_words", "continuous", "ratio", "mean")
    # a swaps job's start: torch, transformers and the encoder loaded, its vocabulary's rows (not yet fitted)
    coefficients: ClassVar = {"swaps:*": (8.0, 1.0)}
    gpu_rates: ClassVar = {  # fitted on the H200 run (docs/gpu.md)
        "swaps:rf": GpuRate(0.612, 0.00175),
        "swaps:raf": GpuRate(0.246, 0.0388),
        "swaps:relu_raf": GpuRate(0.0967, 0.103),
    }
    EXTRAS = ("chunk_mb",)

    data: str = "imdb"
    map: str
    d: int
    n: int
    options: Mapping[str, Any] = field(default_factory=dict)
    model: str
    reviews: int
    positions: int | str
    n_min: int
    n_max: int
    top_k: int
    vocabulary: str
    screen: int
    sample: int
    sqrt_d: bool
    max_steps: int
    chunk_mb: float = 64.0

    @property
    def setting(self) -> str:
        return f"d{self.d}_n{self.n}"

    @property
    def rows(self) -> int:
        """One row per review and position."""
        return self.reviews * (self.n - 2 if self.positions == "all" else int(self.positions))

    def values(self) -> dict[str, Any]:
        return {"study": self.study, "data": self.data, "d": self.d, "n": self.n}

    def run(self, files: JobFiles) -> Any:
        from .run import swap_table

        source, tokenizer, encoder = files.encoder(self.model, setting="model.name")
        return swap_table(tokenizer, encoder, files.pool(), self, source=source, chunk_mb=self.chunk_mb, log=print)


def in_registry_order(names: Iterable[str]) -> list[str]:
    """``names`` in the registry's order (the tables'), unknown names last."""
    order = {name: i for i, name in enumerate(registry.names())}
    return sorted(names, key=lambda name: (order.get(name, len(order)), name))


def swap_maps(config: dict) -> list[str]:
    """The maps of the study (``swaps.maps``; ``all``: every registered map with random weights), in the
    registry's order (the table's)."""
    maps = config["swaps"]["maps"]
    if maps == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    return in_registry_order(maps)


def swap_options(config: dict, map_name: str) -> dict:
    """The options of a map in the study: ``swaps.options`` of the map; a pre-trained checkpoint's
    map reads the run's encoder (``model.name``) at layer 1 (where a substitution moves one row)."""
    options = dict((config["swaps"].get("options") or {}).get(map_name) or {})
    if registry.get(map_name).checkpoint:
        options = {**options, "model": config["model"]["name"], "layer": 1}
    return options


def swap_d(config: dict, map_name: str) -> int:
    """The d of a map in the study: ``swaps.d``; a checkpoint's map reads the encoder's rows whole (its
    width, where it is known without loading the encoder)."""
    width = model_width(config["model"]["name"])
    return width if registry.get(map_name).checkpoint and width is not None else int(config["swaps"]["d"])


def _n(config: dict) -> list[int]:
    return sorted(set(config["swaps"]["n"]))


def swap_problems(config: dict) -> list[str]:
    """What the ``swaps`` section cannot run, one line per problem naming the key and the fix."""
    section = config.get("swaps")
    if not section:
        return []
    name = config["model"]["name"]
    out = bert_problem("swaps", name, "the substitutions go through model.name's embedding layer")
    names = set(registry.names())
    maps = swap_maps(config) if section["maps"] == "all" or set(section["maps"]) <= names else []
    unknown = [] if section["maps"] == "all" else sorted(set(section["maps"]) - names)
    if unknown:
        out.append(f"swaps.maps has unknown maps {unknown}; `wordsens maps` lists the registered ones")
    d, ns, positions = section["d"], _n(config), model_positions(name)
    if not all(registry.get(m).checkpoint for m in maps):
        out += width_problem("swaps.d", d, config)
    for map_name in maps:
        spec = registry.get(map_name)
        options = dict((section.get("options") or {}).get(map_name) or {})
        if spec.checkpoint and "layer" in options and options["layer"] != 1:
            out.append(
                f"swaps.options.{map_name}.layer = {options['layer']}: a substitution moves one row of the "
                "embedding output, the input of layer 1 only (a later layer's input mixes the tokens): remove it"
            )
        try:
            spec.option_values({k: v for k, v in options.items() if k in spec.options})
            if spec.shapes is not None and not spec.checkpoint:
                spec.shapes(max(ns), d, **spec.option_values(options))
        except ValueError as err:
            out.append(f"swaps.options.{map_name}: {err}")
    if min(ns) < 3:
        out.append(f"swaps.n has {min(ns)} < 3: a sample needs a word between [CLS] and [SEP]")
    if positions is not None and max(ns) > positions:
        out.append(f"swaps.n has {max(ns)} > the {positions} positions of {name}: lower swaps.n")
    if section["positions"] != "all" and section["positions"] > min(ns) - 2:
        out.append(
            f"swaps.positions = {section['positions']} > the {min(ns) - 2} word positions of the smallest n = "
            f"{min(ns)}: lower swaps.positions or raise the smallest n"
        )
    return out + words_problem("swaps.n", max(ns), config) + pool_problem("swaps.reviews", section["reviews"], config)


def encoder_memory(name: str, length: int, width: int) -> costs.MemoryEstimate:
    """The float32 encoder ``name`` a job of the real-word studies loads, reading ``length`` tokens, from its
    config.json (``width``: where that does not give it); a BERT-Base-sized allowance where the encoder's size is
    not known without loading it."""
    try:
        return costs.encoder_memory(
            parameters=encoder_size(name), copies=1, batch=1, length=length, width=model_width(name) or width,
            heads=model_heads(name) or 12, detail=name,
        )  # fmt: skip
    except ValueError:
        return costs.MemoryEstimate(int(110e6 * 4) + costs.TRANSFORMERS_OVERHEAD, f"{name}: BERT-Base size")


# the fields of a SwapJob that the section gives as they are
_SECTION_FIELDS = ("reviews", "positions", "top_k", "vocabulary", "screen", "sample", "sqrt_d", "max_steps", "chunk_mb")


def jobs(config: dict, limits: Limits, version: str) -> list[SwapJob]:
    """One job per map of ``swap_maps`` and n of ``swaps.n``, with its estimates: memory, a position's scan
    (``swap_costs.scan_memory``) beside the float32 encoder the job loads (``costs.encoder_memory``); time,
    per row the scan (``swap_costs.scan_seconds``) and one or two continuous searches (the map's
    ``ws_seconds``: at the best word's radius, and at ``sqrt(d)`` with ``swaps.sqrt_d``)."""
    section = config["swaps"]
    name = config["model"]["name"]
    vocab = int((model_config(name) or {}).get("vocab_size") or BERT_VOCAB)
    width = model_width(name) or section["d"]
    encoder = encoder_memory(name, max(_n(config)), section["d"])
    out = []
    for map_name in swap_maps(config):
        spec = registry.get(map_name)
        options = swap_options(config, map_name)
        values = spec.option_values(options)
        d = swap_d(config, map_name)
        for n in _n(config):
            rows = section["reviews"] * (n - 2 if section["positions"] == "all" else section["positions"])
            model = swap_costs.scan_seconds(  # one row on the CPU: the cost models
                spec, n, d, values, vocab=vocab, screen=section["screen"], sample=section["sample"]
            ) + (1 + int(section["sqrt_d"])) * spec.ws_seconds(n, d, values, max_steps=section["max_steps"])
            unit = Placement.on(limits, f"swaps:{map_name}", model, 1)
            device = unit.device(section["device"], limits, rows, spec.cost.prefers_gpu)
            chunk = swap_costs.chunk_size(spec, n, d, values, chunk_mb=section["chunk_mb"], dtype=spec.settings.dtype)
            scan = swap_costs.scan_memory(
                spec, n, d, values, vocab=vocab, width=width, chunk=chunk, dtype=spec.settings.dtype
            )
            arrays = max(scan.bytes, spec.ws_memory(n, d, values).bytes)
            out.append(
                SwapJob(
                    study="swaps",
                    map=map_name,
                    device=device,
                    cost=placed(
                        arrays,
                        device,
                        unit.seconds(device) * rows,
                        resident=encoder.bytes,
                        threads=config["ws"]["threads"],
                    ),
                    needs=("pool", f"model:{name}"),
                    d=d,
                    n=n,
                    options=options,
                    model=name,
                    n_min=min(_n(config)),
                    n_max=max(_n(config)),
                    seed=config["seed"],
                    numerics_version=version,
                    **{key: section[key] for key in _SECTION_FIELDS},
                )
            )
    return out


def figures(plan: PlanView) -> list[Figure]:
    """``fig_swaps`` and ``tables/swaps_top.md`` where the study has a job that fits."""
    if not any(job.study == "swaps" for job in plan.fit):
        return []
    text = Output(
        stem="swaps_top.md", caption=beside(__file__, "report", "swaps_top.rst"), category="Beyond the paper", text=True
    )
    return [
        Figure(
            name="swaps_figure",
            study="swaps",
            tables={"table": "swaps"},
            outputs={"figures": "fig_swaps", "text": text},
            caption=beside(__file__, "report", "fig_swaps.rst"),
            params={"left_out": plan.left_out(study="swaps")},
        )
    ]


SPEC = StudySpec(
    name="swaps",
    title="real words against the continuous worst case, scored exactly over an encoder's vocabulary",
    section="swaps",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(SwapJob,),
    numerics=NUMERICS,
    figures=figures,
    draw="wordsens.studies.swaps.figure:draw",
    claims="wordsens.studies.swaps.claims:swap_claims",
    definitions="wordsens.studies.swaps.claims:DEFINITIONS",
    needs=lambda config: (
        Needs(pool=True, encoders={"model.name": config["model"]["name"]}) if config.get("swaps") else Needs()
    ),
    problems=swap_problems,
    coefficients={"swaps_figure": (4.0, None)},
    commands={"swap": "wordsens.studies.swaps.cli"},
)
