"""The map registry: one entry per feature map, read by every part of wordsens.

An entry (``MapSpec``) holds what the CLI, the config schema, the workflow, the resource estimates,
the tables and the figures need to know about a map (name, label, formula, weight law, cost, search
settings, options), and where its implementation lives: the forward formula, the weight sampler,
the weights check and, where one exists, the fast search (``fast``). Implementations are named as
``"module:attribute"`` strings and imported only when used, so planning a workflow never imports
torch; a plugin may pass the callables themselves.

Adding a map is one ``register(MapSpec(...))`` call. Plugins (modules that register maps) are
imported from the ``WORDSENS_PLUGINS`` environment variable (comma-separated module names or
``.py`` paths), which the workflow sets from its ``plugins:`` config key and the CLI from
``--plugin``, so that every process of a run knows the same maps.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "PAPER_MAPS",
    "MapSpec",
    "SearchSettings",
    "get",
    "load_plugins",
    "names",
    "register",
    "resolve",
]

PAPER_MAPS = ("rf", "drf", "raf", "relu_raf")
PLUGINS_ENV = "WORDSENS_PLUGINS"


@dataclass(frozen=True)
class SearchSettings:
    """Defaults of the default word-sensitivity search of a map (see ``wordsens.search.ascend``)."""

    restarts: int  # starts searched as one batch
    keep: int  # restarts left after successive halvings
    patience: int  # steps over which the best value must gain ``tol``
    tol: float
    momentum: float  # weight of the previous unit step in the step direction
    polish: bool  # converge the leader tightly at the end
    dtype: str = "float64"  # working dtype of the search (the final value is always float64)
    # where the authors' whole schedule fits the step budget (their steps <= max_steps), also run their
    # algorithm and keep its best point (polished) among the candidates: the estimate is then never
    # below theirs on the same instance
    follow_authors: bool = False


@dataclass(frozen=True)
class MapSpec:
    """One registered feature map.

    ``forward(X, weights)``: the map on ``X`` of shape ``(..., n, d)`` (leading batch dimensions
    allowed), without input checks. ``sample(seed, n, d, *, dtype, device, draw_on, **options)``: its
    i.i.d. Gaussian weights, seeded (a tensor, a list, or a dict of named tensors). ``shapes(n, d,
    **options)``: the shape of every named weight (maps whose weights are a dict; ``check`` then
    follows from it), or ``check(weights, n, d)`` for other formats. ``fast``: a ``prepare(X64, seed,
    weights, ctx)`` returning, per position, the problem of the fast search (``wordsens.search``); None
    searches the full map with autograd (``wordsens.generic``). ``cost``: the resource model
    (``"rf"``, ``"drf"``, ``"attention"``, or ``"dense"``: a few copies of every weight and of
    (n, n) and (n, d) arrays per restart); ``cost_scale`` multiplies its time. ``reference``: the
    authors' schedule for this map: step size and number of steps (an int, or ``"50n"``).
    """

    name: str
    label: str
    formula: str
    weight_law: str
    forward: str | Callable[..., Any]
    sample: str | Callable[..., Any]
    settings: SearchSettings
    shapes: Callable[..., Mapping[str, tuple[int, ...]]] | None = None
    check: str | Callable[..., None] | None = None
    fast: str | Callable[..., Any] | None = None
    cost: str = "dense"
    cost_scale: float = 1.0
    reference: tuple[float, int | str] = (10.0, "50n")
    options: Mapping[str, Any] = field(default_factory=dict)
    output: str = "(n, d)"

    def option_values(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The map's options: its defaults updated with ``options`` (unknown keys refused)."""
        given = dict(options or {})
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"map {self.name!r} has no option {', '.join(unknown)} (its options: {known})")
        return {**self.options, **given}

    def reference_steps(self, n: int) -> int:
        """Steps of the authors' schedule at context length ``n``."""
        steps = self.reference[1]
        return 50 * n if steps == "50n" else int(steps)

    def weight_count(self, n: int, d: int, options: Mapping[str, Any] | None = None) -> int:
        """Number of weights (for memory estimates); dense maps with ``shapes`` only."""
        if self.shapes is None:
            return d * d
        return sum(math.prod(shape) for shape in self.shapes(n, d, **self.option_values(options)).values())


_REGISTRY: dict[str, MapSpec] = {}
_loaded_env: str | None = None


