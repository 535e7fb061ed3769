"""The studies: each one folder below this package (the paper's experiments and the studies beyond it) or a
plugin module, registered as a ``StudySpec`` (``wordsens.studies.spec``) in the registry
(``wordsens.studies.registry``), the studies' counterpart of the map registry. What every study builds on
is here too: its jobs (``wordsens.studies.jobs``: ``Job``, the embedding ``Store`` it reads),
the word-sensitivity job the WS studies share (``wordsens.studies.sensitivity``) and the checks the
sections share (``wordsens.studies.checks``).

This face imports no study (the registry imports them on first use) and nothing heavy: the planner
imports it. The built-in studies: ``ws`` (Figures 2-3), ``gen`` (Figures 4-5), ``probes`` (Figures 1 and 3,
panels 3-4), ``variants``, ``long_context``, ``positions``, ``trained``, ``swaps``, ``gen_words`` (Figures 4-5
with real words).
"""

from .jobs import Job, JobFiles, Store, data_label, main_store
from .registry import BUILTIN, get, isolated, job_kind, job_kinds, names, numerics_versions, owner, register, specs
from .spec import Figure, Needs, Output, PlanView, Step, StudySpec

__all__ = [
    "BUILTIN",
    "Figure",
    "Job",
    "JobFiles",
    "Needs",
    "Output",
    "PlanView",
    "Step",
    "Store",
    "StudySpec",
    "data_label",
    "get",
    "isolated",
    "job_kind",
    "job_kinds",
    "main_store",
    "names",
    "numerics_versions",
    "owner",
    "register",
    "specs",
]
