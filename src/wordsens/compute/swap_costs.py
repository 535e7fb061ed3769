"""What scoring a vocabulary's one-word substitutions costs (``wordsens.search.swaps``), torch-free.

A scan evaluates the word-sensitivity problem of a map at one position for every word of a vocabulary
(``exhaustive``) or for a first-order shortlist of it (screened). Which of the two a map gets, the
memory of a chunk of candidates and the time of one position are read here from the map's cost model
(``MapSpec.cost``): the planner (``wordsens.studies.swaps.plan``) and the numerics decide alike.

* Exhaustive (a move changes one row, and the map's problem evaluates it cheaply): RF
  (``FirstLayerCost``: one product with the moved token's block ``B`` (k, d), ``2 k d`` flops per word)
  and the attention maps with a moved-row path (``AttentionCost``: one row and one column of the
  scores, ``2 (d^2 + 5 n d)`` flops per word, times the map's ``time_scale``).
* Every other map (DRF's later layers, ``block``, ``trained_layer``, plugins) is scored exhaustively too
  while the vocabulary's full forwards cost at most ``EXHAUSTIVE_FLOPS`` (the tiny models, small d and
  n), and screened beyond: a cheap score of every word, then the map's value on the shortlist and a
  sample of words (one full forward each). The score is the map's structural screen where its cost
  model has one (``CostModel.screen_flops``: the post-LayerNorm layers, exact up to their first
  LayerNorm, ``O(d^2 + n d h)`` per word after ``SCREEN_PROBES`` probes of their second sublayer's
  gains), else the first-order score of the problem's value (the Hessian at 0: ``d`` rows, about three
  evaluations each; ``2 d^2`` flops per word). Which words the screen misses is measured by
  ``benchmarks/bench_swaps.py --recall`` (docs/benchmarks.md): a screened scan is a lower bound of
  S_words, marked screened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .costs import CHUNK, GEMM_FLOPS, CostModel, MapSpec, MemoryEstimate, itemsize
from .map_costs import AttentionCost, FirstLayerCost

__all__ = [
    "EXHAUSTIVE_FLOPS",
    "HESSIAN_ROWS",
    "SCAN_FLOPS",
    "SCREEN_PROBES",
    "candidate_bytes",
    "candidate_flops",
    "chunk_size",
    "exhaustive",
    "scan_memory",
    "scan_seconds",
]

# float32 products of a scan on a 2-core CPU: twice GEMM_FLOPS (float64), within the range RF's scan
# reached on this project's machine, loaded and quiet (docs/benchmarks.md, "Where the constants come
# from"). The calibration of the swaps jobs (wordsens.compute.timing) scales the model to the machine.
SCAN_FLOPS = 2 * GEMM_FLOPS
HESSIAN_ROWS = 64  # zero moves per batch of the first-order Gram matrix (search.swaps.first_order_gram)
# Rademacher probes of the post-LayerNorm layers' screen, which weighs each row's change by the second
# sublayer's mean gain there (search.heads.PostLNProblem.screener): a ranking weight, which needs only a rough
# estimate. Beside the exact Jacobian norms, 8 or 32 probes put the best word in the top 16 about as often as
# the exact norms do (docs/benchmarks.md, "Where the constants come from")
SCREEN_PROBES = 32
# A map without a cheap move is scored exhaustively where its vocabulary's forwards cost at most this:
# about a minute at SCAN_FLOPS (DRF at d = 16, n = 16: 8e9 for BERT-Base's words; block at d = 768, n = 128: 5e13)
EXHAUSTIVE_FLOPS = 5e12
_RF_VALUE_CHUNK = 32 * 1024**2  # RFProblem.value's pre-activations per chunk of B's rows (search.rf)


def _cost(spec: MapSpec) -> CostModel:
    return spec.cost  # type: ignore[attr-defined]


def exhaustive(
    spec: MapSpec,
    n: int | None = None,
    d: int | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    vocab: int | None = None,
) -> bool:
    """Whether every word of a vocabulary is scored: always where a move's value is cheap (RF, the
    attention maps with a moved-row path), else where the ``vocab`` words' ``candidate_flops`` at (n, d)
    cost at most ``EXHAUSTIVE_FLOPS`` (without sizes: no); otherwise a first-order shortlist is."""
    if isinstance(_cost(spec), (FirstLayerCost, AttentionCost)):
        return True
    if n is None or d is None or vocab is None:
        return False
    values = spec.option_values(options or {})  # type: ignore[attr-defined]
    return vocab * candidate_flops(spec, n, d, values) <= EXHAUSTIVE_FLOPS


def candidate_flops(spec: MapSpec, n: int, d: int, options: Mapping[str, Any]) -> float:
    """Floating-point operations of the problem's value for one word: RF ``2 k d`` (the product with
    ``B``) plus its elementwise passes; attention ``2 (d^2 + 5 n d)`` times its ``time_scale``; any
    other map one full forward (its cost model's ``forward_flops``: DRF ``2 L (n d)^2``, else ``2 n``
    times its weights, at least ``12 d^2``, plus ``4 n^2 d`` for the scores)."""
    cost = _cost(spec)
    values = dict(options)
    if isinstance(cost, FirstLayerCost):
        k = cost.features(spec, n, d, values)
        return 2.0 * k * d + 8.0 * k
    if isinstance(cost, AttentionCost):
        return 2.0 * (d * d + 5 * n * d) * max(1.0, cost.time_scale)
    return cost.forward_flops(spec, n, d, values)


def candidate_bytes(spec: MapSpec, n: int, d: int, options: Mapping[str, Any], *, dtype: Any = "float32") -> int:
    """Working bytes of one word in a chunk of the scan: RF its move and a few copies (the
    pre-activations are chunked by ``B``'s rows, ``_RF_VALUE_CHUNK``); attention its scores and a few
    (n)- and (d)-vectors, times ``time_scale`` (the multi-head maps hold per-head scores); any other map
    what one restart of its search holds (its cost model, ``ws_memory`` at two restarts less at one)."""
    cost, b = _cost(spec), itemsize(dtype)
    if isinstance(cost, FirstLayerCost):
        return 4 * d * max(b, 8)
    if isinstance(cost, AttentionCost):
        return int((16 * n + 4 * d) * b * max(1.0, cost.time_scale))
    one = spec.ws_memory(n, d, options, dtype=dtype, restarts=1).bytes  # type: ignore[attr-defined]
    two = spec.ws_memory(n, d, options, dtype=dtype, restarts=2).bytes  # type: ignore[attr-defined]
    return max(int(two - one), 8 * n * d)


def chunk_size(spec: MapSpec, n: int, d: int, options: Mapping[str, Any], *, chunk_mb: float, dtype: Any) -> int:
    """Words per chunk of the scan: ``chunk_mb`` MB of working arrays (``candidate_bytes`` each), at
    least 1."""
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
    """Peak array memory of one position's scan beside its problem (the map's ``ws_memory`` with one
    restart): the float64 embedding layer (``vocab`` x ``width``), the candidates' rows and moves
    (float64, ``vocab`` x ``d`` each), the scores, ``chunk`` words' working arrays, the first-order
    Gram matrix and its batch of rows (screened maps), and the chunked exact evaluations."""
    problem = spec.ws_memory(n, d, options, dtype=dtype, restarts=1).bytes  # type: ignore[attr-defined]
    per = candidate_bytes(spec, n, d, options, dtype=dtype)
    rows = 8 * vocab * (width + 2 * d + 4)
    work = chunk * per + (_RF_VALUE_CHUNK if isinstance(_cost(spec), FirstLayerCost) else 0)
    structural = _cost(spec).screen_flops(spec, n, d, dict(options)) is not None
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
    """Rough wall seconds of one position's scan on a 2-core CPU (a data-centre GPU: / 20): the
    vocabulary's ``candidate_flops`` (exhaustive), or the screen and ``screen + sample`` evaluations
    (screened): the map's structural screen (``CostModel.screen_flops`` per word, after its gains'
    probes) or the first-order one (the Hessian's ``3 d`` evaluations, ``2 d^2`` per word), at
    ``SCAN_FLOPS``; plus the candidates' rows (``vocab`` rows of the embedding layer)."""
    per = candidate_flops(spec, n, d, options)
    structural = _cost(spec).screen_flops(spec, n, d, dict(options))
    if structural is None:  # the Hessian's 3 d evaluations, then D^T G D per word
        setup, per_word = 3 * d * per, 2.0 * d * d
    else:  # the gains' forward-mode products (about two forwards per probe), then the screen per word
        setup, per_word = 2 * SCREEN_PROBES * per, structural
    screened = setup + vocab * per_word + min(vocab, screen + sample) * per
    flops = vocab * per if exhaustive(spec, n, d, options, vocab=vocab) else screened
    seconds = flops / SCAN_FLOPS + vocab * d * 2e-8
    return seconds / 20 if device == "cuda" else seconds
