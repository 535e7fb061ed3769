"""Word sensitivity of a pre-trained encoder's own layers against their random counterparts (the ``trained``
rule's rows; definitions in docs/studies.md, "Trained attention against random attention").

The sample is a layer's real input (the first n rows of ``hidden_states[l - 1]``); each trained map is searched
beside the random maps its registry entry names (``MapSpec.counterparts``) in the convention each serves
(``paper``: rows of norm sqrt(d), ball sqrt(d); ``model``: the model's rows, ball ``||x_i||``), at seeded word
rows (and ``[CLS]``, ``[SEP]`` with ``specials``), with what each row says about the attention's regime.
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
from ...maps.trained import attention_entropy, attention_mass, bias_output
from ...search import estimate
from ...seeds import derive_seed
from ..sensitivity import token_kinds
from .pairs import counterparts, map_options

if TYPE_CHECKING:
    from . import TrainedJob

Tensor = torch.Tensor


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
    """One review's rows at one layer from its sample ``X`` (n, d) at the model's own scale: in each convention,
    each trained map of ``maps_`` with counterparts there and ``draws`` draws of each counterpart (seeds from
    ``seed``, the review, the layer and the draw), searched at the ``moved_rows`` (``keys`` "all"; with
    ``word_keys`` also on the word rows alone, same rows and weights, ``keys`` "words"). With ``per_head``
    instead: ``trained_attention`` of every head (1-based ``head``), paper convention, at the first moved row."""
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
            random = counterparts(trained, convention)
            if random:
                runs.append((convention, trained, "trained", 0))
                runs += [(convention, name, "random", k) for name in random for k in range(draws)]
    # the keys the attention reads: every row, and with word_keys the word rows alone ([CLS] and [SEP] dropped)
    samples_of_keys = [("all", rows)] + ([("words", [(i - 1, t) for i, t in rows if t == "word"])] if word_keys else [])
    out = []
    for convention, name, kind, draw in runs:
        options = map_options(name, model, layer, heads)
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
    """What a row says about the map ``name`` with weights ``W`` on the sample ``X`` beside its WS: ``phi_norm``,
    ``row_norm``, ``entropy`` (mean over attention rows), ``special_mass`` (the attention word rows put on the
    first and last rows; NaN without ``specials``) and ``bias_share`` (``sqrt(n) ||bias_output|| / phi_norm``:
    0 without biases, NaN for a whole layer, whose LayerNorms mix them)."""
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
    head_n: int | None = None,
    head_reviews: int = 1,
    seed: int = 0,
    names: Sequence[Any] | None = None,
    log: Any = None,
    **searches: Any,
) -> list[dict[str, Any]]:
    """Every row of the trained study at one layer: for each review of ``texts`` (each with at least max(ns)
    tokens) and n of ``ns``, the rows of ``trained_rows`` (``searches``: its settings); then, at ``head_n`` (None:
    none) on the first ``head_reviews`` reviews, every head alone. Near-duplicate samples are refused
    (``check_near_duplicates``, naming them by ``names``, default their index). ``model`` is what the maps load
    (``encoder``'s folder or name); ``log`` (a callable) gets a line per sample."""
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
                per_head=per_head,
                **searches,
            )
            if log is not None:
                what = "head by head" if per_head else ", ".join(searches.get("conventions", ("paper", "model")))
                log(f"layer {layer} n = {n} {what} review {review}: {time.perf_counter() - started:.1f} s")
    return rows


# the job's fields that layer_rows takes under their own name
_FORWARDED = ("layer", "conventions", "positions", "specials", "draws", "head_n", "seed", "max_steps", "word_keys")


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
    """The table of one ``TrainedJob``: ``layer_rows`` on the pool's first ``reviews`` reviews with at least
    max(n) tokens (the same at every layer), once they passed ``check_tokenizer`` (``max_unk_share``, ``key``),
    with the encoder's name, each ``review_id``, the ``config_hash`` and the provenance. ``source``: the folder or
    name the encoder is loaded from."""
    import pandas as pd

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
        ns=job.n,
        maps_=job.maps,
        head_reviews=job.head_reviews or 0,
        names=names,
        log=log,
        **{key: getattr(job, key) for key in _FORWARDED},
    )
    frame = pd.DataFrame(rows)
    frame.insert(0, "model", job.model)
    frame.insert(2, "review_id", [ids[r] for r in frame["review"]])
    return frame.assign(**job.stamp())
