"""The jobs of the ``swaps`` study: real words put in place of a review's words, beside the continuous search.

One job per map and n (``SwapJob``, rule ``swaps``): on the first ``swaps.reviews`` reviews of the pool
with at least max(n) tokens, at ``swaps.positions`` word positions of each (seeded, [CLS] and [SEP]
never; the same positions at every n), the most damaging one-word substitution from the vocabulary of
the run's encoder (``model.name``) and the distribution of all of them, beside the continuous word
sensitivity at the radius the best word moves (``wordsens.experiments.swaps`` computes them). A map of
a pre-trained checkpoint reads the encoder's first layer (its input is the embedding output, where a
substitution moves one row). Estimates: each position's scan (``wordsens.compute.swap_costs``) and
continuous searches (the map's cost model), the encoder in memory beside them. Torch is not imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import NUMERICS_VERSIONS
from ..compute import costs, swap_costs
from ..data.models import bert_family_problem, model_config, model_heads, model_positions, model_width
from ..maps import registry
from ..seeds import canonical
from .jobs import CUDA_CONTEXT_BYTES, CUDA_HOST_BYTES, Job, job_device
from .limits import Limits
from .placing import work_placement
from .trained import BERT_VOCAB, encoder_size

__all__ = ["SwapJob", "swap_d", "swap_jobs", "swap_maps", "swap_options", "swap_problems"]


def swap_maps(config: dict) -> list[str]:
    """The maps of the study (``swaps.maps``; ``all``: every registered map with random weights)."""
    maps = config["swaps"]["maps"]
    if maps == "all":
        return [name for name in registry.names() if not registry.get(name).checkpoint]
    return list(maps)


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


@dataclass(frozen=True)
class SwapJob(Job):
    """The substitutions of the swaps study for one map at one (d, n) (``wordsens.experiments.swaps``)."""

    d: int
    n: int
    study: str = "swaps"

    @property
    def setting(self) -> str:
        return f"d{self.d}_n{self.n}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"map": self.map, "setting": self.setting}

    @property
    def key(self) -> str:
        return f"swaps/{self.map}/{self.setting}"

    @property
    def point(self) -> str:
        return f"swaps {self.map} {self.setting}"

    @property
    def family(self) -> str:
        """``swaps:<map>``: a kind of its own in the time calibration (``wordsens.compute.timing``)."""
        return f"swaps:{self.map}"

    @property
    def store(self) -> str | None:
        """The job reads the review pool and the encoder itself, not an embedding store."""
        return None

    @property
    def rows(self) -> int:
        """One row per review and position."""
        p = self.params
        return p["reviews"] * (self.n - 2 if p["positions"] == "all" else p["positions"])


def swap_jobs(
    config: dict, limits: Limits | None = None, numerics_version: str = NUMERICS_VERSIONS.get("swaps", "swaps-1")
) -> list[SwapJob]:
    """One ``SwapJob`` per map of ``swap_maps`` and n of ``swaps.n`` (none without a ``swaps`` section),
    with its params (what its rows depend on) and estimates: memory, a position's scan
    (``swap_costs.scan_memory``) beside the float32 encoder the job loads (``costs.encoder_memory``);
    time, per row the scan (``swap_costs.scan_seconds``) and one or two continuous searches (the map's
    ``ws_seconds``: at the best word's radius, and at ``sqrt(d)`` with ``swaps.sqrt_d``)."""
    section = config.get("swaps")
    if not section:
        return []
    limits = limits if limits is not None else Limits(cpu=0, gpu=None)
    name = config["model"]["name"]
    facts = model_config(name) or {}
    vocab = int(facts.get("vocab_size") or BERT_VOCAB)
    width = model_width(name) or section["d"]
    heads = model_heads(name) or 12
    try:
        encoder = costs.encoder_memory(
            parameters=encoder_size(name), copies=1, batch=1, length=max(_n(config)), width=width, heads=heads,
            detail=name,
        )  # fmt: skip
    except ValueError:  # not known without loading it: a BERT-Base-sized allowance
        encoder = costs.MemoryEstimate(int(110e6 * 4) + costs.TRANSFORMERS_OVERHEAD, f"{name}: BERT-Base size")
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
            search = spec.ws_memory(n, d, values)
            arrays = max(scan.bytes, search.bytes)
            per_row = placed.seconds(device)
            host_arrays = costs.MemoryEstimate(arrays + encoder.bytes, f"{scan.detail}; {encoder.detail}")
            if device == "cuda":
                host, on_device = CUDA_HOST_BYTES + encoder.bytes, arrays + CUDA_CONTEXT_BYTES
            else:
                host = on_device = host_arrays.job
            params = canonical(
                {
                    "map": map_name,
                    "d": d,
                    "n": n,
                    "options": options,
                    "model": name,
                    "reviews": section["reviews"],
                    "positions": section["positions"],
                    "n_min": min(_n(config)),
                    "n_max": max(_n(config)),
                    "top_k": section["top_k"],
                    "vocabulary": section["vocabulary"],
                    "screen": section["screen"],
                    "sample": section["sample"],
                    "sqrt_d": section["sqrt_d"],
                    "max_steps": section["max_steps"],
                    "device": device,
                    "seed": config["seed"],
                    "numerics_version": numerics_version,
                }
            )
            jobs.append(
                SwapJob(
                    "swaps", map_name, "imdb", 0, device, host, on_device, per_row * rows, arrays, None, params, d, n
                )
            )
    return jobs
