"""A toy study registered as a plugin (``plugins: [tests/plugins/toy_study.py]``): how the feature norm
||phi(X)|| of registered maps grows with n on Gaussian samples whose rows have norm sqrt(d). One job per map
and n, a table, a figure with its caption (toy_study.rst, beside this file), a claim of its own (reported)
and a configuration section with its schema: everything a study is, in one file that touches no package file
(tests/workflow/test_plugin_study.py runs it through Snakemake; docs/architecture.md, "Adding a study").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from wordsens import studies
from wordsens.compute import costs
from wordsens.maps import registry as maps
from wordsens.studies import Figure, Job, JobRule, Output, Settings, StudySpec

SCHEMA = {
    "type": ["object", "null"],
    "description": "The toy study: ||phi(X)|| of maps on Gaussian samples (null: skip).",
    "default": None,
    "if": {"type": "object"},
    "then": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "maps": {"type": "array", "items": {"type": "string"}, "default": ["raf", "rf"], "description": "Maps."},
            "d": {"type": "integer", "minimum": 1, "default": 8, "description": "Embedding dimension."},
            "n": {"type": "array", "items": {"type": "integer", "minimum": 1}, "default": [4, 8], "description": "n."},
            "samples": {"type": "integer", "minimum": 1, "default": 4, "description": "Samples per point."},
        },
    },
}


@dataclass(frozen=True, kw_only=True)
class ToySettings(Settings):
    map: str
    n: int
    d: int
    samples: int
    seed: int
    numerics_version: str


def toy_rows(params: Mapping[str, Any], files: Any) -> Any:
    """One row per sample: ||phi(X)|| of the map on X with i.i.d. Gaussian rows rescaled to norm sqrt(d)."""
    import pandas as pd
    import torch

    from wordsens import maps as api
    from wordsens.seeds import derive_seed, generator

    s = ToySettings.of(params)
    rows = []
    for sample in range(s.samples):
        seed = derive_seed(s.seed, "toy_study", s.map, s.n, s.d, sample)
        X = torch.randn((s.n, s.d), generator=generator(seed), dtype=torch.float64)
        X = X / X.norm(dim=1, keepdim=True) * math.sqrt(s.d)
        weights = api.sample_weights(s.map, seed, s.n, s.d, dtype=torch.float64)
        norm = float(api.apply(s.map, X, weights).norm())
        rows.append({"map": s.map, "n": s.n, "d": s.d, "sample": sample, "norm": norm, "seed": seed})
    return pd.DataFrame(rows).assign(numerics_version=s.numerics_version)


TOY_RULE = JobRule(
    name="toy_norms",
    output="toy_norms/{map}/n{n}",
    constraints=lambda: {"map": "|".join(maps.names()), "n": r"\d+"},
    run=toy_rows,
    summary=("map", "n", "sample", "norm"),
    coefficients={"toy_norms:*": (3.0, None)},
)


@dataclass(frozen=True, kw_only=True)
class ToyJob(Job):
    RULE: ClassVar[JobRule] = TOY_RULE
    n: int
    settings: ToySettings = field(compare=False, repr=False)

    @property
    def setting(self) -> str:
        return f"n{self.n}"

    @property
    def wildcards(self) -> dict[str, str]:
        return {"map": str(self.map), "n": str(self.n)}

    @property
    def table(self) -> str:
        return "toy_norms"

    @property
    def rows(self) -> int:
        return self.settings.samples


def toy_jobs(config: dict, limits: Any, version: str) -> list[ToyJob]:
    section = config["toy_norms"]
    memory = costs.MemoryEstimate(64 * costs.MB, "toy").job
    return [
        ToyJob(
            study="toy", map=m, data="synthetic", device="cpu", memory_bytes=memory, device_bytes=memory,
            seconds=1.0, arrays=0, n=n,
            settings=ToySettings(
                map=m, n=n, d=section["d"], samples=section["samples"], seed=config["seed"], numerics_version=version
            ),
        )
        for m in section["maps"]
        for n in section["n"]
    ]  # fmt: skip


def toy_figures(plan: Any) -> list[Figure]:
    caption = str(Path(__file__).with_suffix(".rst"))
    output = Output(stem="fig_toy_norms", caption=caption, category="Plugins")
    tables = {"table": "toy_norms"}
    return [Figure(name="toy_figure", study="toy", kind="toy", tables=tables, outputs={"figures": output})]


def toy_draw(kind: str, tables: dict, outputs: dict, params: dict, settings: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from wordsens.plots.common import save

    fig, ax = plt.subplots(figsize=(4, 3))
    for name, part in tables["table"].groupby("map"):
        means = part.groupby("n")["norm"].mean()
        ax.plot(means.index, means.to_numpy(), marker="o", label=str(name))
    ax.set_xlabel("n")
    ax.set_ylabel("||phi(X)||")
    ax.legend()
    save(fig, outputs["figures"], int(settings.get("dpi", 100)), stamp=settings.get("stamp"))


def toy_definitions() -> list[Any]:
    from wordsens.claims.stats import DERIVED, REPORT, Claim

    return [Claim("toy_norm", "the mean feature norm of a map", "mean ||phi(X)|| over samples", None, None,
                  DERIVED, "the toy plugin study", kind=REPORT)]  # fmt: skip


def toy_claims(rows: Any, tables: Mapping[str, Any]) -> None:
    from wordsens.claims.intervals import linear

    frame = tables.get("toy_norms")
    if frame is None:
        rows.not_run("toy_norm", "no toy_norms table")
        return
    for (name, n), part in frame.groupby(["map", "n"]):
        interval = linear([part["norm"].to_numpy(float)], [1.0])
        rows.estimate("toy_norm", interval, map_=str(name), data="synthetic", scope=f"n={int(n)}")


studies.register(
    StudySpec(
        name="toy",
        title="the feature norm of maps on Gaussian samples (a plugin's study)",
        section="toy_norms",
        active=lambda config: bool(config.get("toy_norms")),
        schema=SCHEMA,
        jobs=toy_jobs,
        rules=(TOY_RULE,),
        numerics=("toy", "toy-1"),
        owns="toy_norms",
        figures=toy_figures,
        draw=toy_draw,
        claims=toy_claims,
        definitions=toy_definitions,
        coefficients={"toy_figure": (3.0, None)},
    ),
    replace=True,
)
