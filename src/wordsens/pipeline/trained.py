"""The jobs of the ``trained`` study: a pre-trained encoder's own layers against their random models.

One job per encoder layer (``TrainedJob``, rule ``trained``): on the hidden states entering the
layer for the first ``trained.reviews`` reviews of the pool that have at least max(n) tokens, the
word sensitivity of each trained map of ``trained.maps`` and of its random model (at every n and
every ``trained.normalise``), and of every head of the trained attention at ``trained.head_n``
(``wordsens.experiments.trained`` computes them). The facts planning needs (layers, heads, width)
come from ``wordsens.data.models`` without loading the model; the estimates from the maps' cost
models and the encoder's size in its config.json (``wordsens.compute.costs``). Torch is not imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import NUMERICS_VERSIONS
from ..compute import costs
from ..data.models import (
    bert_family_problem,
    model_config,
    model_heads,
    model_layers,
    model_positions,
    model_vocab_size,
    model_width,
)
from ..maps import registry
from ..seeds import canonical
from .jobs import Job

__all__ = [
    "BERT_VOCAB",
    "RANDOM_MODELS",
    "TrainedJob",
    "encoder_size",
    "trained_jobs",
    "trained_layers",
    "trained_model",
    "trained_problems",
]

# The random model of each trained map, at the same d and number of heads (searched on the same samples)
RANDOM_MODELS = registry.TRAINED_RANDOM_MODELS


# The vocabulary counted where an encoder's config.json does not say (a demo or well-known Hub name):
# BERT's uncased WordPiece, the largest of the encoders wordsens knows by name.
BERT_VOCAB = 30_522


def encoder_size(name: str) -> int:
    """Parameters of the encoder ``name`` (``costs.encoder_parameters``) from what its config.json says
    without loading it (``wordsens.data.models``): width, layers and positions, the vocabulary
    (``BERT_VOCAB`` where unknown), ``intermediate_size`` and ``type_vocab_size`` (BERT's 4 x width
    and 2 where unknown); ValueError where the width or layers are unknown."""
    width, layers = model_width(name), model_layers(name)
    if width is None or layers is None:
        raise ValueError(f"the width and layers of {name!r} are not known without loading it")
    facts = model_config(name) or {}
    return costs.encoder_parameters(
        width=width,
        layers=layers,
        vocab=model_vocab_size(name) or BERT_VOCAB,
        positions=model_positions(name) or 512,
        intermediate=facts.get("intermediate_size"),
        type_vocab=facts.get("type_vocab_size") or 2,
    )


def trained_model(config: dict) -> str:
    """The encoder the study measures: ``trained.model``, else ``model.name``."""
    return str(config["trained"]["model"] or config["model"]["name"])


def trained_layers(config: dict) -> list[int]:
    """The 1-based layers of the study (``trained.layers``; ``all``: every layer of the encoder);
    ValueError where ``all`` cannot be resolved without the model's files."""
    section = config["trained"]
    if section["layers"] != "all":
        return sorted(set(section["layers"]))
    count = model_layers(trained_model(config))
    if count is None:
        raise ValueError(_unknown(config))
    return list(range(1, count + 1))


def _key(config: dict) -> str:
    """The key that names the study's encoder, as the user set it."""
    if config["trained"]["model"] is None:
        return f"trained.model (null: model.name = {config['model']['name']!r})"
    return f"trained.model {config['trained']['model']!r}"


def _unknown(config: dict) -> str:
    name = trained_model(config)
    return (
        f"{_key(config)}: its config.json (layers, heads, width) is not known without downloading it (not a "
        "local folder, a packaged or demo encoder, nor in the Hugging Face cache): point trained.model at a "
        f"local folder saved with save_pretrained, or fetch the file once: huggingface-cli download {name} config.json"
    )


def trained_problems(config: dict) -> list[str]:
    """What the ``trained`` section cannot run, one line per problem naming the key and the fix."""
    section = config.get("trained")
    if not section:
        return []
    name = trained_model(config)
    facts = model_config(name)
    if facts is None:
        return [_unknown(config)]
    problem = bert_family_problem(facts)
    if problem is not None:
        return [f"{_key(config)}: {problem}: choose a BERT-family encoder (e.g. minilm)"]
    layers, heads, width = model_layers(name), model_heads(name), model_width(name)
    if layers is None or heads is None or width is None:
        return [f"{_key(config)}: its config.json lacks num_hidden_layers, num_attention_heads or hidden_size"]
    out = []
    if True not in section["normalise"]:
        out.append(
            "trained.normalise has no true: fig_trained and the claims rows read the row-normalised samples "
            "(the paper's scale): add true"
        )
    longest = max(section["n"])
    positions = model_positions(name)
    if positions is not None and longest > positions:
        out.append(f"trained.n has {longest} > the {positions} positions of {name}: lower trained.n")
    if name == config["model"]["name"] and longest - 2 >= config["data"]["max_tokens"]:
        out.append(
            f"trained.n = {longest} needs reviews of at least {longest - 2} words (WordPiece tokens) but the pool "
            f"keeps reviews of fewer than data.max_tokens = {config['data']['max_tokens']}: raise data.max_tokens "
            "or lower trained.n"
        )
    beyond = [layer for layer in (section["layers"] if section["layers"] != "all" else []) if layer > layers]
    if beyond:
        out.append(f"trained.layers has {beyond} beyond the {layers} layers of {name}: choose layers in [1, {layers}]")
    if section["head_n"] is not None and section["head_n"] not in section["n"]:
        out.append(f"trained.head_n = {section['head_n']} is not one of trained.n = {section['n']}: add it there")
    if section["head_n"] is not None and section["head_reviews"] > section["reviews"]:
        out.append(
            f"trained.head_reviews = {section['head_reviews']} > trained.reviews = {section['reviews']}: "
            "the per-head searches use the first reviews: lower head_reviews"
        )
    if section["reviews"] > config["data"]["pool_size"]:
        out.append(
            f"trained.reviews = {section['reviews']} > data.pool_size = {config['data']['pool_size']}: the reviews "
            "come from the pool: lower trained.reviews or raise data.pool_size"
        )
    return out


