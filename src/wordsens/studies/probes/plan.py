"""The probes' plan: the encoder they read, what each probe step requests, the steps the planner
schedules (``steps``), the targets of the workflow, what they read and the checks of their section.
Torch-free.
"""

from __future__ import annotations

from pathlib import Path

from ...compute import costs
from ...compute.limits import Limits
from ...compute.placement import Request, request
from ...data.models import DEMO_LM, encoder_size, model_heads, model_layers, model_positions, model_width
from ..spec import Needs, Step


def caption(name: str) -> str:
    """The path of a figure's caption (this study's ``report/`` folder)."""
    return str(Path(__file__).resolve().parent / "report" / name)


def probe_model(config: dict) -> str:
    """The probed encoder: ``probes.model``, else model.name."""
    return str(config["probes"]["model"] or config["model"]["name"])


def probe_request(config: dict, limits: Limits, kind: str) -> Request:
    """A probe job: ``"encoder"`` (Figure 1 left, Figure 3 panels 3-4: a few forward passes, on a
    cluster not worth a GPU of its own; its memory from the size of the encoder, ``probes.model`` or
    ``model.name``, where its config.json is known without loading it) or ``"lm"`` (Figure 1 right: a
    causal language model)."""
    probes = config["probes"]
    if kind == "encoder":
        name = probe_model(config)
        try:
            parameters: int | None = encoder_size(name)
        except ValueError:  # not known without loading it: the fallback
            parameters = None
        estimate = costs.probe_memory(
            "encoder", parameters=parameters, width=model_width(name), layers=model_layers(name),
            heads=model_heads(name), length=model_positions(name) or 512,
        )  # fmt: skip
        return request(estimate, probes["device"], limits, prefers_gpu=False)
    estimate = costs.probe_memory("lm", demo=probes["lm"]["model"] == DEMO_LM)
    return request(estimate, probes["lm"]["device"], limits, prefers_gpu=True)


def steps(config: dict, limits: Limits) -> list[Step]:
    """The probes' steps as the planner schedules them: the encoder's tables (Figure 1's attention,
    Figure 3's probes: after the encoder and, where Figure 3 reads the pool, after it), the language
    model's answers (after the demo LM where it is the demo's), each table's figure after it."""
    probes = config["probes"]
    out: list[Step] = []
    if probes["enabled"]:
        encoder = probe_request(config, limits, "encoder")
        model = f"model:{probe_model(config)}"
        pool = ("pool",) if probes["fig3"]["text"] is None else ()
        out += [
            Step(name="fig1_attention", family="fig1_attention", after=(model,), gpu_mem_mb=encoder.gpu_mem_mb,
                 mem_mb=encoder.mem_mb, device=encoder.device, benchmarked=True),
            Step(name="fig1_attention_figure", family="fig1_attention_figure", after=("fig1_attention",), figure=True),
            Step(name="fig3_probes", family="fig3_probes", after=(model, *pool), gpu_mem_mb=encoder.gpu_mem_mb,
                 mem_mb=encoder.mem_mb, device=encoder.device, benchmarked=True),
            Step(name="fig3_figures", family="fig3_figures", after=("fig3_probes",), figure=True),
        ]  # fmt: skip
    if probes["lm"]["enabled"]:
        lm = probe_request(config, limits, "lm")
        demo = probes["lm"]["model"] == DEMO_LM
        out += [Step(name="demo_lm", family="demo_lm")] if demo else []
        out += [
            Step(name="fig1_lm", family="fig1_lm", after=("demo_lm",) if demo else (), gpu_mem_mb=lm.gpu_mem_mb,
                 mem_mb=lm.mem_mb, device=lm.device, benchmarked=True),
            Step(name="fig1_lm_figure", family="fig1_lm_figure", after=("fig1_lm",), figure=True),
        ]  # fmt: skip
    return out


def targets(config: dict) -> list[str]:
    """The rules whose outputs the run asks for: the figures of the probes that are enabled."""
    probes = config["probes"]
    out = ["fig1_attention_figure", "fig3_figures"] if probes["enabled"] else []
    return out + (["fig1_lm_figure"] if probes["lm"]["enabled"] else [])


def needs(config: dict) -> Needs:
    """The probed encoder (and model.name, whose pool Figure 3 reads without its own text) and the causal
    language model where it is neither the demo's nor a local folder."""
    probes = config["probes"]
    encoders: dict[str, str] = {}
    if probes["enabled"]:
        encoders["model.name"] = config["model"]["name"]
        if probes["model"] is not None:
            encoders["probes.model"] = probes["model"]
    others: dict[str, tuple[str, str]] = {}
    lm = probes["lm"]
    if lm["enabled"] and lm["model"] != DEMO_LM and not Path(lm["model"]).expanduser().exists():
        others["probes.lm.model"] = (
            lm["model"],
            "point probes.lm.model at a local causal LM or set probes.lm.enabled: false",
        )
    return Needs(pool=probes["enabled"] and probes["fig3"]["text"] is None, encoders=encoders, others=others)


def problems(config: dict) -> list[str]:
    f3 = config["probes"]["fig3"]
    if config["probes"]["enabled"] and f3["text"] is None and f3["token"] > f3["min_tokens"]:
        return [
            f"probes.fig3.token {f3['token']} is beyond the default text's probes.fig3.min_tokens = "
            f"{f3['min_tokens']} tokens: raise min_tokens or lower the token"
        ]
    return []


def active(config: dict) -> bool:
    return bool(config["probes"]["enabled"] or config["probes"]["lm"]["enabled"])
