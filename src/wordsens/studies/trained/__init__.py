"""A pre-trained encoder's own layers against their random counterparts (the configuration's ``trained``; see
docs/studies.md): one job per encoder layer (``TrainedJob``), its rows (``run``), the trained / random ratios
reported without a verdict (``claims``) and its figure (``figure``). Planning reads the encoder's facts from its
config.json without loading it. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ...compute import costs
from ...compute.limits import Limits
from ...compute.placement import placed
from ...data.models import (
    bert_family_problem,
    encoder_size,
    model_config,
    model_heads,
    model_layers,
    model_positions,
    model_width,
)
from ...maps import registry
from ..checks import pool_problem, words_problem
from ..jobs import Job, JobFiles
from ..spec import Figure, Needs, PlanView, StudySpec, beside, schema_beside
from .pairs import counterparts, map_options

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
NUMERICS = ("trained", "trained-3")


def moved_count(n: int, positions: int | str, specials: bool, word_keys: bool = False) -> int:
    """How many rows of a review's sample of n tokens are searched (``wordsens.studies.trained.run.moved_rows``):
    ``positions`` word rows (``all``: the n - 2 of them), and ``[CLS]``, ``[SEP]`` with ``specials``; with
    ``word_keys`` the word rows once more, on the sample without [CLS] and [SEP]."""
    words = n - 2 if positions == "all" else int(positions)
    return words * (2 if word_keys else 1) + (2 if specials else 0)


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
    shortest, longest = min(section["n"]), max(section["n"])
    if shortest < 3:
        out.append(f"trained.n has {shortest} < 3: a sample needs a word row between [CLS] and [SEP]: raise trained.n")
    elif section["positions"] != "all" and section["positions"] > shortest - 2:
        out.append(
            f"trained.positions = {section['positions']} > the {shortest - 2} word rows of a sample at n = {shortest} "
            "([CLS] and [SEP] are not words): lower trained.positions, raise the smallest n, or set it to all"
        )
    paired = [(m, c) for m in section["maps"] for c in section["conventions"] if not counterparts(m, c)]
    if len(paired) == len(section["maps"]) * len(section["conventions"]):
        out.append(f"trained.maps {section['maps']} have no random counterpart in trained.conventions: add paper")
    positions = model_positions(name)
    if positions is not None and longest > positions:
        out.append(f"trained.n has {longest} > the {positions} positions of {name}: lower trained.n")
    if name == config["model"]["name"]:
        out += words_problem("trained.n", longest, config)
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
    return out + pool_problem("trained.reviews", section["reviews"], config)


@dataclass(frozen=True, kw_only=True)
class TrainedJob(Job):
    """The searches of the trained study at one ``layer`` of the encoder ``model`` (its ``heads``): at each n,
    on ``reviews`` reviews, in each convention, each trained map beside ``draws`` draws of each counterpart, at
    the moved rows (``positions`` word rows, ``specials``: [CLS] and [SEP]; ``word_keys``: the word rows once
    more on the sample without [CLS] and [SEP]), and every head at ``head_n`` on ``head_reviews`` reviews
    (None: none); the search's step cap. ``key_name``: the setting that named the encoder (for errors)."""

    rule = "trained"
    output = "trained/layer{layer}"
    coefficients: ClassVar = {"ws:trained": (2.33, 0.45)}
    EXTRAS = ("key_name",)

    data: str = "imdb"
    model: str
    layer: int
    heads: int
    n: tuple[int, ...]
    reviews: int
    conventions: tuple[str, ...]
    maps: tuple[str, ...]
    positions: int | str
    specials: bool
    draws: int
    head_n: int | None
    head_reviews: int | None
    max_steps: int
    word_keys: bool = False
    key_name: str = "model.name"

    @property
    def setting(self) -> str:
        return f"layer{self.layer}"

    @property
    def family(self) -> str:
        """Word-sensitivity searches: the calibration of the WS jobs applies."""
        return "ws:trained"

    @property
    def what(self) -> str:
        return "layers"

    def values(self) -> dict[str, Any]:
        return {"study": self.study, "data": self.data, "layer": self.layer}

    @property
    def rows(self) -> int:
        """One row per search (``_searches``)."""
        return sum(count for *_, count in _searches(vars(self), self.heads))

    def log(self, frame: Any) -> str:
        return str(frame.groupby(["convention", "n", "token", "map", "head"])[["ws", "entropy"]].mean().to_string())

    def run(self, files: JobFiles) -> Any:
        """One layer's table (``run.layer_table``); data.max_unk_share is a gate of the run's configuration."""
        from .run import layer_table

        source, tokenizer, encoder = files.encoder(self.model, setting=self.key_name)
        limit = files.config["data"]["max_unk_share"]
        pool = files.pool()
        return layer_table(
            tokenizer, encoder, pool, self, source=source, max_unk_share=limit, key=self.key_name, log=print
        )


