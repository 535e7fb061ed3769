# Shared by the rules: the validated configuration, the job grid (wordsens.pipeline) and the input
# functions. Everything that can be decided without Snakemake lives in wordsens.pipeline; what a study
# runs, writes and draws is its registration's (wordsens.studies): the rules of its jobs, tables and
# figures are made from the registry (studies.smk), a study's own rules file is included (Snakefile).
import os
import re
import sys
from functools import partial
from pathlib import Path

from snakemake.exceptions import WorkflowError

from wordsens import pipeline as wsplan
from wordsens.compute.limits import PLANNED_LIMITS, on_machine, planned_limits
from wordsens.data.models import DEMO_LM, DEMO_MODEL, PACKAGED_MODELS, model_tag
from wordsens.maps import registry
from wordsens.pipeline import pool_file, store_dir
from wordsens.plots import run_stamp
from wordsens.seeds import canonical
from wordsens.studies import main_store
from wordsens.studies import registry as studies

# The one loader (also behind `wordsens plan`), in one pass: the --config values Snakemake hands over
# as text read as the schema wants them ('32' -> 32), then the plugins (maps and studies) imported, the
# schema with its defaults (the studies' sections joined), the cross-key checks and what the run needs
# from this machine (wsplan.check).
try:
    wsplan.check(
        config,
        Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml",
        command_line=workflow.config_settings.config,
    )
except wsplan.ConfigError as err:
    raise WorkflowError(str(err)) from None

RES = config["results"].rstrip("/")
RSRC = config["resources"].rstrip("/")
LOGS = f"{RES}/logs"
BENCH = f"{RES}/benchmarks"
MODEL_TAG = model_tag(config["model"]["name"])
FORMATS = config["plots"]["formats"]
PLOTS = canonical(config["plots"])
# the workflow's conda environment, for the rules of every file (a study's own too)
ENV = os.path.join(workflow.basedir, "workflow", "envs", "wordsens.yaml")

# ----------------------------------------------------------------------------- the job grid
# A cluster job parses this file again on its node: it plans with the planner's limits (passed on
# to it in WORDSENS_PLANNED_LIMITS), so that its params and device are the ones planned.
LIMITS = planned_limits(config, planner=workflow.is_main_process)
# A shared GPU is weighed against this run's cores, shared by at most --resources gpu=N jobs
# (profiles/gpu-node; wordsens.compute.placement): both decide which jobs go to the GPU.
LIMITS = on_machine(
    LIMITS,
    workflow.global_resources.get("_cores").value,
    workflow.global_resources.get("gpu").value,
)


# The loader above exported the config's plugins in WORDSENS_PLUGINS (wsplan.export_plugins):
# every job, local or on a cluster, imports the same maps and studies.
envvars:
    PLANNED_LIMITS,
    registry.PLUGINS_ENV,


GRID = wsplan.Grid(config, limits=LIMITS)
RUNNING = [spec for spec in studies.specs() if spec.runs(config)]
# the embedding stores: the main one (its rules always exist: the pool is every study's) and those the
# running studies declare
STORES = {"main": main_store(config)}
STORES |= {store.name: store for spec in RUNNING for store in spec.stores(config)}
# Each job's priority: the plan's estimate of the longest chain of work left through it, so that
# Snakemake starts the critical path first (wordsens.pipeline.schedule; the data rules' 50 stays above).
PRIORITY = {t.name: t.priority for t in wsplan.run_tasks(config, GRID)}
# --lint checks the workflow's code, not whether this machine can run its grid
LINTING = "--lint" in sys.argv
# The first step downloads IMDb from the Hub: where it cannot, say so when the workflow is parsed (a dry
# run too) and stop before the first job (the Snakefile's onstart: run_may_start)
HUB_PROBLEM = (
    wsplan.hub_download_problem(config)
    if workflow.is_main_process and not LINTING
    else None
)
if HUB_PROBLEM:
    print(f"note: {HUB_PROBLEM}", file=sys.stderr)


def run_may_start():
    """Stop a run (not a dry run) before its first job where its first step cannot run here."""
    if HUB_PROBLEM:
        raise WorkflowError(f"stopped before any job: {HUB_PROBLEM}")


UNFIT_FAIL = config["limits"]["unfit"] == "fail"
if GRID.unfit and not LINTING:
    if UNFIT_FAIL:
        raise WorkflowError(GRID.left_out_message(fail=True))
    if workflow.is_main_process:  # not again in every cluster job
        print(GRID.left_out_message(), file=sys.stderr)


