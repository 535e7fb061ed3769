"""Word sensitivity of a pre-trained encoder's own layers against their random counterparts, in the
conventions that their comparison depends on.

For a review and an encoder layer ``l`` (1-based), the sample is the layer's real input: the first
n rows of ``hidden_states[l - 1]`` when the model reads the review's first n tokens (``[CLS]``
... ``[SEP]``). Each trained map (``trained_attention``, ``trained_layer``) is searched on it beside
the random maps its registry entry names (``MapSpec.counterparts``), each in the convention it
serves (``wordsens.maps.CONVENTIONS``):

* ``paper``: the rows rescaled to norm sqrt(d) (``wordsens.data.samples.normalise``), a ball of radius
  sqrt(d): the paper's setting, beside ``mh_raf``, ``block`` and ``ln_block`` (the trained LayerNorms);
* ``model``: the model's own rows, a ball of radius ``||x_i||`` around the moved row (the paper's
  relative radius: ``estimate(..., radius=...)``), beside the counterparts with the trained weights'
  singular values (``matched_attention``, ``matched_layer``).

The moved rows are word rows: ``positions`` of them per review and n, drawn (seeded) from the rows
that hold a word (``wordsens.studies.sensitivity.token_kinds``: never ``[CLS]`` or ``[SEP]``), or all of
them; with ``specials``, ``[CLS]`` (row 0) and ``[SEP]`` (row n - 1) are searched too, as rows of their
own (column ``token``). Each random counterpart is drawn ``draws`` times per (layer, review): draw k
has one seed for every counterpart and position (``block`` and ``ln_block`` share their random
weights, ``mh_raf`` its attention with them). Each row records the mean entropy of its map's
attention rows on the sample (``attention_entropy``: ln n is uniform, 0 one-hot), the regime the
softmax works in, the attention its word rows put on ``[CLS]`` and ``[SEP]`` (``special_mass``) and the
share of its output norm that the attention's biases add (``bias_share``: the paper's convention rescales
the rows, not the biases). With ``word_keys`` every map is searched a second time on the word rows alone
(``keys`` "words": ``[CLS]`` and ``[SEP]`` dropped, so no attention goes to them). Per head:
``trained_attention`` of every head alone on the first ``head_reviews`` reviews (paper convention, their
first drawn word row), with ``ws_heads``: the head's change relative to the norm of every head's output
together (concatenated, before ``Wo``), comparable across heads and layers, beside ``ws`` (relative to
the head's own output).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ... import maps
from ...data import embed, samples
from ...data.inputs import InputError, check_near_duplicates, check_review_unk
from ...data.reviews import pick_reviews
from ...maps import registry
from ...maps.trained import attention_entropy, attention_mass, bias_output
from ...search import estimate
from ...seeds import derive_seed
from ..sensitivity import token_kinds

if TYPE_CHECKING:
    from . import TrainedJob

Tensor = torch.Tensor

__all__ = [
    "TRAINED_MAPS",
    "check_tokenizer",
    "layer_inputs",
    "layer_rows",
    "layer_table",
    "moved_rows",
    "trained_rows",
]

# the maps of the study: those of a checkpoint that name random counterparts (the registry's entries)
TRAINED_MAPS = ("trained_attention", "trained_layer")


def check_tokenizer(tokenizer: Any, texts: Sequence[str], reviews: Sequence[Any], *, limit: float, key: str) -> str:
    """The study's own tokenizer against its reviews (``wordsens.data.inputs.check_review_unk``): a line
    for the log, or ``InputError`` starting with ``key`` (the setting that named the encoder) where a
    review has more than ``limit`` of its tokens mapped to the unknown token."""
    ids = tokenizer([str(t) for t in texts], add_special_tokens=False, truncation=False)["input_ids"]
    unk_id = getattr(tokenizer, "unk_token_id", None)
    unknown = [sum(1 for t in row if t == unk_id) if unk_id is not None else 0 for row in ids]
    try:
        return check_review_unk(
            [len(row) for row in ids],
            unknown,
            reviews=reviews,
            limit=limit,
            tokenizer=str(getattr(tokenizer, "name_or_path", "")) or "the study's encoder",
            unk_token=getattr(tokenizer, "unk_token", None),
        )
    except InputError as err:
        raise InputError(f"{key}: {err}") from None


def layer_inputs(tokenizer: Any, encoder: Any, texts: Sequence[str], *, layer: int, n: int, normalise: bool) -> Tensor:
    """The samples (reviews, n, d), float64, that enter encoder layer ``layer`` (1-based) when the
    model reads each text's first n tokens; ``normalise``: rows rescaled to norm sqrt(d)."""
    hidden, lengths = embed.hidden_states(
        tokenizer, encoder, texts, layer=layer - 1, max_length=n, dtype=np.float32, progress=False
    )
    short = [i for i, length in enumerate(lengths) if length < n]
    if short:
        raise ValueError(
            f"reviews {short} have fewer than n = {n} tokens: their last rows would be padding; choose longer reviews"
        )
    width = hidden.shape[-1]
    if normalise:
        return samples.normalise(hidden, n, width)
    return torch.as_tensor(hidden, dtype=torch.float64)


