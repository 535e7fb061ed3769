"""Offline stand-ins for the demo and the tests: a generated aclImdb-shaped corpus, and a tiny BERT and
causal LM (real ``transformers`` classes, random weights, a small WordPiece vocabulary) saved with
``save_pretrained``, with the file modes the umask allows (``wordsens.io.umask_modes``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..io import umask_modes
from .models import TINY_BERT_HEADS, TINY_BERT_LAYERS, TINY_BERT_POSITIONS, TINY_BERT_WIDTH

_POSITIVE = ["great", "wonderful", "moving", "brilliant", "funny", "beautiful", "superb", "charming", "love", "best"]
_NEGATIVE = ["awful", "boring", "dull", "terrible", "weak", "bad", "worst", "poor", "silly", "waste"]
_NEUTRAL = [
    "the",
    "movie",
    "film",
    "a",
    "is",
    "was",
    "and",
    "it",
    "this",
    "of",
    "story",
    "actor",
    "actors",
    "plot",
    "scene",
    "scenes",
    "i",
    "you",
    "her",
    "his",
    "very",
    "much",
    "smile",
    "ending",
    "music",
    "director",
    "watch",
    "time",
    "character",
    "characters",
    "but",
    "not",
    "so",
    "too",
    "really",
    "towards",
    "understanding",
    "word",
    "sensitivity",
    "attention",
    "layers",
    "study",
    "via",
    "random",
    "features",
    "of",
    "in",
    "to",
    "with",
    "at",
    "what",
    "how",
    "answer",
    "question",
    "tell",
    "me",
    "about",
    "one",
    "two",
]
_PUNCT = [".", ",", "!", "?", ":", "'"]
VOCAB_WORDS = sorted(set(_POSITIVE + _NEGATIVE + _NEUTRAL))
_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_corpus(
    directory: str | Path,
    *,
    per_label: int = 60,
    min_words: int = 8,
    max_words: int = 140,
    seed: int = 0,
    split: str = "train",
) -> Path:
    """Write ``<directory>/aclImdb/<split>/{neg,pos}/<id>_<rating>.txt`` with generated reviews."""
    rng = np.random.default_rng(seed)
    root = Path(directory) / "aclImdb" / split
    for label, folder in ((0, "neg"), (1, "pos")):
        out = root / folder
        out.mkdir(parents=True, exist_ok=True)
        flavour = _POSITIVE if label else _NEGATIVE
        for file_id in range(per_label):
            length = int(rng.integers(min_words, max_words + 1))
            words = [
                str(rng.choice(flavour)) if rng.random() < 0.2 else str(rng.choice(_NEUTRAL)) for _ in range(length)
            ]
            text = " ".join(words).capitalize() + "."
            rating = int(rng.integers(7, 11)) if label else int(rng.integers(1, 5))
            (out / f"{file_id}_{rating}.txt").write_text(text, encoding="utf-8")
    return Path(directory) / "aclImdb"


def make_tiny_bert(
    directory: str | Path,
    *,
    hidden: int = TINY_BERT_WIDTH,
    layers: int = TINY_BERT_LAYERS,
    heads: int = TINY_BERT_HEADS,
    max_positions: int = TINY_BERT_POSITIONS,
    initializer_range: float = 0.2,
    seed: int = 0,
) -> Path:
    """A randomly initialised BERT (``BertModel``) and its WordPiece tokenizer in ``directory``;
    ``initializer_range`` is ten times BERT's 0.02 so that, as in a trained model, attention concentrates."""
    from transformers import BertConfig, BertModel

    tokenizer = _tokenizer(Path(directory))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=max_positions,
        initializer_range=initializer_range,
    )
    return _save(Path(directory), tokenizer, BertModel, config, seed)


def make_tiny_causal_lm(
    directory: str | Path, *, hidden: int = 32, layers: int = 2, heads: int = 2, seed: int = 0
) -> Path:
    """A randomly initialised GPT-2 style causal LM with the demo WordPiece tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = _tokenizer(Path(directory))
    # no end-of-text token: a random model would often emit it first and answer nothing
    config = GPT2Config(
        vocab_size=tokenizer.vocab_size,
        n_embd=hidden,
        n_layer=layers,
        n_head=heads,
        n_positions=256,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=None,
        initializer_range=0.5,
        pad_token_id=tokenizer.pad_token_id,
    )
    return _save(Path(directory), tokenizer, GPT2LMHeadModel, config, seed)


def _tokenizer(directory: Path) -> Any:
    """The demo WordPiece tokenizer, its vocabulary written to ``directory`` (made if missing)."""
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    directory.mkdir(parents=True, exist_ok=True)
    pieces = ["##s", "##ing", "##ed", "##ly"]
    vocab = _SPECIALS + _PUNCT + VOCAB_WORDS + pieces + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    path = directory / "vocab.txt"
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return BertTokenizerFast(vocab=str(path), do_lower_case=True)  # transformers 5 ignores vocab_file=


def _save(directory: Path, tokenizer: Any, model_class: Any, config: Any, seed: int) -> Path:
    """A model of ``model_class`` drawn with ``seed``, saved with its tokenizer (``save_pretrained``)."""
    import torch

    torch.manual_seed(seed)
    model = model_class(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    umask_modes(directory)  # save_pretrained's model.safetensors is private (0600)
    return directory
