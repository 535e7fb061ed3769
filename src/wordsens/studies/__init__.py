"""The studies: each one folder below this package (the paper's experiments and the studies beyond it) or
a plugin module, registered as a ``StudySpec`` (``wordsens.studies.spec``) in the registry
(``wordsens.studies.registry``), the studies' counterpart of the map registry. What every study builds on
is here too: its jobs (``wordsens.studies.jobs``: ``Job`` with typed ``Settings``, ``JobRule``, the
embedding ``Store`` it reads) and the word-sensitivity jobs the WS studies share
(``wordsens.studies.sensitivity``).

This face imports no study (the registry imports them on first use) and nothing heavy: the planner
imports it. The built-in studies: ``ws`` (Figures 2-3), ``gen`` (Figures 4-5), ``probes`` (Figures 1
and 3, panels 3-4), ``variants``, ``long_context``, ``positions``, ``trained``, ``swaps``, ``gen_words`` (Figures 4-5
with real words).
"""

from .jobs import Job, JobFiles, JobRule, Request, Settings, Store, data_label, job_device, main_store
from .registry import BUILTIN, get, isolated, job_rule, job_rules, names, numerics_versions, owner, register, specs
from .spec import Figure, Needs, Output, PlanView, Step, StudySpec

__all__ = [
    "BUILTIN",
    "Figure",
    "Job",
    "JobFiles",
    "JobRule",
    "Needs",
    "Output",
    "PlanView",
    "Request",
    "Settings",
    "Step",
    "Store",
    "StudySpec",
    "data_label",
    "get",
    "isolated",
    "job_device",
    "job_rule",
    "job_rules",
    "main_store",
    "names",
    "numerics_versions",
    "owner",
    "register",
    "specs",
]