def moved_rows(n: int, positions: int | str, *, specials: bool, seed: int) -> list[tuple[int, str]]:
    """The rows a review's sample of n tokens (``[CLS]``, n - 2 words, ``[SEP]``) is searched at, as
    (row, token): ``positions`` word rows drawn without replacement from ``seed`` (in increasing
    order), or every word row (``"all"``), then ``[CLS]`` and ``[SEP]`` with ``specials``."""
    kinds = token_kinds(n, n)
    words = [i for i, kind in enumerate(kinds) if kind == "word"]
    if positions != "all":
        if not isinstance(positions, int) or isinstance(positions, bool) or not 1 <= positions <= len(words):
            raise ValueError(
                f"trained.positions must be 'all' or an integer in [1, {len(words)}] (the word rows at n = {n}), "
                f"got {positions!r}"
            )
        picked = np.random.default_rng(seed % 2**32).choice(len(words), size=positions, replace=False)
        words = sorted(words[int(k)] for k in picked)
    rows = [(i, "word") for i in words]
    return rows + ([(0, kinds[0]), (n - 1, kinds[n - 1])] if specials else [])


def _options(name: str, model: str, layer: int, heads: int) -> dict[str, Any]:
    """The options a map of the study takes: a checkpoint's (model, layer) or the number of heads."""
    given = {"model": model, "layer": layer, "heads": heads}
    return {key: value for key, value in given.items() if key in registry.get(name).options}


def _searched(
    name: str,
    X: Tensor,
    W: Any,
    convention: str,
    rows: Sequence[tuple[int, str]],
    *,
    options: dict[str, Any],
    seed: int,
    max_steps: int,
) -> list[dict[str, Any]]:
    """One map with weights ``W`` on the sample ``X`` of ``convention`` (rows of norm sqrt(d), or the
    model's own), searched at every moved row of ``rows``: the row's fields that depend on the search."""
    d = X.shape[-1]
    out = []
    for position, token in rows:
        # the paper's ball (radius sqrt(d)), or the paper's relative radius ||x_i|| at the model's own scale
        radius = math.sqrt(d) if convention == "paper" else float(torch.linalg.vector_norm(X[position]))
        result = estimate(
            name,
            X,
            seed=seed,
            position=position,
            weights=W,
            options=options,
            device="cpu",
            max_steps=max_steps,
            radius=radius,
        )
        out.append(
            {
                "position": position,
                "token": token,
                "radius": radius,
                "ws": result.lower,
                "steps": result.steps,
                "seconds": result.seconds,
            }
        )
    return out


