"""How fast this machine runs wordsens's kind of work: the speed probe of ``wordsens plan --probe``. It times,
on one thread, float32 matrix products, float64 dense linear algebra and a search's many small autograd steps,
each part's fastest of ``repeats`` runs, added up (``wordsens.compute.timing.speed_factor`` scales it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from ..maps.paper import raf_forward
from .engine import project


def _parts(seed: int) -> list[Callable[[], None]]:
    g = torch.Generator().manual_seed(seed)
    a32 = torch.randn(768, 1536, generator=g)
    b32 = torch.randn(1536, 768, generator=g)
    a64 = torch.randn(640, 640, generator=g, dtype=torch.float64)
    spd = a64 @ a64.T + 640 * torch.eye(640, dtype=torch.float64)
    w = torch.randn(192, 192, generator=g) / 192**0.5
    x0 = torch.randn(64, 192, generator=g)

    def float32_products() -> None:
        for _ in range(10):
            torch.mm(a32, b32)

    def float64_algebra() -> None:
        torch.mm(a64, a64)
        torch.linalg.cholesky(spd)
        torch.linalg.eigh(spd)

    def search_steps() -> None:
        x = x0.clone().requires_grad_(True)
        opt = torch.optim.Adam([x], lr=1e-2)
        for _ in range(250):
            loss = -raf_forward(x, w).square().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                x.copy_(project(x, 192**0.5))

    return [float32_products, float64_algebra, search_steps]


def probe_seconds(repeats: int = 5, seed: int = 0) -> float:
    """Seconds of the probe on one thread: each part's fastest of ``repeats`` runs, added up."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        total = 0.0
        for part in _parts(seed):
            part()  # warm-up: first-call allocations and kernel selection are not the machine's speed
            best = math.inf
            for _ in range(repeats):
                start = time.perf_counter()
                part()
                best = min(best, time.perf_counter() - start)
            total += best
    finally:
        torch.set_num_threads(threads)
    return total