def end_of_run(logs, failed):
    """The block printed at the end of a run: jobs left out, and failed jobs with their logs."""
    lines = [GRID.left_out_message()] if GRID.unfit else []
    if failed:
        jobs = []
        for path in logs or []:
            if Path(path).is_file():
                jobs += wsplan.failed_jobs(Path(path).read_text(errors="replace"))
        missing = [
            job
            for job in jobs
            if not (
                job["output"]
                and all(Path(o).exists() for o in job["output"].split(", "))
            )
        ]
        lines.append(
            f"{len(missing)} job(s) failed (their outputs are missing); re-run the same command after a fix:"
        )
        lines += [
            f"  {job['rule']}: {job['output'] or '-'}  log: {job['log'] or '-'}"
            for job in missing
        ]
    if lines:
        print("\n".join(lines), file=sys.stderr)


def figure_files(stem):
    return [f"{RES}/figures/{stem}.{ext}" for ext in FORMATS]


def report_figures(stem, caption, category):
    """The figure files of ``stem`` in every format of plots.formats, each an entry of the report
    with its caption (a path; a bare name is a file of workflow/report) and category."""
    text = caption if os.path.isabs(caption) else f"../report/{caption}"
    return [report(p, caption=text, category=category) for p in figure_files(stem)]


def model_files(name):
    """Files of a local, demo or packaged model, as rule inputs (a rebuilt or edited model re-runs
    its consumers); none for a Hub name. A packaged name (wordsens.data.models.PACKAGED_MODELS) is
    extracted by the packaged_model rule (workflow/rules/pretrained.smk)."""
    if name == DEMO_MODEL:
        return [rules.demo_model.output.config]
    if name in PACKAGED_MODELS:
        return expand(rules.packaged_model.output.config, packaged=name)
    if name == DEMO_LM:
        return [rules.demo_lm.output.config]
    path = Path(name).expanduser()
    return [str(path / "config.json")] if (path / "config.json").exists() else []


# A GPU budget (--resources gpu_mem_mb=..., profiles/gpu-node): Snakemake would refuse a job that
# declares more in the middle of the run; name every such job before anything runs.
GPU_BUDGET = workflow.global_resources.get("gpu_mem_mb").value
if GPU_BUDGET is not None and LIMITS.gpu is not None and workflow.is_main_process:
    if workflow.global_resources.get("gpu").value is None:
        print(
            f"note: --resources gpu_mem_mb without gpu=N lets every GPU job hold the GPU at once; the plan"
            f" counts {LIMITS.gpu_slots} (profiles/gpu-node: --resources gpu_mem_mb={GPU_BUDGET} gpu={LIMITS.gpu_slots})",
            file=sys.stderr,
        )
if GPU_BUDGET is not None and workflow.is_main_process and not LINTING:
    _steps = {
        store.rule: wsplan.embed_step(config, LIMITS, store).gpu_mem_mb
        for store in GRID.stores().values()
    }
    _steps |= {
        step.name: step.gpu_mem_mb
        for spec in RUNNING
        for step in spec.steps(config, LIMITS)
    }
    _problem = wsplan.gpu_budget_problem(GRID.fit, _steps, GPU_BUDGET)
    if _problem:
        raise WorkflowError(_problem)


# ----------------------------------------------------------------------------- input functions
def get_local_copy(wildcards):
    """The local IMDb copy the reviews are read from (the demo corpus or data.path); none for the Hub."""
    data = config["data"]
    if data["source"] == "demo":
        return {"local_copy": rules.demo_corpus.output.corpus}
    if data["path"] and Path(data["path"]).expanduser().exists():
        return {"local_copy": str(Path(data["path"]).expanduser())}
    return {}


def job_inputs(job):
    """What a job reads, by name: its embedding store's files (``Job.store``), the review ``pool`` and
    an encoder's files (``model``), as ``Job.needs`` names them."""
    out = {}
    if job.store is not None:
        out |= dict(getattr(rules, STORES[job.store].rule).output.items())
    for need in job.needs:
        if need == "pool":
            out["pool"] = rules.pool.output.pool
        elif need.startswith("model:"):
            out["model"] = model_files(need.partition(":")[2])
        else:
            raise WorkflowError(
                f"job {job.key} needs {need!r}: not a pool, a store or a model:<name>"
            )
    return out


