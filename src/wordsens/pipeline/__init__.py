"""The workflow's plan, without running Snakemake: the one import of the Snakefile and of
``wordsens plan``. ``wordsens.pipeline.configuration`` loads and checks a configuration (against
its schema: ``wordsens.pipeline.schema``),
``wordsens.pipeline.points`` and ``wordsens.pipeline.jobs`` turn it into jobs with their estimates
(``wordsens.compute.costs``) and devices (``wordsens.compute.devices``), ``wordsens.pipeline.trained``
the trained study's jobs (one per encoder layer), ``wordsens.pipeline.swaps`` the swaps study's (one per
map and n), ``wordsens.pipeline.steps`` the requests of the
steps that run a pre-trained model (embeddings, probes), and ``wordsens.pipeline.grid`` holds them
(``Grid``) and describes them; ``wordsens.pipeline.paths`` says where a configuration's embedding stores
live, ``wordsens.pipeline.runs`` reads what a finished run took (its Snakemake log and benchmark files)
and ``wordsens.pipeline.calibrate`` fits the time model on it and stores the fit;
``wordsens.pipeline.placing`` sets each job's device (CPU or a shared GPU) from its cost model,
``wordsens.pipeline.priorities`` each job's priority (the longest chain of work left through it), and
``wordsens.pipeline.replay`` replays a logged run through the plan's scheduler.

Importing it imports neither torch nor Snakemake (the configuration's validation imports Snakemake
when it runs).
"""

from .calibrate import Measured, calibration_file, calibration_table, measure, save_calibration, stored_calibration
from .configuration import (
    check,
    export_plugins,
    load_config,
    merge,
    preflight,
    problems,
    validate,
)
from .grid import GEN_FIGURES, WS_FIGURES, Grid, describe, failed_jobs, store_ns, study_hours
from .jobs import (
    CUDA_CONTEXT_BYTES,
    GenJob,
    Job,
    WSJob,
    data_label,
    gen_jobs,
    gen_searches,
    gen_setting,
    gpu_mem_mb,
    job_device,
    search_load,
    setting_name,
    ws_jobs,
)
from .limits import LOCAL_MAX_JOB_HOURS, PLANNED_LIMITS, Limits, planned_limits
from .paths import store_dir, store_metas
from .placing import on_machine
from .points import STUDIES, Point, capped_ns, long_context_ns, store_of, stores, variant_maps, ws_points
from .runs import LoggedJob, PathStep, RuleTime, benchmark_times, critical_path, rule_times, snakemake_log_jobs
from .schedule import Task, finish_lines, gpu_budget_mb, gpu_slots, plan_text, run_tasks, simulate
from .schema import SCHEMA, ConfigError, schema_problems
from .steps import Step, embed_step, gpu_budget_problem, probe_step
from .swaps import SwapJob, swap_jobs
from .trained import TrainedJob, trained_jobs, trained_layers, trained_model

__all__ = [
    "CUDA_CONTEXT_BYTES",
    "GEN_FIGURES",
    "LOCAL_MAX_JOB_HOURS",
    "PLANNED_LIMITS",
    "SCHEMA",
    "STUDIES",
    "WS_FIGURES",
    "ConfigError",
    "GenJob",
    "Grid",
    "Job",
    "Limits",
    "LoggedJob",
    "Measured",
    "PathStep",
    "Point",
    "RuleTime",
    "Step",
    "SwapJob",
    "Task",
    "TrainedJob",
    "WSJob",
    "benchmark_times",
    "calibration_file",
    "calibration_table",
    "capped_ns",
    "check",
    "critical_path",
    "data_label",
    "describe",
    "embed_step",
    "export_plugins",
    "failed_jobs",
    "finish_lines",
    "gen_jobs",
    "gen_searches",
    "gen_setting",
    "gpu_budget_mb",
    "gpu_budget_problem",
    "gpu_mem_mb",
    "gpu_slots",
    "job_device",
    "load_config",
    "long_context_ns",
    "measure",
    "merge",
    "on_machine",
    "plan_text",
    "planned_limits",
    "preflight",
    "probe_step",
    "problems",
    "rule_times",
    "run_tasks",
    "save_calibration",
    "schema_problems",
    "search_load",
    "setting_name",
    "simulate",
    "snakemake_log_jobs",
    "store_dir",
    "store_metas",
    "store_ns",
    "store_of",
    "stored_calibration",
    "stores",
    "study_hours",
    "swap_jobs",
    "trained_jobs",
    "trained_layers",
    "trained_model",
    "validate",
    "variant_maps",
    "ws_jobs",
    "ws_points",
]
