"""The built-in maps, as data: the paper's four (``PAPER_SPECS``), the attention variants
(``VARIANT_SPECS``) and a checkpoint's layers (``TRAINED_SPECS``); ``wordsens.maps.registry`` registers
them. Torch is not imported: the planner reads these entries (options, shapes, cost models); the
implementations are named by ``"module:attribute"`` strings.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..compute.map_costs import DRF_RESTARTS, AttentionCost, DeepCost, FirstLayerCost, ScreenedCost
from .spec import Counterpart, MapSpec, SearchSettings

# RF's subspace ascent stops when its best squared change gains less than 1e-4 in 5 iterations: a tighter rule
# changes its estimates less than one trial's restarts differ (docs/benchmarks.md, "Where the constants come from").
_FIRST_LAYER = SearchSettings(restarts=5, keep=5, patience=5, tol=1e-4, momentum=0.0, polish=False, dtype="float32")
# Attention steps are cheap and ReLU attention has many local maxima with kinks: many restarts,
# momentum along ridges, and a final polish.
_ATTENTION = SearchSettings(restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True, follow_authors=True)
_SOFTMAX_ATTENTION = replace(_ATTENTION, least_squares=True)  # smooth in Delta: SearchSettings.least_squares

PAPER_SPECS = (
    MapSpec(
        "rf",
        "RF (k = D)",
        "relu(V flat(X)), in R^k",
        "V (k, n d), i.i.d. N(0, 1/(n d)); k = n d unless set",
        forward="wordsens.maps.paper:rf_forward",
        sample="wordsens.maps.sampling:rf_weights",
        check="wordsens.maps.paper:check_rf",
        fast="wordsens.search.rf:rf_prepare",
        settings=_FIRST_LAYER,
        cost=FirstLayerCost(),
        reference=(100.0, 300),
        options={"k": None},
        law="wordsens.theory:rf_law",
        law_label=r"RF law $(1+\sqrt{2/n})/\sqrt{n}$",
        output="(k,)",
        infer_options=lambda V: {"k": int(V.shape[0])},  # the width k: the rows of V
        gen="wordsens.generalisation.functionals:rf_setup",
        gen_reference=(100.0, 300),
        upper="wordsens.search.rf:rf_upper",
    ),
    MapSpec(
        "drf",
        "deep RF",
        "h_0 = flat(X), h_l = relu(V_l h_{l-1}), phi = h_L",
        "V_l (n d, n d), i.i.d. N(0, 2/(n d)), l = 1..L",
        forward="wordsens.maps.paper:drf_forward",
        sample="wordsens.maps.sampling:drf_weights",
        check="wordsens.maps.paper:check_drf",
        fast="wordsens.search.drf:drf_prepare",
        # 16 restarts, each run to convergence (halving them ends lower: docs/methods.md)
        settings=SearchSettings(
            restarts=DRF_RESTARTS,
            keep=DRF_RESTARTS,
            patience=10,
            tol=1e-4,
            momentum=0.0,
            polish=False,
            dtype="float32",
            reduced=("bfloat16",),
        ),
        cost=DeepCost(),
        reference=(100.0, 300),
        options={"L": 2},
        sweep=("L",),  # a grid lists its depths: a wildcard of the jobs (d768_n50_L2), a column of the tables
        output="(n d,)",
        infer_options=lambda Vs: {"L": len(Vs)},  # the depth L: the number of layers
        gen_reference=(100.0, 300),
    ),
    MapSpec(
        "raf",
        "RAF (softmax attention)",
        "softmax(X W X^T / sqrt(d)) X, softmax over each row",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps.paper:raf_forward",
        sample="wordsens.maps.sampling:attention_sample",
        check="wordsens.maps.paper:check_attention",
        fast="wordsens.search.attention:raf_prepare",
        settings=_SOFTMAX_ATTENTION,
        cost=AttentionCost(),
        gen="wordsens.generalisation.functionals:raf_setup",
    ),
    MapSpec(
        "relu_raf",
        "ReLU-RAF",
        "A X, A = relu(X W X^T / sqrt(d)) with each row divided by its sum (0 stays 0)",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps.paper:relu_raf_forward",
        sample="wordsens.maps.sampling:attention_sample",
        check="wordsens.maps.paper:check_attention",
        fast="wordsens.search.attention:relu_raf_prepare",
        settings=_ATTENTION,
        cost=AttentionCost(),
        gen="wordsens.generalisation.functionals:relu_raf_setup",
    ),
)

# --------------------------------------------------------------------------- attention variants beyond the paper
# wordsens.maps.variants holds their forwards, samplers and weight checks, wordsens.search.variants and
# wordsens.search.heads their searches; the shapes are written here, without torch, since the planner reads them.


def _check_heads(map_name: str, d: int, heads: Any) -> int:
    """``heads`` after checking that it is a positive integer dividing ``d`` (multi-head maps)."""
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise ValueError(f"{map_name}: the option heads must be a positive integer, got {heads!r}")
    if d % heads:
        divisors = [h for h in range(1, min(d, 64) + 1) if d % h == 0]
        raise ValueError(
            f"{map_name} splits d into heads of width d/heads, but d = {d} is not a multiple of "
            f"heads = {heads}; choose heads among the divisors of d (e.g. {divisors[-6:]}) through "
            "the map's options (options={'heads': ...}) or another d"
        )
    return heads


def _mh_raf_shapes(n: int, d: int, heads: int = 12) -> dict[str, tuple[int, ...]]:
    h = _check_heads("mh_raf", d, heads)
    return {"Wq": (h, d, d // h), "Wk": (h, d, d // h), "Wv": (h, d, d // h), "Wo": (d, d)}


def _block_shapes(n: int, d: int, heads: int = 12) -> dict[str, tuple[int, ...]]:
    _check_heads("block", d, heads)
    return {**_mh_raf_shapes(n, d, heads), "W1": (d, 4 * d), "W2": (4 * d, d)}


# The variants' problems polish in float64 along the sphere (wordsens.search.variants.MovedTokenProblem.polish),
# also where they search in float32 (mh_raf, block).
_VARIANT_MH = replace(_ATTENTION, dtype="float32")
# time_scale: the cost model's time scaled to benchmarks/bench_ws.py's times at d = 768, on the generous side
# (docs/benchmarks.md, "Where the constants come from"); the reference method's estimates of mh_raf and block
# come out low (their full maps cost n d^2 per step, more than the attention and dense models assume).

VARIANT_SPECS = (
    MapSpec(
        "sigmoid_raf",
        "sigmoid attention",
        "sigmoid(X W X^T / sqrt(d) - log n) X, no row normalisation",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps.variants:sigmoid_raf_forward",
        sample="wordsens.maps.variants:sigmoid_raf_sample",
        shapes=lambda n, d: {"W": (d, d)},
        fast="wordsens.search.variants:sigmoid_raf_prepare",
        settings=_ATTENTION,
        cost=AttentionCost(time_scale=2.5),
    ),
    MapSpec(
        "linear_raf",
        "linear attention (elu + 1)",
        "A X, A_jk = q_j.k_k / sum_k q_j.k_k, q_j = f(Wq^T x_j), k_k = f(Wk^T x_k), f = elu + 1",
        "Wq, Wk (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps.variants:linear_raf_forward",
        sample="wordsens.maps.variants:linear_raf_sample",
        shapes=lambda n, d: {"Wq": (d, d), "Wk": (d, d)},
        fast="wordsens.search.variants:linear_raf_prepare",
        settings=_ATTENTION,
        cost=AttentionCost(time_scale=8.0),
    ),
    MapSpec(
        "mh_raf",
        "multi-head attention",
        "concat_h softmax((X Wq_h)(X Wk_h)^T / sqrt(d/h)) X Wv_h, times Wo; h heads (option heads)",
        "Wq, Wk, Wv (h, d, d/h) and Wo (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps.variants:mh_raf_forward",
        sample="wordsens.maps.variants:mh_raf_sample",
        shapes=_mh_raf_shapes,
        check="wordsens.maps.variants:mh_raf_check",
        fast="wordsens.search.heads:mh_raf_prepare",
        settings=_VARIANT_MH,
        cost=AttentionCost(time_scale=10.0),
        options={"heads": 12},
    ),
    MapSpec(
        "block",
        "transformer block (post-LN)",
        "Y = LN(X + mh_raf(X)), phi = LN(Y + relu(Y W1) W2), LN without affine parameters (eps 1e-5)",
        "mh_raf's weights, W1 (d, 4d) i.i.d. N(0, 2/d), W2 (4d, d) i.i.d. N(0, 1/(4d))",
        forward="wordsens.maps.variants:block_forward",
        sample="wordsens.maps.variants:block_sample",
        shapes=_block_shapes,
        check="wordsens.maps.variants:block_check",
        fast="wordsens.search.heads:block_prepare",
        # 48 starts screened for 20 steps, then the best 4 (wordsens.search.heads.BlockProblem.search); the cost's
        # time_scale: docs/benchmarks.md, "Where the constants come from"
        settings=replace(_VARIANT_MH, restarts=48, keep=4, patience=10),
        cost=ScreenedCost(time_scale=0.4),
        options={"heads": 12},
    ),
)

# --------------------------------------------------------------------------- a pre-trained encoder's own layers
# wordsens.maps.trained holds the forward and checks, wordsens.maps.checkpoint the weight providers (the
# checkpoint's weights stand where the samplers are), wordsens.search.heads the attention's fast search.
# Options: model (a packaged encoder, a local folder or a Hub name), layer (1-based), head (one head, 1-based).

# The layers of trained_layer's formula search like block: 16 starts screened for 20 steps, the best 4 ascend on
# (wordsens.search.heads.LayerProblem.search); on MiniLM samples 16 starts end where 48 do. Their cost is block's
# model at its own time_scale (docs/benchmarks.md, "Where the constants come from" for both).
_LAYER = replace(_VARIANT_MH, restarts=16, keep=4, patience=10)
_LAYER_COST = ScreenedCost(time_scale=2.0)
# what the maps of a checkpoint layer's attention formula, and those of its whole layer's, share
_ATTENTION_OF_LAYER: dict[str, Any] = dict(
    forward="wordsens.maps.variants:mh_raf_forward",
    check="wordsens.maps.trained:trained_attention_check",
    fast="wordsens.search.heads:trained_attention_prepare",
    settings=_VARIANT_MH,
    cost=AttentionCost(time_scale=10.0),
    checkpoint=True,
)
_LAYER_OF_LAYER: dict[str, Any] = dict(
    forward="wordsens.maps.trained:trained_layer_forward",
    check="wordsens.maps.trained:trained_layer_check",
    fast="wordsens.search.heads:layer_prepare",
    settings=_LAYER,
    cost=_LAYER_COST,
    options={"model": "minilm", "layer": 1},
    checkpoint=True,
)

TRAINED_SPECS = (
    MapSpec(
        "trained_attention",
        "trained attention",
        "concat_h softmax((X Wq_h + bq_h)(X Wk_h + bk_h)^T / sqrt(d/h)) (X Wv_h + bv_h), times Wo, plus bo; "
        "one head without Wo (option head)",
        "a checkpoint's layer: the self-attention sublayer, without residual and LayerNorm",
        sample="wordsens.maps.checkpoint:trained_attention_weights",
        options={"model": "minilm", "layer": 1, "head": None},
        **_ATTENTION_OF_LAYER,
        counterparts=(
            Counterpart("mh_raf", "paper", "same d and heads; i.i.d. N(0, 1/d) weights, no biases"),
            Counterpart(
                "matched_attention",
                "model",
                "the trained weights' singular values and biases' norms, random directions",
            ),
        ),
    ),
    MapSpec(
        "trained_layer",
        "trained encoder layer",
        "Y = LN1(X + trained_attention(X)), phi = LN2(Y + GELU(Y W1 + b1) W2 + b2), the checkpoint's LayerNorms",
        "a checkpoint's layer: attention, LayerNorms and feed-forward layer (exact GELU)",
        sample="wordsens.maps.checkpoint:trained_layer_weights",
        **_LAYER_OF_LAYER,
        counterparts=(
            Counterpart(
                "block", "paper", "same d and heads; LayerNorm without gamma, beta (eps 1e-5), ReLU, no biases"
            ),
            Counterpart(
                "ln_block", "paper", "block's random weights with the trained LayerNorms (gamma, beta, eps), GELU"
            ),
            Counterpart(
                "matched_layer",
                "model",
                "the trained weights' singular values and biases' norms, random directions; the trained "
                "LayerNorms, GELU",
            ),
        ),
    ),
    # the random counterparts that a checkpoint's layer defines (trained_layer's formula, random directions)
    MapSpec(
        "matched_attention",
        "random attention, trained spectra",
        "trained_attention's formula: concat_h softmax((X Wq_h + bq_h)(X Wk_h + bk_h)^T / sqrt(d/h)) (X Wv_h + bv_h), "
        "times Wo, plus bo",
        "a checkpoint layer's attention with random singular vectors: each matrix (Wq_h, Wk_h, Wv_h, Wo) keeps its "
        "singular values, each bias its norm",
        sample="wordsens.maps.checkpoint:matched_attention_weights",
        options={"model": "minilm", "layer": 1},
        **_ATTENTION_OF_LAYER,
    ),
    MapSpec(
        "matched_layer",
        "random layer, trained spectra",
        "trained_layer's formula: Y = LN1(X + attention(X)), phi = LN2(Y + GELU(Y W1 + b1) W2 + b2)",
        "a checkpoint's layer with random singular vectors: each matrix keeps its singular values, each bias its "
        "norm; its LayerNorms (gamma, beta, eps) as trained",
        sample="wordsens.maps.checkpoint:matched_layer_weights",
        **_LAYER_OF_LAYER,
    ),
    MapSpec(
        "ln_block",
        "random block, trained LayerNorms",
        "trained_layer's formula without biases: Y = LN1(X + mh_raf(X)), phi = LN2(Y + GELU(Y W1) W2), "
        "LN1, LN2 with a checkpoint layer's gamma, beta and eps",
        "block's (the same seed gives block's very weights); a checkpoint layer's LayerNorms",
        sample="wordsens.maps.checkpoint:ln_block_weights",
        **_LAYER_OF_LAYER,
    ),
)

BUILTIN_SPECS: tuple[MapSpec, ...] = (*PAPER_SPECS, *VARIANT_SPECS, *TRAINED_SPECS)
