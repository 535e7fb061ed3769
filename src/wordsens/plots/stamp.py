"""The stamp of a run whose encoder has random weights (a visible "toy demo: tiny random BERT" or
"random weights: <folder>" on every figure of it): decided once, at planning time, from the model's
name and files. Neither matplotlib nor torch is imported, so that the workflow computes it when it
parses its rules and hands it to the figure jobs as a param.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..data.models import DEMO_LM, DEMO_MODEL

DEMO_STAMP = "toy demo: tiny random BERT"
_WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin", "tf_model.h5", "model.ckpt*", "flax_model.msgpack")


def _random_weights(name: str) -> bool:
    """Whether ``name`` is a local model folder with a config but no weights file: ``from_pretrained``
    then gives random weights."""
    folder = Path(name).expanduser()
    if not (folder / "config.json").is_file():
        return False
    return not any(any(folder.glob(pattern)) for pattern in _WEIGHT_FILES)


def run_stamp(config: Mapping[str, Any], *, model: str | None = None) -> str | None:
    """The stamp every figure of a run carries when its encoder (``model``, default ``model.name``) has
    random weights: ``DEMO_STAMP``, "toy demo: tiny random causal LM" or "random weights: <folder>"; else
    None."""
    name = str(model if model is not None else (config.get("model") or {}).get("name", ""))
    if name == DEMO_MODEL:
        return DEMO_STAMP
    if name == DEMO_LM:
        return "toy demo: tiny random causal LM"
    if _random_weights(name):
        return f"random weights: {Path(name).name}"
    return None
