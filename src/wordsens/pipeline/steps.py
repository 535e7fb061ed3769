"""The data steps and probes that run a pre-trained model, as the workflow requests them: the
embedding jobs (``model.device``), the encoder probes of Figures 1 and 3 (``probes.device``) and the
language model of Figure 1 right (``probes.lm.device``), each with its host memory
(``wordsens.compute.costs``: the embeddings' from the pool and the encoder's width, the encoder probes'
from the encoder's size), the device the plan puts it on (``jobs.job_device``, the rule of every
job kind) and the GPU memory it declares (``gpu_mem_mb``). Torch-free.

The job itself resolves its ``auto`` setting where it runs (CUDA when one is visible there), so a
step planned for a GPU runs on the CPU of a machine without one, as it always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..compute import costs
from ..data.models import DEMO_LM, model_heads, model_layers, model_positions, model_width
from .jobs import CUDA_CONTEXT_BYTES, gpu_mem_mb, job_device
from .limits import Limits
from .trained import encoder_size

__all__ = ["Step", "embed_step", "gpu_budget_problem", "probe_step"]


@dataclass(frozen=True)
class Step:
    """What a step requests: host ``mem_mb``, the ``device`` the plan puts it on and the GPU
    memory it declares there (``gpu_mem_mb``, 0 on the CPU)."""

    mem_mb: int
    device: str
    gpu_mem_mb: int

    @property
    def gpu(self) -> int:
        """GPUs to request (the SLURM plugin's ``--gpus``): 1 on ``cuda``."""
        return 1 if self.device == "cuda" else 0


def _step(estimate: costs.MemoryEstimate, setting: str, limits: Limits, *, prefers_gpu: bool) -> Step:
    """A step of memory ``estimate`` and device ``setting``. On a GPU it declares its whole estimate
    (the model and a batch, and what it holds on the host besides: an upper bound) and its CUDA
    context."""
    device = job_device(setting, limits, prefers_gpu=prefers_gpu)
    return Step(-(-estimate.job // costs.MB), device, gpu_mem_mb(device, estimate.bytes + CUDA_CONTEXT_BYTES))


def embed_step(config: dict, limits: Limits, *, long: bool = False) -> Step:
    """The embedding job of the main store, or with ``long`` of the long-context store (its pool
    size and length: ``long_context``). A forward pass over the whole pool: worth a GPU of its own."""
    model = config["model"]
    size = config["long_context"] if long else {"pool_size": config["data"]["pool_size"], **model}
    estimate = costs.embed_memory(
        pool_size=size["pool_size"],
        max_length=size["max_length"],
        width=model_width(model["name"]),
        batch_size=model["batch_size"],
        dtype=model["dtype"],
    )
    return _step(estimate, model["device"], limits, prefers_gpu=True)


def probe_step(config: dict, limits: Limits, kind: str) -> Step:
    """A probe job: ``"encoder"`` (Figure 1 left, Figure 3 panels 3-4: a few forward passes, on a
    cluster not worth a GPU of its own; its memory from the size of the encoder, ``probes.model`` or
    ``model.name``, where its config.json is known without loading it) or ``"lm"`` (Figure 1 right: a
    causal language model)."""
    probes = config["probes"]
    if kind == "encoder":
        name = probes["model"] or config["model"]["name"]
        try:
            parameters: int | None = encoder_size(name)
        except ValueError:  # not known without loading it: the fallback
            parameters = None
        estimate = costs.probe_memory(
            "encoder", parameters=parameters, width=model_width(name), layers=model_layers(name),
            heads=model_heads(name), length=model_positions(name) or 512,
        )  # fmt: skip
        return _step(estimate, probes["device"], limits, prefers_gpu=False)
    estimate = costs.probe_memory("lm", demo=probes["lm"]["model"] == DEMO_LM)
    return _step(estimate, probes["lm"]["device"], limits, prefers_gpu=True)


def gpu_budget_problem(jobs: Iterable, steps: Mapping[str, Step | None], budget: int) -> str | None:
    """What declares more GPU memory than ``budget`` MB (``--resources gpu_mem_mb=...``): every such
    job (``point``, ``gpu_mem_mb``) and step of the run in one message with the ways out, or None.
    Snakemake itself would refuse such a job only when its turn comes, in the middle of the run."""
    over = [(job.point, job.gpu_mem_mb) for job in jobs]
    over += [(name, step.gpu_mem_mb) for name, step in steps.items() if step is not None]
    over = [(what, mb) for what, mb in over if mb > budget]
    if not over:
        return None
    return (
        f"{len(over)} job(s) declare more GPU memory than --resources gpu_mem_mb={budget} (MB):\n  "
        + "\n  ".join(f"{what}: {mb} MB" for what, mb in over)
        + "\n  Set the budget to the GPU's memory (profiles/gpu-node), or limits.gpu_memory_gb to at"
        f" most {budget / 1024:.1f} (GB), so that the plan leaves such jobs out."
    )