def _searches(section: dict, heads: int) -> list[tuple[str, int, int]]:
    """The searches of one layer job of the ``trained`` section (or of a ``TrainedJob``'s fields), as (map, n,
    how many): per review, n and moved row (``moved_count``), each trained map with counterparts in a convention
    and ``draws`` of each counterpart; one per head and per-head review."""
    searches: list[tuple[str, int, int]] = []
    for n in section["n"]:
        runs = section["reviews"] * moved_count(n, section["positions"], section["specials"], section["word_keys"])
        for trained in section["maps"]:
            for convention in section["conventions"]:
                random = counterparts(trained, convention)
                if random:
                    searches += [(trained, n, runs), *[(name, n, runs * section["draws"]) for name in random]]
    if section["head_n"] is not None:
        searches.append(("trained_attention", section["head_n"], heads * section["head_reviews"]))
    return searches


# the fields of a TrainedJob that the section gives as they are
_SECTION_FIELDS = ("reviews", "positions", "specials", "draws", "head_n", "max_steps", "word_keys")


def jobs(config: dict, limits: Limits, version: str) -> list[TrainedJob]:
    """One job per layer of ``trained_layers``, with its estimates: memory, the largest search's arrays beside
    two float32 copies of the encoder (the job loads it, and the trained maps load it again for their layer's
    weights) and one batch of its forward pass at the largest n (``costs.encoder_memory``); time, every
    search's cost-model seconds. On the CPU: ``limits`` does not move it."""
    section = config["trained"]
    name = trained_model(config)
    heads, d = model_heads(name), model_width(name)
    if heads is None or d is None:
        raise ValueError(_unknown(config))
    n_max = max(section["n"])
    searches = _searches(section, heads)
    options = {m: map_options(m, name, 1, heads) for m, _, _ in searches}
    arrays = max(registry.get(m).ws_memory(n_max, d, options[m]).bytes for m, _, _ in searches)
    seconds = sum(
        count * registry.get(m).ws_seconds(n, d, options[m], max_steps=section["max_steps"]) for m, n, count in searches
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
    cost = placed(arrays, "cpu", seconds, resident=encoder.bytes + samples, threads=config["ws"]["threads"])
    return [
        TrainedJob(
            study="trained",
            cost=cost,
            needs=("pool", f"model:{name}"),
            key_name="trained.model" if section["model"] else "model.name",
            model=name,
            layer=layer,
            heads=heads,
            n=tuple(sorted(set(section["n"]))),
            conventions=tuple(section["conventions"]),
            maps=tuple(section["maps"]),
            # without per-head searches, head_reviews changes nothing: not a param then
            head_reviews=section["head_reviews"] if section["head_n"] is not None else None,
            seed=config["seed"],
            numerics_version=version,
            **{key: section[key] for key in _SECTION_FIELDS},
        )
        for layer in trained_layers(config)
    ]


def figures(plan: PlanView) -> list[Figure]:
    """``fig_trained`` where the study has a layer (fitting or not: the layers left out are marked)."""
    if not any(job.study == "trained" for job in plan.jobs):
        return []
    fitting = any(job.study == "trained" for job in plan.fit)
    return [
        Figure(
            name="trained_figure",
            study="trained",
            tables={"table": "trained"} if fitting else {},
            outputs={"figures": "fig_trained"},
            caption=beside(__file__, "report", "fig_trained.rst"),
            params={"left_out": plan.left_out(study="trained")},
        )
    ]


def needs(config: dict) -> Needs:
    """The review pool (tokenised by model.name) and the measured encoder (``trained.model``, else model.name)."""
    section = config.get("trained")
    if not section:
        return Needs()
    return Needs(pool=True, encoders={"trained.model" if section["model"] else "model.name": trained_model(config)})


SPEC = StudySpec(
    name="trained",
    title="a pre-trained encoder's own attention and layers against their random counterparts",
    section="trained",
    schema=schema_beside(__file__),
    jobs=jobs,
    kinds=(TrainedJob,),
    numerics=NUMERICS,
    figures=figures,
    draw="wordsens.studies.trained.figure:draw",
    claims="wordsens.studies.trained.claims:trained_claims",
    definitions="wordsens.studies.trained.claims:DEFINITIONS",
    needs=needs,
    problems=trained_problems,
    coefficients={"trained_figure": (3.0, None)},
)
