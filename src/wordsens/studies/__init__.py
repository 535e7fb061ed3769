"""The studies: each one folder below this package or a plugin module, registered as a ``StudySpec``
(``spec``) in the ``registry``; beside them what they share: their ``jobs``, the word-sensitivity job of the
WS studies (``sensitivity``) and the sections' ``checks``. Imports no study and nothing heavy (the planner
imports it).
"""

from .jobs import Job, JobFiles, Store, data_label, main_store
from .registry import (
    BUILTIN,
    bound,
    get,
    isolated,
    job_kind,
    job_kinds,
    names,
    numerics_versions,
    owner,
    register,
    specs,
)
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
    "bound",
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
