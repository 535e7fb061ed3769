"""The workflow's plan, without running Snakemake: the one import of the Snakefile and of ``wordsens plan``.
``configuration`` loads and checks a configuration (against ``schema``), ``grid`` holds the jobs every
registered study plans for it (and where its stores live), ``schedule`` each job's priority and when a run
ends, ``calibrate`` what a finished run took and the time model's fit on it. It imports neither torch nor
Snakemake.
"""

from .calibrate import (
    LoggedJob,
    measure,
    snakemake_log_jobs,
    step_family,
    stored_calibration,
)
from .configuration import (
    check,
    export_plugins,
    hub_download_problem,
    load_config,
    merge,
    needs,
    preflight,
    problems,
    validate,
)
from .grid import (
    Grid,
    describe,
    embed_step,
    failed_jobs,
    gpu_budget_problem,
    pool_file,
    store_dir,
    store_metas,
    store_ns,
)
from .schedule import Task, critical_path, finish_lines, gpu_budget_mb, gpu_slots, plan_text, run_tasks, simulate
from .schema import SCHEMA, ConfigError, assembled, schema_problems

__all__ = [
    "SCHEMA",
    "ConfigError",
    "Grid",
    "LoggedJob",
    "Task",
    "assembled",
    "check",
    "critical_path",
    "describe",
    "embed_step",
    "export_plugins",
    "failed_jobs",
    "finish_lines",
    "gpu_budget_mb",
    "gpu_budget_problem",
    "gpu_slots",
    "hub_download_problem",
    "load_config",
    "measure",
    "merge",
    "needs",
    "plan_text",
    "pool_file",
    "preflight",
    "problems",
    "run_tasks",
    "schema_problems",
    "simulate",
    "snakemake_log_jobs",
    "step_family",
    "store_dir",
    "store_metas",
    "store_ns",
    "stored_calibration",
    "validate",
]
