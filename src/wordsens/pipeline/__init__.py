"""The workflow's plan, without running Snakemake: the one import of the Snakefile and of
``wordsens plan``. ``wordsens.pipeline.configuration`` loads and checks a configuration (against its
schema, the keys every study shares joined with each registered study's section:
``wordsens.pipeline.schema``), ``wordsens.pipeline.grid`` holds the jobs every registered study plans
for it (``Grid``, from ``wordsens.studies``) and describes them, ``wordsens.pipeline.steps`` the
requests of the embedding steps, ``wordsens.pipeline.paths`` says where a configuration's embedding
stores and pools live, ``wordsens.pipeline.schedule`` when a run ends, ``wordsens.pipeline.runs``
reads what a finished run took (its Snakemake log and benchmark files) and
``wordsens.pipeline.calibrate`` fits the time model on it and stores the fit;
``wordsens.pipeline.priorities`` sets each job's priority (the longest chain of work left through it) and

Importing it imports neither torch nor Snakemake (the configuration's validation imports Snakemake
when it runs).
"""

from .calibrate import (
    Measured,
    calibration_file,
    calibration_table,
    measure,
    save_calibration,
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
    stores_read,
    validate,
)
from .grid import Grid, describe, failed_jobs, store_ns, study_hours
from .paths import pool_file, store_dir, store_metas
from .runs import LoggedJob, PathStep, RuleTime, benchmark_times, critical_path, rule_times, snakemake_log_jobs
from .schedule import Task, finish_lines, gpu_budget_mb, gpu_slots, plan_text, run_tasks, simulate
from .schema import SCHEMA, ConfigError, assembled, schema_problems
from .steps import embed_step, gpu_budget_problem

__all__ = [
    "SCHEMA",
    "ConfigError",
    "Grid",
    "LoggedJob",
    "Measured",
    "PathStep",
    "RuleTime",
    "Task",
    "assembled",
    "benchmark_times",
    "calibration_file",
    "calibration_table",
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
    "rule_times",
    "run_tasks",
    "save_calibration",
    "schema_problems",
    "simulate",
    "snakemake_log_jobs",
    "step_family",
    "store_dir",
    "store_metas",
    "store_ns",
    "stored_calibration",
    "stores_read",
    "study_hours",
    "validate",
]