@dataclass(frozen=True)
class TrainedJob(Job):
    """The searches of the trained study at one encoder layer (``wordsens.experiments.trained``)."""

    layer: int
    study: str = "trained"

    @property
    def setting(self) -> str:
        return f"layer{self.layer}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"layer": str(self.layer)}

    @property
    def key(self) -> str:
        return f"trained/layer{self.layer}"

    @property
    def point(self) -> str:
        return f"trained {self.setting}"

    @property
    def family(self) -> str:
        """Word-sensitivity searches: the calibration of the WS jobs applies."""
        return "ws:trained"

    @property
    def store(self) -> str | None:
        """The job reads the review pool and the encoder itself, not an embedding store."""
        return None

    @property
    def rows(self) -> int:
        """Two rows (the trained map and its random model) per map, review, n and normalisation, and
        one per head and per-head review."""
        p = self.params
        whole = 2 * len(p["maps"]) * p["reviews"] * len(p["n"]) * len(p["normalise"])
        return whole + (p["heads"] * p["head_reviews"] if p["head_n"] is not None else 0)


def trained_jobs(config: dict, numerics_version: str = NUMERICS_VERSIONS["trained"]) -> list[TrainedJob]:
    """One ``TrainedJob`` per layer of ``trained_layers`` (none without a ``trained`` section), with its
    params (what its rows depend on) and estimates: memory, the largest search's arrays beside two
    float32 copies of the encoder (``encoder_size``: the job loads it, and the trained maps load it
    again for their layer's weights, ``wordsens.data.checkpoint.layer_weights``) and one batch of its
    forward pass at the largest n (``costs.encoder_memory``); time, every search's cost-model seconds."""
    section = config.get("trained")
    if not section:
        return []
    name = trained_model(config)
    heads, d = model_heads(name), model_width(name)
    if heads is None or d is None:
        raise ValueError(_unknown(config))
    n_max = max(section["n"])
    searches: list[tuple[str, int, int]] = []  # (map, n, count)
    runs = section["reviews"] * len(section["normalise"])
    for trained in section["maps"]:
        for n in section["n"]:
            searches += [(trained, n, runs), (RANDOM_MODELS[trained], n, runs)]
    if section["head_n"] is not None:
        searches.append(("trained_attention", section["head_n"], heads * section["head_reviews"]))

    def options(map_name: str) -> dict:
        return {"model": name, "layer": 1} if map_name in RANDOM_MODELS else {"heads": heads}

    arrays = max(registry.get(m).ws_memory(n_max, d, options(m)).bytes for m, _, _ in searches)
    seconds = sum(
        count * registry.get(m).ws_seconds(n, d, options(m), max_steps=section["max_steps"]) for m, n, count in searches
    )
    # the hidden states entering the layer: a batch of 16 reviews at a time (wordsens.data.embed.hidden_states)
    encoder = costs.encoder_memory(
        parameters=encoder_size(name),
        copies=2,
        batch=min(16, section["reviews"]),
        length=n_max,
        width=d,
        heads=heads,
        detail=name,
    )
    samples = section["reviews"] * n_max * d * (4 + 8)  # float32 hidden states, float64 samples
    estimate = costs.MemoryEstimate(arrays + encoder.bytes + samples, f"{encoder.detail}; searches at n = {n_max}")
    jobs = []
    for layer in trained_layers(config):
        params = canonical(
            {
                "model": name,
                "layer": layer,
                "heads": heads,
                "n": sorted(set(section["n"])),
                "reviews": section["reviews"],
                "normalise": list(section["normalise"]),
                "maps": list(section["maps"]),
                "head_n": section["head_n"],
                # without per-head searches, head_reviews changes nothing: not a param then
                "head_reviews": section["head_reviews"] if section["head_n"] is not None else None,
                "max_steps": section["max_steps"],
                "seed": config["seed"],
                "numerics_version": numerics_version,
            }
        )
        jobs.append(
            TrainedJob(
                "trained",
                "layers",  # describe's group: "trained layers"
                "imdb",
                0,
                "cpu",
                estimate.job,
                estimate.job,
                seconds,
                arrays,
                None,
                params,
                layer,
            )
        )
    return jobs
