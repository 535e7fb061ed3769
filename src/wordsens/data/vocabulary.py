"""Real words as rows of a sample, through an encoder's own embedding layer: at layer 0 the row of token
``w`` at position ``i`` is ``LN(E_word[w] + E_pos[i] + E_type[0])``, normalised (``samples.normalise``), so
the substitutions at a position are a finite set of moves ``x_i(w) - x_i`` (``wordsens.search.swaps``
scores them). ``EmbeddingLayer`` (a review's sample and every word's candidate row, by one formula),
``candidate_ids`` (the vocabulary a study scans), ``review_tokens``; torch is imported when used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..seeds import generator

if TYPE_CHECKING:
    import torch


# The vocabulary settings: "words" (whole-word tokens: no ``##`` continuation pieces), "tokens" (every
# token, pieces included). Special tokens ([CLS], [SEP], [PAD], [MASK], [UNK]) and bracketed
# placeholders ([unused0], ...) are never candidates: a review never holds them in its words.
VOCABULARIES = ("words", "tokens")
_BRACKETED = re.compile(r"^\[[^\]]*\]$")


def candidate_ids(tokenizer: Any, vocabulary: str = "words", *, rows: int | None = None) -> np.ndarray:
    """The token ids a substitution may put in place of a word (sorted): every token of the tokenizer's
    vocabulary but its special tokens and bracketed placeholders (``[unused12]``), and with
    ``vocabulary="words"`` but the ``##`` continuation pieces. ``rows``: the encoder's word-embedding
    rows (ids at or beyond them are left out). ValueError for an unknown setting or an empty result."""
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"unknown vocabulary {vocabulary!r}; choose one of {', '.join(VOCABULARIES)}")
    specials = {int(i) for i in getattr(tokenizer, "all_special_ids", [])}
    ids = []
    for token, index in tokenizer.get_vocab().items():
        if index in specials or _BRACKETED.match(token):
            continue
        if vocabulary == "words" and token.startswith("##"):
            continue
        if rows is not None and index >= rows:
            continue
        ids.append(int(index))
    if not ids:
        raise ValueError(f"the tokenizer has no {vocabulary} beyond its special tokens: nothing to substitute")
    return np.array(sorted(set(ids)), dtype=np.int64)


def review_tokens(tokenizer: Any, text: str, n: int) -> list[int]:
    """The token ids of a review's sample: the first ``n`` of ``[CLS] text [SEP] [PAD] ...``, the embedding
    step's first n rows at every ``max_length`` above n (row n-1 is the text's token, not ``[SEP]``, where it
    has that many), and at ``max_length`` = n where the text has at most n - 2 tokens."""
    if n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    encoded = tokenizer(
        [str(text)], padding="max_length", truncation=True, max_length=n + 1, add_special_tokens=True
    )  # one token past n: the text is cut after row n-1, as a longer max_length leaves it
    return [int(i) for i in encoded["input_ids"][0][:n]]


@dataclass(frozen=True)
class EmbeddingLayer:
    """An encoder's embedding layer in float64: word (``word``, (vocab, width)), position (``position``)
    and token type 0 (``type0``) embeddings, the LayerNorm's ``weight``, ``bias`` and ``eps``. ``rows``
    gives the pipeline's rows of tokens at positions (``wordsens.data.samples.normalise`` of the
    layer's output): the sample of a review and the candidates of a position by the same formula."""

    word: torch.Tensor
    position: torch.Tensor
    type0: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    eps: float

    @classmethod
    def of(cls, encoder: Any) -> EmbeddingLayer:
        """The embedding layer of a BERT-family encoder (``embeddings.word_embeddings``,
        ``position_embeddings``, ``token_type_embeddings``, ``LayerNorm``), copied to float64 on the CPU;
        ValueError naming the missing part where the encoder has another layout."""
        import torch

        base = getattr(encoder, "base_model", encoder)
        emb: Any = getattr(base, "embeddings", None)
        parts = ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm")
        missing = [part for part in parts if emb is None or not hasattr(emb, part)]
        if missing:
            raise ValueError(
                f"the encoder's embedding layer has no {', '.join(missing)}: substitutions need a BERT-family "
                "encoder (word + position + token-type embeddings, then LayerNorm), e.g. minilm or a BERT folder"
            )
        kind = getattr(encoder.config, "position_embedding_type", "absolute")
        if kind != "absolute":
            raise ValueError(f"the encoder's position embeddings are {kind!r}, not absolute: not supported here")

        def f64(t: torch.Tensor) -> torch.Tensor:
            return t.detach().to(device="cpu", dtype=torch.float64)

        return cls(
            f64(emb.word_embeddings.weight),
            f64(emb.position_embeddings.weight),
            f64(emb.token_type_embeddings.weight[0]),
            f64(emb.LayerNorm.weight),
            f64(emb.LayerNorm.bias),
            float(emb.LayerNorm.eps),
        )

    @property
    def width(self) -> int:
        return int(self.word.shape[1])

    def token_ids(self, ids: Sequence[int] | np.ndarray) -> torch.Tensor:
        """``ids`` as a tensor, checked: ValueError unless every id is a row of the word embeddings."""
        import torch

        ids_t = torch.as_tensor(np.asarray(ids, dtype=np.int64))
        if ids_t.numel() and (int(ids_t.min()) < 0 or int(ids_t.max()) >= self.word.shape[0]):
            raise ValueError(f"token ids must be in [0, {self.word.shape[0] - 1}] (the encoder's vocabulary)")
        return ids_t

    def outputs(self, ids: Sequence[int] | np.ndarray, positions: Sequence[int] | np.ndarray | int) -> torch.Tensor:
        """The layer's output (m, width) for tokens ``ids`` at ``positions`` (one per token, or one for all):
        ``LN(E_word[w] + E_pos[i] + E_type[0])``, float64 (``hidden_states[0]`` of the model, token type 0)."""
        import torch

        ids_t = self.token_ids(ids)
        pos = torch.as_tensor(np.asarray(positions, dtype=np.int64))
        if pos.numel() and int(pos.max()) >= self.position.shape[0]:
            raise ValueError(f"position {int(pos.max())} is beyond the encoder's {self.position.shape[0]} positions")
        z = self.word[ids_t] + self.position[pos].reshape(-1, self.width) + self.type0
        return torch.nn.functional.layer_norm(z, (self.width,), self.weight, self.bias, self.eps)

    def rows(
        self, ids: Sequence[int] | np.ndarray, positions: Sequence[int] | np.ndarray | int, d: int
    ) -> torch.Tensor:
        """``outputs`` as the pipeline's rows (m, d): first ``d`` coordinates, norm ``sqrt(d)``, float64."""
        from .samples import normalise

        out = self.outputs(ids, positions)
        return normalise(out[:, None, :], 1, d)[:, 0]

    def sample(self, ids: Sequence[int], d: int) -> torch.Tensor:
        """The sample (n, d) of the tokens ``ids`` at positions 0..n-1 (a review's first n tokens)."""
        return self.rows(ids, np.arange(len(ids)), d)

    def words(self, ids: Sequence[int] | np.ndarray) -> WordRows:
        """The rows of the words ``ids`` at any position (``WordRows.at``), for a vocabulary scanned at
        many positions."""
        return WordRows(self, ids)