def table_file(stem):
    return f"{RES}/tables/{stem}.parquet"


def get_claims_tables(wildcards):
    """The run's own tables the claims are computed from, named by file stem: those of the studies with
    claims, and those of a study that lends its rows to the paper's claims (wordsens.claims).
    """
    out = {}
    for stem in GRID.tables():
        spec = studies.owner(stem)
        if spec is not None and spec.checked():
            out[stem] = table_file(stem)
    return out


# ----------------------------------------------------------------------------- targets
def targets():
    """Every table and figure of the run, the claims table, and the outputs of the rules a study's own
    rules file names (StudySpec.targets)."""
    out = [table_file(stem) for stem in GRID.tables()]
    out += [f"{RES}/tables/{stem}.csv" for stem in GRID.tables()]
    for figure in GRID.figures():
        out += list(getattr(rules, figure.name).output)
    if get_claims_tables(None):
        out += list(rules.claims.output)
    for spec in RUNNING:
        for name in spec.targets(config):
            out += list(getattr(rules, name).output)
    return out


# ----------------------------------------------------------------------------- the rules made from the registry
# (workflow/rules/studies.smk, data.smk, embed.smk define them in loops; their functions are here)
def constrained(pattern, constraints):
    """``pattern`` with each wildcard's regular expression written into it ({map,rf|raf})."""

    def one(match):
        name = match.group(1)
        return (
            f"{{{name},{constraints[name]}}}" if name in constraints else match.group(0)
        )

    return re.sub(r"\{(\w+)\}", one, pattern)


def job_output(kind):
    """The output pattern of a kind of job (wordsens.studies.Job), below results/, with the regular
    expression of each wildcard: the values the grid's jobs of that kind take (one that never matches
    where there are none)."""
    constraints = {}
    for wildcard in re.findall(r"\{(\w+)\}", kind.output):
        values = sorted(
            {job.wildcards[wildcard] for job in GRID.jobs if job.rule == kind.rule}
        )
        constraints[wildcard] = "|".join(re.escape(v) for v in values) or "(?!)"
    return constrained(kind.output, constraints)


def job_value(rule, what, wildcards):
    """An attribute of the job of ``rule`` with these wildcards (Grid.job): its threads, resources,
    params; ``runtime``: 5 x its calibrated estimate + 5 minutes (Grid.runtime); ``priority``: its
    task's in the plan (PRIORITY)."""
    job = GRID.job(wildcards, rule)
    if what == "priority":
        return PRIORITY[job.key]
    if what == "params":
        return job.params
    return GRID.runtime(job) if what == "runtime" else getattr(job, what)


def job_files(rule, wildcards):
    """What the job of ``rule`` with these wildcards reads (job_inputs)."""
    return job_inputs(GRID.job(wildcards, rule))


def table_chunks(wildcards):
    """The per-job files a table stacks, in the order of its jobs."""
    return [f"{RES}/{job.key}.parquet" for job in GRID.tables()[wildcards.table]]


def table_rows(wildcards):
    """The rows each file of table_chunks holds when its job finished (Job.rows), in the same order."""
    return [job.rows for job in GRID.tables()[wildcards.table]]


def report_text(out):
    """A text file below tables/ as an entry of the report (a figure rule's text output)."""
    entry = [f"{RES}/tables/{out.stem}"]
    return [report(p, caption=out.caption, category=out.category) for p in entry]


def figure_outputs(figure):
    """A figure's outputs (wordsens.studies.Figure: figures in every format of plots.formats, or a text
    file below tables/), each an entry of the report, and their (name, count) in that order.
    """
    files, names = [], []
    for name, out in figure.outputs.items():
        if out.text:
            made = report_text(out)
        else:
            made = report_figures(out.stem, out.caption, out.category)
        files += made
        names.append([name, len(made)])
    return files, names


def figure_tables(figure, wildcards):
    """A figure's tables, by the names its drawing reads them by."""
    return {name: table_file(stem) for name, stem in figure.tables.items()}


def pool_tag(store):
    """How a store's pool's log is named: the model (and the store's length, but for the main store)."""
    return MODEL_TAG if store.name == "main" else f"{MODEL_TAG}_len{store.max_length}"


def store_tag(store):
    """How a store's logs and benchmark files are named: the model and layer (and length, but for the
    main store)."""
    tag = f"{MODEL_TAG}_layer{config['model']['layer']}"
    return tag if store.name == "main" else f"{tag}_len{store.max_length}"
