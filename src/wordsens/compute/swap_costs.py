"""What scoring a vocabulary's one-word substitutions costs (``wordsens.search.swaps``), torch-free.

A scan scores every word of a vocabulary (``exhaustive``: where a move's value is cheap, or the vocabulary's
forwards cost at most ``EXHAUSTIVE_FLOPS``) or, screened, a shortlist of it: a cheap score of every word (the
map's structural screen, else the first-order score), then the map's value on the shortlist and a sample of
words (a lower bound of S_words: docs/benchmarks.md). The planner and the numerics read here which of the two
a map gets, a chunk's memory and a position's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .costs import CHUNK, GEMM_FLOPS, MapSpec, MemoryEstimate, Work, itemsize, on_device
from .map_costs import AttentionCost, FirstLayerCost

# The constants' sources: docs/benchmarks.md, "Where the constants come from"
SCAN_FLOPS = 2 * GEMM_FLOPS  # float32 products of a scan on a 2-core CPU
HESSIAN_ROWS = 64  # zero moves per batch of the first-order Gram matrix (search.swaps.first_order_gram)
SCREEN_PROBES = 32  # Rademacher probes of the post-LayerNorm screen's gains (search.heads)
EXHAUSTIVE_FLOPS = 5e12  # about a minute at SCAN_FLOPS
_RF_VALUE_CHUNK = 32 * 1024**2  # RFProblem.value's pre-activations per chunk of B's rows (search.rf)


def exhaustive(
    spec: MapSpec,
    n: int | None = None,
    d: int | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    vocab: int | None = None,
) -> bool:
    """Whether every word of a vocabulary is scored: always where a move's value is cheap (RF, the
    attention maps), else where the ``vocab`` words' ``candidate_flops`` cost at most ``EXHAUSTIVE_FLOPS``
    (without sizes: no)."""
    if isinstance(spec.cost, (FirstLayerCost, AttentionCost)):
        return True
    if n is None or d is None or vocab is None:
        return False
    return vocab * candidate_flops(spec, n, d, spec.option_values(options or {})) <= EXHAUSTIVE_FLOPS


def candidate_flops(spec: MapSpec, n: int, d: int, options: Mapping[str, Any]) -> float:
    """Flops of the problem's value for one word: RF ``2 k d`` and its elementwise passes; attention
    ``2 (d^2 + 5 n d)`` times its ``time_scale``; any other map one forward (``forward_flops``)."""
    cost, work = spec.cost, Work(n, d, dict(options))
    if isinstance(cost, FirstLayerCost):
        k = cost.features(spec, work)
        return 2.0 * k * d + 8.0 * k
    if isinstance(cost, AttentionCost):
        return 2.0 * (d * d + 5 * n * d) * max(1.0, cost.time_scale)
    return cost.forward_flops(spec, work)


def candidate_bytes(spec: MapSpec, n: int, d: int, options: Mapping[str, Any], *, dtype: Any = "float32") -> int:
    """Working bytes of one word in a chunk of the scan: RF its move and a few copies; attention its scores
    and a few vectors, times ``time_scale``; any other map one restart of its search (``ws_memory``)."""
    cost, b = spec.cost, itemsize(dtype)
    if isinstance(cost, FirstLayerCost):
        return 4 * d * max(b, 8)
    if isinstance(cost, AttentionCost):
        return int((16 * n + 4 * d) * b * max(1.0, cost.time_scale))
    work = Work(n, d, spec.option_values(options), dtype=dtype)
    one, two = (cost.ws_memory(spec, replace(work, restarts=r)).bytes for r in (1, 2))
    return max(int(two - one), 8 * n * d)


def chunk_size(spec: MapSpec, n: int, d: int, options: Mapping[str, Any], *, chunk_mb: float, dtype: Any) -> int:
    """Words per chunk of the scan: ``chunk_mb`` MB of ``candidate_bytes`` each, at least 1."""
    return max(1, int(chunk_mb * 1024**2) // candidate_bytes(spec, n, d, options, dtype=dtype))


def scan_memory(
    spec: MapSpec,
    n: int,
    d: int,
    options: Mapping[str, Any],
    *,
    vocab: int,
    width: int,
    chunk: int,
    dtype: Any = "float32",
) -> MemoryEstimate:
    """Peak array memory of one position's scan: its problem (``ws_memory``, one restart), the float64
    embedding layer, the candidates' rows, moves and scores, ``chunk`` words' working arrays, the
    first-order Gram matrix (screened maps) and the chunked exact evaluations."""
    problem = spec.cost.ws_memory(spec, Work(n, d, spec.option_values(options), dtype=dtype, restarts=1)).bytes
    per = candidate_bytes(spec, n, d, options, dtype=dtype)
    rows = 8 * vocab * (width + 2 * d + 4)
    work = chunk * per + (_RF_VALUE_CHUNK if isinstance(spec.cost, FirstLayerCost) else 0)
    structural = spec.cost.screen_flops(spec, Work(n, d, dict(options))) is not None
    first_order = not exhaustive(spec, n, d, options, vocab=vocab) and not structural
    hessian = 8 * d * d + 3 * HESSIAN_ROWS * per if first_order else 0  # a structural screen's chunk: the value's
    return MemoryEstimate(
        int(problem + rows + work + hessian + CHUNK),
        f"{spec.name} at n = {n}, d = {d}: {vocab} words, {chunk} per chunk",
    )


def scan_seconds(
    spec: MapSpec,
    n: int,
    d: int,
    options: Mapping[str, Any],
    *,
    vocab: int,
    screen: int = 256,
    sample: int = 1024,
    device: str = "cpu",
) -> float:
    """Rough wall seconds of one position's scan on a 2-core CPU (``on_device``): the vocabulary's
    ``candidate_flops`` (exhaustive), or the screen (structural or first-order) and ``screen + sample``
    evaluations, at ``SCAN_FLOPS``; plus the candidates' rows."""
    per = candidate_flops(spec, n, d, options)
    structural = spec.cost.screen_flops(spec, Work(n, d, dict(options)))
    if structural is None:  # the Hessian's 3 d evaluations, then D^T G D per word
        setup, per_word = 3 * d * per, 2.0 * d * d
    else:  # the gains' forward-mode products (about two forwards per probe), then the screen per word
        setup, per_word = 2 * SCREEN_PROBES * per, structural
    screened = setup + vocab * per_word + min(vocab, screen + sample) * per
    flops = vocab * per if exhaustive(spec, n, d, options, vocab=vocab) else screened
    return on_device(flops / SCAN_FLOPS + vocab * d * 2e-8, device)