def register(spec: MapSpec, *, replace: bool = False) -> MapSpec:
    """Add ``spec`` to the registry (``replace=True`` to redefine a name); returns it."""
    if not spec.name.isidentifier() or not spec.name.islower():
        raise ValueError(f"map names are lower-case identifiers (they name files and CLI choices), got {spec.name!r}")
    if spec.cost not in ("rf", "drf", "attention", "dense"):
        raise ValueError(f"unknown cost model {spec.cost!r} for map {spec.name!r}")
    if spec.name in _REGISTRY and not replace and _REGISTRY[spec.name] != spec:
        raise ValueError(f"a map named {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec
    return spec


def load_plugins(modules: Iterable[str] | None = None) -> None:
    """Import plugin modules (names, or paths of ``.py`` files) that register maps; with no argument,
    those of the ``WORDSENS_PLUGINS`` environment variable (once per value)."""
    global _loaded_env
    if modules is None:
        value = os.environ.get(PLUGINS_ENV, "")
        if value == _loaded_env:
            return
        _loaded_env = value
        modules = [m.strip() for m in value.split(",") if m.strip()]
    for module in modules:
        path = Path(module)
        try:
            if module.endswith(".py"):
                spec = importlib.util.spec_from_file_location(f"wordsens_plugin_{path.stem}", path)
                if spec is None or spec.loader is None or not path.is_file():
                    raise ImportError(f"no such file: {path}")
                loaded = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = loaded
                spec.loader.exec_module(loaded)
            else:
                importlib.import_module(module)
        except ImportError as err:
            raise ValueError(
                f"cannot import the map plugin {module!r} ({err}); check the plugins setting "
                f"({PLUGINS_ENV}, --plugin or the config key plugins)"
            ) from err


def names() -> tuple[str, ...]:
    """Every registered map, the paper's four first."""
    load_plugins()
    return tuple(
        sorted(_REGISTRY, key=lambda m: (m not in PAPER_MAPS, PAPER_MAPS.index(m) if m in PAPER_MAPS else 0, m))
    )


def get(name: str) -> MapSpec:
    """The entry of map ``name``; ``ValueError`` naming the registered maps otherwise."""
    load_plugins()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown map {name!r}; choose one of {', '.join(names())} (or register yours, see wordsens.registry)"
        ) from None


def resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """The callable named by ``"module:attribute"`` (or ``ref`` itself when it is one)."""
    if callable(ref):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


# --------------------------------------------------------------------------- the built-in maps

_FIRST_LAYER = SearchSettings(restarts=5, keep=5, patience=10, tol=1e-5, momentum=0.0, polish=False, dtype="float32")
# Attention steps are cheap and ReLU attention has many local maxima with kinks: many restarts,
# momentum along ridges, and a final polish.
_ATTENTION = SearchSettings(restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True, follow_authors=True)

register(
    MapSpec(
        "rf",
        "RF (k = D)",
        "relu(V flat(X)), in R^k",
        "V (k, n d), i.i.d. N(0, 1/(n d)); k = n d unless set",
        forward="wordsens.maps:rf_forward",
        sample="wordsens.maps:rf_sample",
        check="wordsens.maps:check_rf",
        fast="wordsens.firstlayer:rf_prepare",
        # RF uses the subspace ascent of RFProblem.search, whose iterations are few: a tight tolerance
        settings=_FIRST_LAYER,
        cost="rf",
        reference=(100.0, 300),
        options={"k": None},
        output="(k,)",
    )
)
register(
    MapSpec(
        "drf",
        "deep RF",
        "h_0 = flat(X), h_l = relu(V_l h_{l-1}), phi = h_L",
        "V_l (n d, n d), i.i.d. N(0, 2/(n d)), l = 1..L",
        forward="wordsens.maps:drf_forward",
        sample="wordsens.maps:drf_sample",
        check="wordsens.maps:check_drf",
        fast="wordsens.drf:drf_prepare",
        settings=SearchSettings(restarts=5, keep=5, patience=10, tol=1e-4, momentum=0.0, polish=False, dtype="float32"),
        cost="drf",
        reference=(100.0, 300),
        options={"L": 2},
        output="(n d,)",
    )
)
register(
    MapSpec(
        "raf",
        "RAF (softmax attention)",
        "softmax(X W X^T / sqrt(d)) X, softmax over each row",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps:raf_forward",
        sample="wordsens.maps:attention_sample",
        check="wordsens.maps:check_attention",
        fast="wordsens.attention:raf_prepare",
        settings=_ATTENTION,
        cost="attention",
    )
)
register(
    MapSpec(
        "relu_raf",
        "ReLU-RAF",
        "A X, A = relu(X W X^T / sqrt(d)) with each row divided by its sum (0 stays 0)",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.maps:relu_raf_forward",
        sample="wordsens.maps:attention_sample",
        check="wordsens.maps:check_attention",
        fast="wordsens.attention:relu_raf_prepare",
        settings=_ATTENTION,
        cost="attention",
    )
)