def trained_rows(
    X: Tensor,
    *,
    model: str,
    layer: int,
    heads: int,
    seed: int,
    review: int,
    conventions: Sequence[str] = ("paper", "model"),
    positions: int | str = 2,
    specials: bool = True,
    draws: int = 4,
    per_head: bool = False,
    maps_: Sequence[str] = TRAINED_MAPS,
    max_steps: int = 1000,
    word_keys: bool = False,
) -> list[dict[str, Any]]:
    """One review's rows at one layer from its sample ``X`` (n, d) at the model's own scale: for each
    convention of ``conventions``, each trained map of ``maps_`` that has counterparts in it and
    each of those counterparts (``draws`` draws each, from seeds derived from ``seed``, the review,
    the layer and the draw), searched at the moved rows (``moved_rows``, drawn from ``seed`` and the
    review); column ``keys`` "all". With ``word_keys`` each map is also searched on the sample without
    its ``[CLS]`` and ``[SEP]`` rows (the word rows alone: no attention can go to the specials' columns),
    at the same word rows and with the same weights, column ``keys`` "words". With ``per_head`` instead:
    ``trained_attention`` of every head (1-based ``head``), paper convention, at the first moved row."""
    n, d = X.shape
    unknown = sorted(set(maps_) - set(TRAINED_MAPS))
    if unknown:
        raise ValueError(f"unknown trained maps {unknown}; choose among {list(TRAINED_MAPS)}")
    bad = sorted(set(conventions) - set(maps.CONVENTIONS))
    if bad:
        raise ValueError(f"unknown conventions {bad}; choose among {list(maps.CONVENTIONS)}")
    rows = moved_rows(n, positions, specials=specials, seed=derive_seed(seed, "trained positions", review, n))
    base = derive_seed(seed, "trained", review, layer)
    samples_of = {"paper": samples.normalise(X, n, d), "model": X.to(torch.float64)}
    common = {"review": review, "layer": layer, "n": n, "d": d}
    if per_head:
        return _head_rows(samples_of["paper"], rows[:1], model, heads, base, max_steps, common)
    runs: list[tuple[str, str, str, int]] = []  # (convention, map, kind, draw)
    for convention in conventions:
        for trained in maps_:
            counterparts = [c.map for c in registry.get(trained).counterparts if c.convention == convention]
            if counterparts:
                runs.append((convention, trained, "trained", 0))
                runs += [(convention, name, "random", k) for name in counterparts for k in range(draws)]
    # the keys the attention reads: every row, and with word_keys the word rows alone ([CLS] and [SEP] dropped)
    samples_of_keys = [("all", rows)] + ([("words", [(i - 1, t) for i, t in rows if t == "word"])] if word_keys else [])
    out = []
    for convention, name, kind, draw in runs:
        options = _options(name, model, layer, heads)
        draw_seed = base if kind == "trained" else derive_seed(base, "draw", draw)
        W = maps.sample_weights(name, draw_seed, n, d, dtype=torch.float64, **options)
        for keys, moved in samples_of_keys:
            rows_of = slice(None) if keys == "all" else slice(1, n - 1)
            Xc = samples_of[convention][rows_of]
            described = {"convention": convention, "map": name, "kind": kind, "head": 0, "draw": draw, "keys": keys}
            described |= _described(name, Xc, W, specials=keys == "all")
            # the mean norm of these rows as the model gives them to the layer (the paper's convention rescales them)
            described["model_row_norm"] = float(torch.linalg.vector_norm(samples_of["model"][rows_of], dim=-1).mean())
            for searched in _searched(
                name, Xc, W, convention, moved, options=options, seed=draw_seed, max_steps=max_steps
            ):
                out.append({**common, **described, **searched, "seed": draw_seed})
    return out


def _described(name: str, X: Tensor, W: Any, *, specials: bool) -> dict[str, float]:
    """What a row says about the map ``name`` with weights ``W`` on the sample ``X`` beside its WS:
    ``phi_norm``; ``row_norm`` (the sample's mean row norm); ``entropy`` (the attention's mean entropy);
    ``special_mass`` (the attention the word rows put on ``[CLS]`` and ``[SEP]``, the sample's first and
    last rows, mean over heads and word rows; NaN without ``specials``: a sample of word rows alone);
    ``bias_share`` (the norm of the constant rows the attention's biases add, ``sqrt(n) ||bias_output||``,
    over ``phi_norm``; 0 for a map without biases; NaN for a whole layer, whose LayerNorms mix them)."""
    n = X.shape[0]
    with torch.no_grad():
        phi_norm = float(torch.linalg.vector_norm(maps.apply(name, X, W)))
        entropy = float(attention_entropy(X, W).mean())
        mass = float(attention_mass(X, W, [0, n - 1])[..., 1 : n - 1].mean()) if specials else math.nan
        bias = bias_output(W)
    layer = "W1" in W
    share = (
        math.nan if layer else 0.0 if bias is None else math.sqrt(n) * float(torch.linalg.vector_norm(bias)) / phi_norm
    )
    return {
        "phi_norm": phi_norm,
        "row_norm": float(torch.linalg.vector_norm(X, dim=-1).mean()),
        "entropy": entropy,
        "special_mass": mass,
        "bias_share": share,
    }


def _head_rows(
    X: Tensor,
    rows: Sequence[tuple[int, str]],
    model: str,
    heads: int,
    seed: int,
    max_steps: int,
    common: dict[str, Any],
) -> list[dict[str, Any]]:
    """``trained_attention`` of every head alone on the row-normalised sample ``X``, at ``rows``, with
    ``ws_heads`` (the head's change relative to the norm of all heads' output together)."""
    out = []
    for head in range(1, heads + 1):
        options = {"model": model, "layer": common["layer"], "head": head}
        W = maps.sample_weights("trained_attention", seed, *X.shape, dtype=torch.float64, **options)
        with torch.no_grad():
            phi_norm = float(torch.linalg.vector_norm(maps.apply("trained_attention", X, W)))
            entropy = float(attention_entropy(X, W).mean())
        for searched in _searched(
            "trained_attention", X, W, "paper", rows, options=options, seed=seed, max_steps=max_steps
        ):
            out.append(
                {
                    **common,
                    "convention": "paper",
                    "map": "trained_attention",
                    "kind": "trained",
                    "head": head,
                    "draw": 0,
                    "keys": "all",
                    **searched,
                    "phi_norm": phi_norm,
                    "row_norm": float(torch.linalg.vector_norm(X, dim=-1).mean()),
                    "entropy": entropy,
                    "seed": seed,
                }
            )
    together = math.sqrt(sum(row["phi_norm"] ** 2 for row in out) / len(rows))  # one row per head and moved row
    for row in out:
        row["ws_heads"] = row["ws"] * row["phi_norm"] / together
    return out


