"""A pre-trained encoder's own layers against their random counterparts (the configuration's ``trained``): one
job per encoder layer (``TrainedJob``): on the hidden states entering the layer for the first ``trained.reviews``
reviews of the pool that have at least max(n) tokens, at every n, the word sensitivity of each trained map of
``trained.maps`` and of the random maps its registry entry names for each convention (``MapSpec.counterparts``:
``trained.draws`` draws each), at the moved rows of each review (``trained.positions`` word rows, and ``[CLS]``,
``[SEP]`` with ``trained.specials``), and of every head of the trained attention at ``trained.head_n`` (its rows:
``run``); the trained / random ratios reported in the claims table without a verdict (``claims``) and its figure
(``figure``). Planning reads the encoder's facts from its config.json without loading it. Torch-free.
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
from ..jobs import Job, JobFiles
from ..spec import Figure, Needs, PlanView, StudySpec, beside, schema_beside

# the numerics of the study's rows: bump the version when a change of them changes its results
# (docs/changelog.md lists what each version changed)
NUMERICS = ("trained", "trained-3")


def counterparts(trained: str, convention: str) -> list[str]:
    """The random maps ``trained`` is compared with in ``convention`` (its registry entry's)."""
    return [c.map for c in registry.get(trained).counterparts if c.convention == convention]


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
    def point(self) -> str:
        return f"trained {self.setting}"

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
        """Per review, n and moved row (``moved_count``): for each convention and each trained map with
        counterparts in it, one row of the trained map and ``draws`` of each counterpart; and one row per head
        and per-head review."""
        per_sample = sum(
            1 + self.draws * len(counterparts(m, c)) for m in self.maps for c in self.conventions if counterparts(m, c)
        )
        moved = [moved_count(n, self.positions, self.specials, self.word_keys) for n in self.n]
        whole = sum(per_sample * count for count in moved) * self.reviews
        return whole + (self.heads * (self.head_reviews or 0) if self.head_n is not None else 0)

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
    """The searches of one layer job of the ``trained`` section, as (map, n, how many)."""
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

    def options(map_name: str) -> dict:
        given = {"model": name, "layer": 1, "heads": heads}
        return {key: value for key, value in given.items() if key in registry.get(map_name).options}

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
            reviews=section["reviews"],
            conventions=tuple(section["conventions"]),
            maps=tuple(section["maps"]),
            positions=section["positions"],
            specials=section["specials"],
            draws=section["draws"],
            head_n=section["head_n"],
            # without per-head searches, head_reviews changes nothing: not a param then
            head_reviews=section["head_reviews"] if section["head_n"] is not None else None,
            max_steps=section["max_steps"],
            seed=config["seed"],
            numerics_version=version,
            word_keys=section["word_keys"],
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