# --------------------------------------------------------------------------- attention variants (issue 10)
# wordsens.variants holds their forwards, samplers and weight checks, wordsens.variants_fast and
# wordsens.variants_heads their searches; the shapes are written here, without torch, since the planner reads them.


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


# The variants' problems polish in float64 along the sphere (wordsens.variants_fast.MovedTokenProblem.polish),
# also where they search in float32 (mh_raf, block).
_VARIANT_ATTENTION = SearchSettings(
    restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True, follow_authors=True
)
_VARIANT_MH = SearchSettings(
    restarts=64, keep=8, patience=40, tol=1e-4, momentum=0.5, polish=True, dtype="float32", follow_authors=True
)
# cost_scale: resources.ws_seconds of the default search against the times measured on the project's
# 2-core machine at d = 768 (benchmarks/bench_ws.py), about 1.5-3x generous: sigmoid_raf 0.3-0.45 s at
# n = 50; linear_raf 0.8 s at n = 50; mh_raf 1.3-1.4 s at n = 50, 5-8 s at n = 1024; block 3.7-6.7 s
# at n = 50, 36-45 s at n = 256. (The reference method's estimates of mh_raf and block come out low:
# their full maps cost n d^2 per step, more than the attention and dense models assume at this scale.)

register(
    MapSpec(
        "sigmoid_raf",
        "sigmoid attention",
        "sigmoid(X W X^T / sqrt(d) - log n) X, no row normalisation",
        "W (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.variants:sigmoid_raf_forward",
        sample="wordsens.variants:sigmoid_raf_sample",
        shapes=lambda n, d: {"W": (d, d)},
        fast="wordsens.variants_fast:sigmoid_raf_prepare",
        settings=_VARIANT_ATTENTION,
        cost="attention",
        cost_scale=2.5,
    )
)
register(
    MapSpec(
        "linear_raf",
        "linear attention (elu + 1)",
        "A X, A_jk = q_j.k_k / sum_k q_j.k_k, q_j = f(Wq^T x_j), k_k = f(Wk^T x_k), f = elu + 1",
        "Wq, Wk (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.variants:linear_raf_forward",
        sample="wordsens.variants:linear_raf_sample",
        shapes=lambda n, d: {"Wq": (d, d), "Wk": (d, d)},
        fast="wordsens.variants_fast:linear_raf_prepare",
        settings=_VARIANT_ATTENTION,
        cost="attention",
        cost_scale=8.0,
    )
)
register(
    MapSpec(
        "mh_raf",
        "multi-head attention",
        "concat_h softmax((X Wq_h)(X Wk_h)^T / sqrt(d/h)) X Wv_h, times Wo; h heads (option heads)",
        "Wq, Wk, Wv (h, d, d/h) and Wo (d, d), i.i.d. N(0, 1/d)",
        forward="wordsens.variants:mh_raf_forward",
        sample="wordsens.variants:mh_raf_sample",
        shapes=_mh_raf_shapes,
        check="wordsens.variants:mh_raf_check",
        fast="wordsens.variants_heads:mh_raf_prepare",
        settings=_VARIANT_MH,
        cost="attention",
        cost_scale=10.0,
        options={"heads": 12},
    )
)
register(
    MapSpec(
        "block",
        "transformer block (post-LN)",
        "Y = LN(X + mh_raf(X)), phi = LN(Y + relu(Y W1) W2), LN without affine parameters (eps 1e-5)",
        "mh_raf's weights, W1 (d, 4d) i.i.d. N(0, 2/d), W2 (4d, d) i.i.d. N(0, 1/(4d))",
        forward="wordsens.variants:block_forward",
        sample="wordsens.variants:block_sample",
        shapes=_block_shapes,
        check="wordsens.variants:block_check",
        fast="wordsens.variants_heads:block_prepare",
        settings=SearchSettings(
            restarts=4, keep=2, patience=10, tol=1e-4, momentum=0.5, polish=True, dtype="float32", follow_authors=True
        ),
        cost="dense",
        cost_scale=0.2,
        options={"heads": 12},
    )
)