class WordRows:
    """``EmbeddingLayer.rows`` of fixed words at one position after another: the LayerNorm's statistics
    of ``E_word[w] + c`` (``c = E_pos[i] + E_type[0]``) from the centred word embeddings ``e_w`` computed
    once, ``var = (|e_w|^2 + 2 e_w . c_c + |c_c|^2) / width`` (``c_c``: ``c`` centred), so that a position
    costs one product with ``c_c`` and its first ``d`` coordinates (``tests/unit/search/test_swaps.py``: equal to
    ``rows`` to 1e-12)."""

    def __init__(self, layer: EmbeddingLayer, ids: Sequence[int] | np.ndarray) -> None:
        self.layer = layer
        E = layer.word[layer.token_ids(ids)]
        self.centred = E - E.mean(dim=1, keepdim=True)
        self.norm2 = (self.centred * self.centred).sum(dim=1)

    def at(self, position: int, d: int) -> torch.Tensor:
        """The words' rows (V, d) at ``position``: first ``d`` coordinates, norm ``sqrt(d)``, float64."""
        import torch

        from .samples import normalise

        layer = self.layer
        if not 0 <= position < layer.position.shape[0]:
            raise ValueError(f"position {position} is beyond the encoder's {layer.position.shape[0]} positions")
        c = layer.position[position] + layer.type0
        cc = c - c.mean()
        var = (self.norm2 + 2 * (self.centred @ cc) + cc @ cc) / layer.width
        out = self.centred[:, :d] + cc[:d]  # the LayerNorm's output, in place
        out.mul_(torch.rsqrt(var + layer.eps)[:, None]).mul_(layer.weight[:d]).add_(layer.bias[:d])
        return normalise(out[:, None, :], 1, d)[:, 0]


CONTEXT_WORDS = 8  # words shown on each side of a substitution


def swap_positions(
    ids: Sequence[int], specials: Sequence[int], *, count: int | str, n_min: int, seed: int
) -> list[int]:
    """Word positions of a sample of tokens ``ids``: ``count`` of the positions 1..n_min-2 that hold no
    special token, drawn with ``seed`` (sorted; the same at every n >= n_min), or ``"all"``: every such
    position of ``ids``."""
    last = len(ids) - 1 if count == "all" else n_min - 1
    words = [p for p in range(1, last) if ids[p] not in set(specials)]
    if count == "all":
        return words
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"positions must be a positive integer or 'all', got {count!r}")
    if len(words) < count:
        raise ValueError(f"the sample has {len(words)} word positions below n = {n_min}, {count} asked: lower it")
    import torch

    order = torch.randperm(len(words), generator=generator(seed)).tolist()
    return sorted(words[j] for j in order[:count])


def context(tokenizer: Any, ids: Sequence[int], position: int, replacement: str, words: int = CONTEXT_WORDS) -> str:
    """The review's tokens around ``position`` as text (special tokens left out), the substitution marked
    ``[original -> new]``."""
    tokens = tokenizer.convert_ids_to_tokens(list(ids))
    specials = set(tokenizer.all_special_tokens)

    def text(part: Sequence[str]) -> str:
        return tokenizer.convert_tokens_to_string([t for t in part if t not in specials])

    left = text(tokens[max(0, position - words) : position])
    right = text(tokens[position + 1 : position + 1 + words])
    return f"... {left} [{tokens[position]} -> {replacement}] {right} ...".replace("  ", " ")
