# Every study's jobs, tables and figures, from the study registry (wordsens.studies): a rule per kind of
# job (a wordsens.studies.Job class: ws, gen, trained, swaps, a plugin's), one rule that stacks the per-job
# files of a table, and a rule per figure (StudySpec.figures), with the functions they call. Config flows into
# jobs only through their params (Job.params), so a change re-runs exactly the jobs it touches; sweep values
# live in the output paths (wildcards), so a new grid point adds jobs without touching old ones.


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


for _kind in studies.job_kinds().values():

    rule:
        name:
            _kind.rule
        input:
            unpack(partial(job_files, _kind.rule)),
        output:
            table=f"{RES}/{job_output(_kind)}.parquet",
        log:
            f"{LOGS}/{_kind.output}.log",
        benchmark:
            f"{BENCH}/{_kind.output}.tsv"
        # the longest chain of work left through the job first (the plan's critical path)
        priority: partial(job_value, _kind.rule, "priority")
        conda:
            ENV
        threads: partial(job_value, _kind.rule, "threads")
        resources:
            mem_mb=partial(job_value, _kind.rule, "mem_mb"),
            # 5 x the job's calibrated estimate + 5 minutes (Job.runtime)
            runtime=partial(job_value, _kind.rule, "runtime"),
            # 1 for a job the plan puts on a GPU (the SLURM plugin's --gpus=1)
            gpu=partial(job_value, _kind.rule, "gpu"),
            # GPU memory (MB) it takes from the budget of --resources gpu_mem_mb=... (0 on the CPU):
            # jobs share one GPU while their sum fits (profiles/gpu-node)
            gpu_mem_mb=partial(job_value, _kind.rule, "gpu_mem_mb"),
        params:
            # the settings the job's rows depend on: a change re-runs exactly it
            job=partial(job_value, _kind.rule, "params"),
            # what its body needs that changes no number (a chunk size, the key that named a model)
            extra=partial(job_value, _kind.rule, "extras"),
        script:
            "../../scripts/job.py"


rule table:
    input:
        chunks=table_chunks,
    output:
        parquet=f"{RES}/tables/{{table}}.parquet",
        csv=f"{RES}/tables/{{table}}.csv",
    log:
        f"{LOGS}/table/{{table}}.log",
    wildcard_constraints:
        table="|".join(re.escape(stem) for stem in GRID.tables()) or "(?!)",
    localrule: True
    conda:
        ENV
    params:
        # the rows each file holds when its job finished (Job.rows), in the same order
        rows=table_rows,
    script:
        "../../scripts/aggregate.py"


for _figure in GRID.figures():

    rule:
        name:
            _figure.name
        input:
            unpack(partial(figure_tables, _figure)),
        output:
            figure_outputs(_figure)[0],
        log:
            f"{LOGS}/{_figure.name}/{_figure.name}.log",
        localrule: True
        conda:
            ENV
        params:
            study=_figure.study,
            figure=canonical(dict(_figure.params)),
            outputs=figure_outputs(_figure)[1],
            plots=PLOTS,
            stamp=run_stamp(config),
        script:
            "../../scripts/figure.py"
