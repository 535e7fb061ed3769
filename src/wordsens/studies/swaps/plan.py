"""The jobs of the ``swaps`` study: real words put in place of a review's words, beside the continuous search.

One job per map and n (``SwapJob``, rule ``swaps``): on the first ``swaps.reviews`` reviews of the pool
with at least max(n) tokens, at ``swaps.positions`` word positions of each (seeded, [CLS] and [SEP]
never; the same positions at every n), the most damaging one-word substitution from the vocabulary of
the run's encoder (``model.name``) and the distribution of all of them, beside the continuous word
sensitivity at the radius the best word moves (``wordsens.studies.swaps.run`` computes them). A map of
a pre-trained checkpoint reads the encoder's first layer (its input is the embedding output, where a
substitution moves one row). Estimates: each position's scan (``wordsens.compute.swap_costs``) and
continuous searches (the map's cost model), the encoder in memory beside them. Torch is not imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...compute import costs, swap_costs
from ...compute.limits import Limits
from ...compute.placement import GpuRate
from ...data.models import (
    BERT_VOCAB,
    bert_family_problem,
    encoder_size,
    model_config,
    model_heads,
    model_positions,
    model_width,
)
from ...maps import registry
from ..jobs import CUDA_CONTEXT_BYTES, CUDA_HOST_BYTES, Job, JobFiles, JobRule, job_device
from ..placing import work_placement
from ..spec import Needs
from .settings import SwapSettings

__all__ = [
    "NUMERICS",
    "SWAPS_RULE",
    "SwapJob",
    "active",
    "needs",
    "swap_d",
    "swap_jobs",
    "swap_maps",
    "swap_options",
    "swap_problems",
]

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
NUMERICS = ("swaps", "swaps-2")


def swap_maps(config: dict) -> list[str]:
    """The maps of the study (``swaps.maps``; ``all``: every registered map with random weights), in the
    registry's order (the table's)."""
    maps = config["swaps"]["maps"]
    if maps == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    order = {name: i for i, name in enumerate(registry.names())}
    return sorted(maps, key=lambda name: (order.get(name, len(order)), name))


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
    out = []
    name = config["model"]["name"]
    facts = model_config(name)
    if facts is not None and facts.get("model_type") is not None and (problem := bert_family_problem(facts)):
        out.append(f"swaps: the substitutions go through model.name's embedding layer, and {problem}")
    names = set(registry.names())
    maps = swap_maps(config) if section["maps"] == "all" or set(section["maps"]) <= names else []
    unknown = [] if section["maps"] == "all" else sorted(set(section["maps"]) - names)
    if unknown:
        out.append(f"swaps.maps has unknown maps {unknown}; `wordsens maps` lists the registered ones")
    d, ns, width, positions = section["d"], _n(config), model_width(name), model_positions(name)
    if width is not None and d > width and not all(registry.get(m).checkpoint for m in maps):
        out.append(f"swaps.d = {d} exceeds the width {width} of model.name {name!r}: lower swaps.d")
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
    if max(ns) - 2 >= config["data"]["max_tokens"]:
        out.append(
            f"swaps.n = {max(ns)} needs reviews of at least {max(ns) - 2} words (WordPiece tokens) but the pool "
            f"keeps reviews of fewer than data.max_tokens = {config['data']['max_tokens']}: raise data.max_tokens "
            "or lower swaps.n"
        )
    if section["reviews"] > config["data"]["pool_size"]:
        out.append(
            f"swaps.reviews = {section['reviews']} > data.pool_size = {config['data']['pool_size']}: the reviews "
            "come from the pool: lower swaps.reviews or raise data.pool_size"
        )
    return out


def _run(params: Mapping[str, Any], files: JobFiles, *, chunk_mb: float) -> Any:
    """One job's table (``wordsens.studies.swaps.run.swap_table``); ``chunk_mb``: the working arrays of a
    chunk of words (it changes no number)."""
    from .run import swap_table

    settings = SwapSettings.of(params)
    source, tokenizer, encoder = files.encoder(settings.model, setting="model.name")
    return swap_table(tokenizer, encoder, files.pool(), settings, source=source, chunk_mb=chunk_mb, log=print)


SWAPS_RULE = JobRule(
    name="swaps",
    output="swaps/{map}/{setting}",
    constraints=lambda: {"map": "|".join(registry.names()), "setting": r"d\d+_n\d+"},
    run=_run,
    summary=("position", "original", "best_word", "s_words", "continuous", "ratio", "mean"),
    # a swaps job's start: torch, transformers and the encoder loaded, its vocabulary's rows (not yet fitted)
    coefficients={"swaps:*": (8.0, 1.0)},
    gpu_rates={  # fitted on the H200 run (docs/gpu.md)
        "swaps:rf": GpuRate(0.612, 0.00175),
        "swaps:raf": GpuRate(0.246, 0.0388),
        "swaps:relu_raf": GpuRate(0.0967, 0.103),
    },
)


@dataclass(frozen=True, kw_only=True)
class SwapJob(Job):
    """The substitutions of the swaps study for one map at one (d, n) (``wordsens.studies.swaps.run``)."""

    RULE: ClassVar[JobRule] = SWAPS_RULE

    map: str
    d: int
    n: int
    chunk_mb: float = 64.0
    settings: SwapSettings = field(compare=False, repr=False)

    @property
    def setting(self) -> str:
        return f"d{self.d}_n{self.n}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"map": self.map, "setting": self.setting}

    @property
    def table(self) -> str:
        return "swaps"

    @property
    def point(self) -> str:
        return f"swaps {self.map} {self.setting}"

    @property
    def needs(self) -> tuple[str, ...]:
        """The review pool and model.name's files (its embedding layer gives every word's row)."""
        return ("pool", f"model:{self.settings.model}")

    @property
    def extras(self) -> dict[str, Any]:
        return {"chunk_mb": self.chunk_mb}

    def values(self) -> dict[str, Any]:
        return {"study": self.study, "data": self.data, "d": self.d, "n": self.n}

    @property
    def rows(self) -> int:
        """One row per review and position."""
        p = self.settings
        return p.reviews * (self.n - 2 if p.positions == "all" else int(p.positions))


def _encoder_memory(config: dict) -> costs.MemoryEstimate:
    """The float32 encoder a swaps job loads (model.name), from its config.json; a BERT-Base-sized
    allowance where that is not known without loading it."""
    name = config["model"]["name"]
    width = model_width(name) or config["swaps"]["d"]
    try:
        return costs.encoder_memory(
            parameters=encoder_size(name), copies=1, batch=1, length=max(_n(config)), width=width,
            heads=model_heads(name) or 12, detail=name,
        )  # fmt: skip
    except ValueError:
        return costs.MemoryEstimate(int(110e6 * 4) + costs.TRANSFORMERS_OVERHEAD, f"{name}: BERT-Base size")


def swap_jobs(config: dict, limits: Limits, numerics_version: str) -> list[SwapJob]:
    """One ``SwapJob`` per map of ``swap_maps`` and n of ``swaps.n`` (none without a ``swaps`` section),
    with its settings (what its rows depend on) and estimates: memory, a position's scan
    (``swap_costs.scan_memory``) beside the float32 encoder the job loads (``costs.encoder_memory``);
    time, per row the scan (``swap_costs.scan_seconds``) and one or two continuous searches (the map's
    ``ws_seconds``: at the best word's radius, and at ``sqrt(d)`` with ``swaps.sqrt_d``)."""
    section = config.get("swaps")
    if not section:
        return []
    name = config["model"]["name"]
    vocab = int((model_config(name) or {}).get("vocab_size") or BERT_VOCAB)
    width = model_width(name) or section["d"]
    encoder = _encoder_memory(config)
    jobs = []
    for map_name in swap_maps(config):
        spec = registry.get(map_name)
        options = swap_options(config, map_name)
        d = swap_d(config, map_name)
        for n in _n(config):
            rows = section["reviews"] * (n - 2 if section["positions"] == "all" else section["positions"])
            values = spec.option_values(options)
            model = swap_costs.scan_seconds(  # one row on the CPU: the cost models
                spec, n, d, values, vocab=vocab, screen=section["screen"], sample=section["sample"]
            ) + (1 + int(section["sqrt_d"])) * spec.ws_seconds(n, d, values, max_steps=section["max_steps"])
            placed = work_placement(limits, f"swaps:{map_name}", model, 1)
            pays = placed.pays(rows)
            device = job_device(section["device"], limits, prefers_gpu=spec.cost.prefers_gpu, gpu_pays=pays)
            chunk = swap_costs.chunk_size(spec, n, d, values, chunk_mb=section["chunk_mb"], dtype=spec.settings.dtype)
            scan = swap_costs.scan_memory(
                spec, n, d, values, vocab=vocab, width=width, chunk=chunk, dtype=spec.settings.dtype
            )
            arrays = max(scan.bytes, spec.ws_memory(n, d, values).bytes)
            per_row = placed.seconds(device)
            if device == "cuda":
                host, on_device = CUDA_HOST_BYTES + encoder.bytes, arrays + CUDA_CONTEXT_BYTES
            else:
                host = on_device = costs.MemoryEstimate(arrays + encoder.bytes, scan.detail).job
            jobs.append(
                SwapJob(
                    study="swaps",
                    map=map_name,
                    data="imdb",
                    device=device,
                    memory_bytes=host,
                    device_bytes=on_device,
                    seconds=per_row * rows,
                    arrays=arrays,
                    threads=config["ws"]["threads"],
                    d=d,
                    n=n,
                    chunk_mb=section["chunk_mb"],
                    settings=_settings(config, map_name, d, n, options, device, numerics_version),
                )
            )
    return jobs


def _settings(
    config: dict, map_name: str, d: int, n: int, options: dict, device: str, numerics_version: str
) -> SwapSettings:
    section = config["swaps"]
    return SwapSettings(
        map=map_name,
        d=d,
        n=n,
        options=options,
        model=config["model"]["name"],
        reviews=section["reviews"],
        positions=section["positions"],
        n_min=min(_n(config)),
        n_max=max(_n(config)),
        top_k=section["top_k"],
        vocabulary=section["vocabulary"],
        screen=section["screen"],
        sample=section["sample"],
        sqrt_d=section["sqrt_d"],
        max_steps=section["max_steps"],
        device=device,
        seed=config["seed"],
        numerics_version=numerics_version,
    )


def needs(config: dict) -> Needs:
    """The review pool and model.name (its embedding layer)."""
    return Needs(pool=True, encoders={"model.name": config["model"]["name"]}) if config.get("swaps") else Needs()


def active(config: dict) -> bool:
    return bool(config.get("swaps"))