def layer_rows(
    tokenizer: Any,
    encoder: Any,
    texts: Sequence[str],
    *,
    model: str,
    layer: int,
    ns: Sequence[int],
    conventions: Sequence[str] = ("paper", "model"),
    maps_: Sequence[str] = TRAINED_MAPS,
    positions: int | str = 2,
    specials: bool = True,
    draws: int = 4,
    head_n: int | None = None,
    head_reviews: int = 1,
    seed: int = 0,
    max_steps: int = 1000,
    names: Sequence[Any] | None = None,
    log: Any = None,
    word_keys: bool = False,
) -> list[dict[str, Any]]:
    """Every row of the trained study at one layer (the ``trained`` rule's job): for each review of
    ``texts`` (each with at least max(ns) tokens: ``wordsens.data.reviews.pick_reviews``) and n of ``ns``, the rows of
    ``trained_rows``; then, at ``head_n`` (None: none) on the first ``head_reviews`` reviews, every
    head alone (``word_keys``: as ``trained_rows``). The samples entering the layer must differ: two
    reviews whose samples at some n have a cosine similarity of at least ``NEAR_DUPLICATE`` are refused
    (``check_near_duplicates``, naming them by ``names``, default their index). ``model`` is what the
    maps load (``encoder``'s folder or name); ``log`` (a callable) gets a line per sample."""
    heads = int(encoder.config.num_attention_heads)
    rows: list[dict[str, Any]] = []
    passes = [(n, len(texts), False) for n in sorted(ns)]
    if head_n is not None:
        passes.append((head_n, head_reviews, True))
    for n, count, per_head in passes:
        X = layer_inputs(tokenizer, encoder, texts[:count], layer=layer, n=n, normalise=False)
        check_near_duplicates(X.numpy(), list(names or range(len(texts)))[:count], what=f"layer {layer} at n = {n}")
        for review in range(count):
            started = time.perf_counter()
            rows += trained_rows(
                X[review],
                model=model,
                layer=layer,
                heads=heads,
                seed=seed,
                review=review,
                conventions=conventions,
                positions=positions,
                specials=specials,
                draws=draws,
                per_head=per_head,
                maps_=maps_,
                max_steps=max_steps,
                word_keys=word_keys,
            )
            if log is not None:
                what = "head by head" if per_head else ", ".join(conventions)
                log(f"layer {layer} n = {n} {what} review {review}: {time.perf_counter() - started:.1f} s")
    return rows


def layer_table(
    tokenizer: Any,
    encoder: Any,
    pool: Any,
    job: TrainedJob,
    *,
    source: str,
    max_unk_share: float = 0.05,
    key: str = "trained.model",
    log: Any = None,
) -> Any:
    """The table of one job of the ``trained`` rule (``job``: a ``TrainedJob``):
    the rows of ``layer_rows`` on the pool's first ``reviews`` reviews (its seeded order) with at least
    max(n) tokens (the same reviews at every layer), once the study's tokenizer passed
    ``check_tokenizer`` on them (``max_unk_share``, ``key``: data.max_unk_share and the setting that
    named the encoder), with the encoder's name (``model``), each review's ``review_id`` in the pool, the
    job's ``config_hash`` and the provenance of every row. ``source``: the folder or name the encoder is
    loaded from."""
    import pandas as pd

    from ..jobs import config_hash, provenance

    texts = [str(t) for t in pool["text"]]
    chosen = pick_reviews(tokenizer, texts, n=max(job.n), count=job.reviews, section="trained")
    ids = [int(pool["review_id"].iloc[i]) for i in chosen]
    names = [f"review_id {i}" for i in ids]
    line = check_tokenizer(tokenizer, [texts[i] for i in chosen], names, limit=max_unk_share, key=key)
    if log is not None:
        log(line)
    rows = layer_rows(
        tokenizer,
        encoder,
        [texts[i] for i in chosen],
        model=source,
        layer=job.layer,
        ns=job.n,
        conventions=job.conventions,
        maps_=job.maps,
        positions=job.positions,
        specials=job.specials,
        draws=job.draws,
        head_n=job.head_n,
        head_reviews=job.head_reviews or 0,
        seed=job.seed,
        max_steps=job.max_steps,
        names=names,
        log=log,
        word_keys=job.word_keys,
    )
    frame = pd.DataFrame(rows)
    frame.insert(0, "model", job.model)
    frame.insert(2, "review_id", [ids[r] for r in frame["review"]])
    frame["config_hash"] = config_hash(job.params)
    for name, value in provenance(job.numerics_version).items():
        frame[name] = value
    return frame
