"""Stable seeds and the canonical form of configuration values. Every random draw comes from a CPU
``torch.Generator`` seeded by ``derive_seed`` of plain values (the global seed, the experiment, the trial,
the draw's purpose): the same on every machine, Python version and job order. ``canonical`` is the one
canonical form of configuration values (for seeds, the configuration hash and the workflow's job params).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported lazily: the workflow's planning process never loads it
    import torch


def canonical(value: Any, *, integral_floats: bool = False) -> Any:
    """``value`` with dict keys sorted (as strings) and tuples as lists, recursively; ``integral_floats``
    also writes 100.0 as 100 (for hashes; job params keep their floats, as scripts receive them)."""
    if integral_floats and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [canonical(v, integral_floats=integral_floats) for v in value]
    if isinstance(value, dict):
        return {str(k): canonical(v, integral_floats=integral_floats) for k, v in sorted(value.items())}
    return value


def canonical_json(value: object) -> str:
    """Compact JSON text of ``canonical(value, integral_floats=True)``: equal values, equal text."""
    return json.dumps(canonical(value, integral_floats=True), sort_keys=True, default=str, separators=(",", ":"))


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any JSON-representable values, stable across machines and runs."""
    digest = hashlib.blake2b(canonical_json(list(parts)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & (2**63 - 1)


def generator(seed: int | torch.Generator) -> torch.Generator:
    """A CPU generator for ``seed`` (an int), or ``seed`` itself when it already is one."""
    import torch

    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int or a torch.Generator, got {seed!r}")
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed % (2**63))
    return gen
