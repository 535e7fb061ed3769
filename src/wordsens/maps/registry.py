"""The map registry: one entry (``wordsens.maps.spec.MapSpec``) per feature map, read by every part
of wordsens. The built-in entries are data in ``wordsens.maps.catalog``, registered on import; their
implementations are ``"module:attribute"`` strings imported when used (``resolve``), so planning never
imports torch. Adding a map is one ``register(MapSpec(...))`` call; plugins (modules that register maps)
are imported from ``WORDSENS_PLUGINS`` (comma-separated module names or ``.py`` paths), which the
workflow sets from its ``plugins:`` key and the CLI from ``--plugin``, so every process knows the same maps.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..compute.costs import CostModel
from .catalog import BUILTIN_SPECS
from .spec import MapSpec

PAPER_MAPS = ("rf", "drf", "raf", "relu_raf")
PLUGINS_ENV = "WORDSENS_PLUGINS"

_REGISTRY: dict[str, MapSpec] = {}
_loaded_env: str | None = None


def register(spec: MapSpec, *, replace: bool = False) -> MapSpec:
    """Add ``spec`` to the registry (``replace=True`` to redefine a name); returns it."""
    if not spec.name.isidentifier() or not spec.name.islower():
        raise ValueError(f"map names are lower-case identifiers (they name files and CLI choices), got {spec.name!r}")
    if not isinstance(spec.cost, CostModel):
        raise ValueError(
            f"the cost model of map {spec.name!r} must be a wordsens.compute.costs.CostModel (e.g. DenseCost()), "
            f"got {spec.cost!r}"
        )
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
            f"unknown map {name!r}; choose one of {', '.join(names())} (or register yours, see wordsens.maps.registry)"
        ) from None


def swept_options() -> tuple[str, ...]:
    """Every option some registered map's grid may sweep (``MapSpec.sweep``), in registry order: the
    columns every word-sensitivity table has (empty where a map has no such option)."""
    out: list[str] = []
    for name in names():
        out += [key for key in _REGISTRY[name].sweep if key not in out]
    return tuple(out)


def sampler(build: Callable[..., Any]) -> Callable[..., Any]:
    """``build(seed, n, d, dtype, device, **options)`` as a registry sampler ``(seed, n, d, *, dtype,
    device, draw_on, **options)`` (``dtype`` None: float32; ``draw_on`` unused: draws small enough for the
    CPU, or a checkpoint's weights)."""

    def sample(
        seed: Any, n: int, d: int, *, dtype: Any = None, device: Any = "cpu", draw_on: str = "device", **options: Any
    ) -> Any:
        import torch

        return build(seed, n, d, torch.float32 if dtype is None else dtype, device, **options)

    sample.__name__, sample.__qualname__, sample.__doc__ = build.__name__, build.__qualname__, build.__doc__
    return sample


def resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """The callable named by ``"module:attribute"`` (or ``ref`` itself when it is one)."""
    if callable(ref):
        return ref
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """A block after which the registry holds the maps it held before it: maps registered inside it
    (by a plugin, by a test) do not outlive it, and plugins named in ``WORDSENS_PLUGINS`` inside it
    are imported again if asked for after it."""
    global _loaded_env
    saved, saved_env = dict(_REGISTRY), _loaded_env
    try:
        yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)
        _loaded_env = saved_env


for _spec in BUILTIN_SPECS:
    register(_spec)
