"""How fast this machine runs wordsens's kind of work, against the machine the built-in time model
was fitted on (``wordsens.compute.timing.BUILTIN``): ``wordsens plan --probe``.

The probe times, on one thread (as a 1-thread job runs), the three kinds of work that the jobs
spend their time in: float32 matrix products (the features and Gram matrices of the generalisation
jobs, the first layers of the word-sensitivity maps), float64 dense linear algebra (products, a
Cholesky factor and a symmetric eigendecomposition: RF's Gram matrices, the generalisation's exact
first stage) and a search's many small autograd steps (an attention map's projected ascent, where
the per-operation overhead counts more than the flops). Each part is timed ``repeats`` times and its
fastest time kept, and the parts are added (other work on the machine still slows it: probe a quiet
machine).
``speed_factor`` is that time over ``REFERENCE_SECONDS``, the same probe on the built-in machine.
Importing this module is torch-free; the probe imports torch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["MAX_FACTOR", "MIN_FACTOR", "REFERENCE_SECONDS", "probe_seconds", "speed_factor"]

# ``probe_seconds()`` on the machine of ``BUILTIN`` (this project's 2-core AMD EPYC), quiet: the median
# of 5 calls, which ranged 0.39-0.41 s. Other work slows it although each part keeps its fastest
# repeat: 0.48 s beside a 2-thread matrix product (1.2 x), 0.59 s beside a running 2-core pipeline
# (1.5 x), so probe a quiet machine.
REFERENCE_SECONDS = 0.40

# A factor outside these is refused: not a machine's speed but a probe gone wrong (a busy machine, a
# throttled CPU, a broken BLAS).
MIN_FACTOR = 0.1
MAX_FACTOR = 10.0


def _parts(seed: int) -> list[Callable[[], None]]:
    import torch

    from ..maps.paper import raf_forward
    from ..search.engine import project

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
    import torch

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


def speed_factor(seconds: float | None = None) -> float:
    """This machine's probe time over the built-in machine's (2: twice as slow); ``seconds``: a probe
    time measured already (``probe_seconds``)."""
    measured = probe_seconds() if seconds is None else seconds
    if not (math.isfinite(measured) and measured > 0):
        raise ValueError(f"the speed probe took {measured} s: expected a positive time")
    factor = measured / REFERENCE_SECONDS
    if not MIN_FACTOR <= factor <= MAX_FACTOR:
        raise ValueError(
            f"the speed probe took {measured:.3g} s, {factor:.3g} x the built-in machine's {REFERENCE_SECONDS} s: "
            f"outside the {MIN_FACTOR}-{MAX_FACTOR} x a machine's speed can plausibly differ by (was it busy?); "
            "run it again on a quiet machine, or calibrate on a finished run (wordsens plan --calibrate RESULTS_DIR)"
        )
    return factor
