"""Loading pre-trained Hugging Face models: the package's one loading path (``load_pretrained``: the
local-folder/Hub decision and its offline error), ``load_tokenizer``, ``load_encoder``, the packaged
encoders (``extract_packaged_model``) and what a workflow job loads (``model_source``). Torch and
transformers are imported by the functions, so the checkpoint maps load their weights through it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..compute.devices import resolve_device
from ..io import current_umask
from .hub import hub_cached, hub_reachable
from .inputs import check_tokenizer_files
from .models import PACKAGED_MODELS, PackagedModel, packaged_archive

if TYPE_CHECKING:
    import torch


_PROVENANCE = "wordsens_packaged_model.json"  # written next to the extracted files


def model_source(name: str, files: Sequence[str]) -> str:
    """What ``from_pretrained`` gets in a workflow job: the folder of the model's files when the
    rule has them as inputs (a local, demo or packaged model), else the Hub name."""
    return str(Path(files[0]).parent) if files else name


# ------------------------------------------------------------------------------ loading models

_AUTO_CLASSES = {"tokenizer": "AutoTokenizer", "encoder": "AutoModel", "causal-lm": "AutoModelForCausalLM"}


def load_pretrained(name: str, kind: str = "encoder", *, setting: str = "model.name", fix: str | None = None, **kwargs):
    """``Auto*.from_pretrained`` of ``kind`` (``"tokenizer"``, ``"encoder"``: ``AutoModel``, ``"causal-lm"``) for a
    local folder or a Hub name, ``kwargs`` passed on: the package's one loading path. A name that is neither a
    folder, reachable on the Hub nor in its cache, one that fails to load and a folder without tokenizer files
    are a ``ValueError`` naming ``setting`` (the config key that gave it) and the way out (``fix``)."""
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
                f"wordsens.data.pretrained.extract_packaged_model(folder, {name!r}) (the workflow's rule does) "
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
    """``(tokenizer, model)`` for a Hub name or local folder, in eval mode on ``device``; ``attentions=True``
    loads the eager attention (transformers 5 returns attention probabilities only with it)."""
    kwargs = {"attn_implementation": "eager"} if attentions else {}
    tokenizer = load_pretrained(name, "tokenizer", setting=setting)
    model = load_pretrained(name, "encoder", setting=setting, **kwargs)
    model.eval()
    model.to(resolve_device(device))
    return tokenizer, model


# ------------------------------------------------------------------------ the packaged encoder


def _check_extracted(folder: Path, spec: PackagedModel) -> None:
    config = json.loads((folder / "config.json").read_text())
    want = {
        "hidden_size": spec.width,
        "num_hidden_layers": spec.layers,
        "max_position_embeddings": spec.max_positions,
        "vocab_size": spec.vocab_size,
    }
    have = {key: config.get(key) for key in want}
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
    """Unpack the packaged pre-trained model ``name`` (``PACKAGED_MODELS``) into ``dest_dir``, a folder
    that ``load_encoder`` loads (the archive's files and a small provenance file), without network.
    Atomic (a temporary sibling folder renamed into place) and idempotent (a complete extraction of the
    same package version is left as it is); ``ImportError`` naming the extra when the package is missing,
    ``ValueError`` when ``dest_dir`` holds something else."""
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
            provenance = {
                "name": name,
                "hub_name": spec.hub_name,
                "package": spec.distribution,
                "version": version,
                "archive": str(archive),
            }
            (tmp / _PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")
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
