"""The checks every study's section shares, each one line naming the key and the fix: a grid's maps and
options (``map_problems``, ``sweep_problems``, ``unknown_maps``), d against the encoder's width, n against
the stored length or the pool's reviews, a moved position against the smallest n, counts against the pool,
an encoder outside the BERT family. Torch-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..data.models import bert_family_problem, model_config, model_width
from ..maps import registry


def map_problems(key: str, map_name: str, options: Mapping[str, Any] | None, ds: Iterable[int]) -> list[str]:
    """An unregistered map, a map of a pre-trained checkpoint (its input is the hidden states entering its
    layer, not a grid's samples), or options the map refuses at some d (e.g. heads not dividing d)."""
    known = registry.names()
    if map_name not in known:
        return [
            f"{key}: unknown map {map_name!r}; registered: {', '.join(known)} (a plugin's map needs its module "
            "or .py file in plugins:)"
        ]
    spec = registry.get(map_name)
    if spec.checkpoint:
        return [
            f"{key}: {map_name} is a pre-trained checkpoint's layer, whose input is the hidden states entering "
            "that layer, not this grid's samples; remove it here and run it in the study of a pre-trained "
            f"encoder's layers (docs/studies.md) or with wordsens ws --map {map_name}"
        ]
    try:
        values = spec.option_values(options)
        if spec.shapes is not None:
            for d in ds:
                spec.shapes(2, d, **values)
    except (ValueError, TypeError) as err:
        return [f"{key}: {err}"]
    return []


def sweep_problems(key: str, map_name: str, grid: Mapping[str, Any]) -> list[str]:
    """A grid's lists beside d, n and options must name options the map sweeps (``MapSpec.sweep``)."""
    if map_name not in registry.names():
        return []  # map_problems names it
    spec = registry.get(map_name)
    sweeps_ = ", ".join(spec.sweep) or "none"
    out = [
        f"{key}.{name}: {map_name} does not sweep an option {name!r} (it sweeps: {sweeps_}; d, n and options are "
        "the grid's other keys)"
        for name in grid
        if name not in ("d", "n", "options") and name not in spec.sweep
    ]
    out += [
        f"{key}: {name} is swept by the grid ({key}.{name}), not set in {key}.options"
        for name in (grid.get("options") or {})
        if name in spec.sweep and name in grid
    ]
    return out


def unknown_maps(key: str, names: Iterable[str]) -> list[str]:
    """The entries of ``key`` (a mapping by map name) that name no registered map."""
    known = registry.names()
    return [f"{key}.{name}: unknown map; registered: {', '.join(known)}" for name in names if name not in known]


def width_problem(key: str, d: int | Sequence[int], config: Mapping[str, Any], name: str | None = None) -> list[str]:
    """``key``'s d beyond the width of the encoder ``name`` (model.name), where it is known."""
    name = name or config["model"]["name"]
    width = model_width(name)
    largest = max(d) if isinstance(d, Sequence) else d
    if width is None or largest <= width:
        return []
    return [f"{key} = {d} > the model width {width} ({name}): lower {key}"]


def stored_length_problem(key: str, n: int | Sequence[int], config: Mapping[str, Any]) -> list[str]:
    """``key``'s n beyond the stored length of the reviews' embeddings (model.max_length)."""
    longest, limit = (max(n) if isinstance(n, Sequence) else n), config["model"]["max_length"]
    if longest <= limit:
        return []
    return [f"{key} = {n} > model.max_length = {limit} (IMDb rows): lower n or raise model.max_length"]


def position_problem(key: str, position: int | str, ns: Iterable[int], where: str) -> list[str]:
    """A moved ``position`` (``key``) at or beyond the smallest n of ``where``."""
    ns = list(ns)
    if position == "all" or not ns or int(position) < min(ns):
        return []
    return [f"{key} {position} is beyond the smallest n = {min(ns)} of {where}: choose a position below every n"]


def pool_problem(key: str, count: int, config: Mapping[str, Any], what: str = "reviews") -> list[str]:
    """``key`` asking more of the review pool than ``data.pool_size`` holds: ``count`` reviews, or (``what``
    ``N``) N training reviews and the new one."""
    size = config["data"]["pool_size"]
    if what == "N":
        if count + 1 <= size:
            return []
        return [
            f"{key} = {count} needs data.pool_size >= {count + 1} (N training reviews and the new one): raise "
            "data.pool_size or lower N"
        ]
    if count <= size:
        return []
    return [
        f"{key} = {count} > data.pool_size = {size}: the reviews come from the pool: lower {key} or raise "
        "data.pool_size"
    ]


def words_problem(key: str, n: int, config: Mapping[str, Any]) -> list[str]:
    """A sample of n tokens needs reviews of n - 2 words, which the pool (reviews of fewer than
    data.max_tokens) may not keep."""
    limit = config["data"]["max_tokens"]
    if n - 2 < limit:
        return []
    return [
        f"{key} = {n} needs reviews of at least {n - 2} words (WordPiece tokens) but the pool keeps reviews of "
        f"fewer than data.max_tokens = {limit}: raise data.max_tokens or lower {key}"
    ]


def bert_problem(key: str, name: str, why: str) -> list[str]:
    """An encoder whose config.json is known and that is no BERT-family encoder (``why``: what goes
    through it)."""
    facts = model_config(name)
    if facts is None or facts.get("model_type") is None:
        return []
    problem = bert_family_problem(facts)
    return [f"{key}: {why}, and {problem}"] if problem else []
