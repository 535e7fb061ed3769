"""The maps by name (or spec): validation, ``apply``, ``feature_map`` (``maps.<name>``) and
``sample_weights`` for every registered map. A sample ``X`` is ``(..., n, d)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from . import registry
from .checks import check_keys, check_sample, check_weight, scalars_as_tensors
from .spec import MapSpec, check_positive

Tensor = torch.Tensor


def spec_of(map_: str | MapSpec) -> MapSpec:
    """A map's spec from its name (a registry lookup) or the spec itself: the functions below take
    either, so that code holding a spec resolved once never looks the name up again."""
    return map_ if isinstance(map_, MapSpec) else registry.get(map_)


def check_weights(map_: str | MapSpec, weights: Any, n: int, d: int, options: Mapping[str, Any] | None = None) -> None:
    """Raise ``ValueError`` unless ``weights`` have the format and shapes the map (its name or spec)
    takes at (n, d)."""
    spec = spec_of(map_)
    name = spec.name
    if spec.check is not None:
        registry.resolve(spec.check)(weights, n, d)
        return
    if spec.shapes is None:
        return
    shapes = spec.shapes(n, d, **spec.option_values(options))
    check_keys(name, weights, shapes)
    for key, shape in shapes.items():
        check_weight(name, key, weights[key], shape, f"n = {n}, d = {d}")


def feature_map(name: str) -> Callable[..., Tensor]:
    """The validated map called ``name``: ``phi(X, weights)`` checks its inputs first."""
    registry.get(name)
    return lambda X, weights: apply(name, X, weights, check=True)


def apply(map_: str | MapSpec, X: Tensor, weights: Any, *, check: bool = False) -> Tensor:
    """``phi(X)`` of the map (its name or spec) with ``weights`` in its format, for ``X`` (..., n, d);
    ``check=True`` validates both first (what ``maps.<name>`` does), the default trusts inputs validated
    once. A scalar weight given as a number reaches the forward as a 0-d tensor of ``X``'s dtype."""
    spec = spec_of(map_)
    if check:
        n, d = check_sample(X)
        check_weights(spec, weights, n, d)
    return registry.resolve(spec.forward)(X, scalars_as_tensors(weights, X))


def sample_weights(
    map_: str | MapSpec,
    seed: int | torch.Generator,
    n: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    draw_on: str = "device",
    **options: Any,
) -> Any:
    """Weights of the map (its name or spec) in the format it takes (RF: V, DRF: list, RAF maps: W, the
    other maps: a dict of named tensors), drawn from ``seed``. ``options``: the map's options
    (RF ``k``, DRF ``L``, multi-head maps ``heads``; ``wordsens maps`` lists them). ``L`` and ``k``
    are accepted for every map and ignored by those without them, so that one call serves every map."""
    spec = spec_of(map_)
    check_positive(n=n, d=d)
    values = spec.option_values(
        {
            key: value
            for key, value in options.items()
            if value is not None and (key in spec.options or key not in ("L", "k"))
        }
    )
    return registry.resolve(spec.sample)(seed, n, d, dtype=dtype, device=device, draw_on=draw_on, **values)
