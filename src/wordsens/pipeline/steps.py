"""The data steps that run a pre-trained model, as the workflow requests them: the embedding job of each
store (``model.device``), with its host memory (``wordsens.compute.costs``), the device the plan puts it
on (``wordsens.studies.job_device``, the rule of every job kind) and the GPU memory it declares
(``gpu_mem_mb``); and the check of every job and step against a GPU budget (``gpu_budget_problem``).
Torch-free.

The job itself resolves its ``auto`` setting where it runs (CUDA when one is visible there), so a
step planned for a GPU runs on the CPU of a machine without one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..compute import costs
from ..compute.limits import Limits
from ..compute.placement import Request, request
from ..data.models import model_width
from ..studies import Store

__all__ = ["embed_step", "gpu_budget_problem"]


def embed_step(config: dict, limits: Limits, store: Store) -> Request:
    """The embedding job of ``store`` (its pool size and length). A forward pass over the whole pool:
    worth a GPU of its own."""
    model = config["model"]
    estimate = costs.embed_memory(
        pool_size=store.pool_size,
        max_length=store.max_length,
        width=model_width(model["name"]),
        batch_size=model["batch_size"],
        dtype=model["dtype"],
    )
    return request(estimate, model["device"], limits, prefers_gpu=True)


def gpu_budget_problem(jobs: Iterable, steps: Mapping[str, int], budget: int) -> str | None:
    """What declares more GPU memory than ``budget`` MB (``--resources gpu_mem_mb=...``): every such
    job (``point``, ``gpu_mem_mb``) and step (name -> its ``gpu_mem_mb``) of the run in one message with
    the ways out, or None. Snakemake itself would refuse such a job only when its turn comes, in the
    middle of the run."""
    over = [(job.point, job.gpu_mem_mb) for job in jobs]
    over += list(steps.items())
    over = [(what, mb) for what, mb in over if mb > budget]
    if not over:
        return None
    return (
        f"{len(over)} job(s) declare more GPU memory than --resources gpu_mem_mb={budget} (MB):\n  "
        + "\n  ".join(f"{what}: {mb} MB" for what, mb in over)
        + "\n  Set the budget to the GPU's memory (profiles/gpu-node), or limits.gpu_memory_gb to at"
        f" most {budget / 1024:.1f} (GB), so that the plan leaves such jobs out."
    )
