"""Figure 1 and Figure 3's panels 3-4 (the configuration's ``probes``): a pre-trained encoder probed as it
is (first-layer attention of two sentences differing in one word; how much each layer's output moves when
one token attracts all the attention) and, optionally, a causal language model's answers to two prompts
differing in one word. Its rules are its own (``rules.smk``: each probe's tables, then their figures);
``plan`` tells the planner what they request and when they run.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..spec import StudySpec, beside, schema_beside
from . import plan


class AttentionMap(NamedTuple):
    """Attention probabilities (rows: queries, columns: keys) and the token strings."""

    matrix: np.ndarray
    tokens: list[str]


SPEC = StudySpec(
    name="probes",
    title="Figures 1 and 3 (panels 3-4): a pre-trained encoder and a causal LM probed as they are",
    section="probes",
    active=plan.active,
    schema=schema_beside(__file__),
    needs=plan.needs,
    problems=plan.problems,
    rules_file=beside(__file__, "rules.smk"),
    steps=plan.steps,
    targets=plan.targets,
    coefficients={
        "fig1_attention": (7.7, None),
        "fig1_attention_figure": (4.0, None),
        "fig3_probes": (17.7, None),
        "fig3_figures": (3.7, None),
        "demo_lm": (6.0, None),
        "fig1_lm": (6.0, None),
        "fig1_lm_figure": (2.0, None),
    },
)
