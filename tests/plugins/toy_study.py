"""A study from a plugin (``plugins: [tests/plugins/toy_study.py]``; docs/architecture.md, "Adding a study"): the
norm ||phi(X)|| of maps on Gaussian samples against n, its table, figure and claim; no package file changed."""

from dataclasses import dataclass
from pathlib import Path

from wordsens import maps
from wordsens.claims import Claim
from wordsens.plots import save
from wordsens.seeds import derive_seed
from wordsens.studies import Figure, Job, StudySpec, register

SCHEMA = {
    "type": ["object", "null"],
    "default": None,
    "properties": {
        "maps": {"type": "array", "items": {"type": "string"}, "default": ["raf", "rf"], "description": "Maps."},
        "d": {"type": "integer", "minimum": 1, "default": 8, "description": "Embedding dimension."},
        "n": {"type": "array", "items": {"type": "integer"}, "default": [4, 8], "description": "Context lengths."},
        "samples": {"type": "integer", "minimum": 1, "default": 4, "description": "Samples per map and n."},
    },
}


@dataclass(frozen=True, kw_only=True)
class ToyJob(Job):
    rule = "toy_norms"
    output = "toy_norms/{map}/n{n}"
    map: str
    n: int
    d: int
    samples: int

    def run(self, files):
        import pandas as pd
        import torch

        norms = []
        for sample in range(self.samples):
            seed = derive_seed(self.seed, "toy_study", self.map, self.n, self.d, sample)
            X = torch.randn((self.n, self.d), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
            X = X / X.norm(dim=1, keepdim=True) * self.d**0.5
            weights = maps.sample_weights(self.map, seed, self.n, self.d, dtype=X.dtype)
            norms.append(float(maps.apply(self.map, X, weights).norm()))
        frame = pd.DataFrame({"map": self.map, "n": self.n, "sample": range(self.samples), "norm": norms})
        return frame.assign(numerics_version=self.numerics_version)


def toy_jobs(config, limits, version):
    s = config["toy_norms"]
    same = {"d": s["d"], "samples": s["samples"], "seed": config["seed"], "numerics_version": version}
    return [ToyJob(study="toy", map=m, n=n, **same) for m in s["maps"] for n in s["n"]]


def toy_figures(plan):
    caption = str(Path(__file__).with_suffix(".rst"))
    outputs = {"figures": "fig_toy_norms"}
    return [Figure(name="toy_figure", study="toy", tables={"table": "toy_norms"}, outputs=outputs, caption=caption)]


def toy_draw(tables, outputs, params, settings):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    tables["table"].groupby(["n", "map"])["norm"].mean().unstack().plot(ax=ax, marker="o", ylabel="||phi(X)||")
    save(fig, outputs["figures"], 100, stamp=settings.get("stamp"))


def toy_claims(rows, tables):
    if "toy_norms" not in tables:
        return rows.not_run("toy_norm", "no toy_norms table")
    for (name, n), part in tables["toy_norms"].groupby(["map", "n"]):
        rows.estimate("toy_norm", part["norm"].to_numpy(float), map_=str(name), data="synthetic", scope=f"n={n}")


register(
    StudySpec(
        name="toy",
        title="the feature norm of maps on Gaussian samples (a plugin's study)",
        section="toy_norms",
        schema=SCHEMA,
        jobs=toy_jobs,
        kinds=(ToyJob,),
        figures=toy_figures,
        draw=toy_draw,
        claims=toy_claims,
        definitions=[Claim("toy_norm", "the mean norm of phi(X)", "mean ||phi(X)|| over samples", kind="report")],
    ),
    replace=True,
)
