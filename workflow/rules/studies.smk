# Every study's jobs, tables and figures, from the study registry (wordsens.studies): a rule per kind of
# job (a wordsens.studies.Job class: ws, gen, trained, swaps, a plugin's), one rule that stacks the per-job
# files of a table, and a rule per figure (StudySpec.figures). Config flows into jobs only through their
# params (Job.params), so a change re-runs exactly the jobs it touches; sweep values live in the output
# paths (wildcards), so a new grid point adds jobs without touching old ones. The functions these rules
# call are in common.smk (Snakemake's lint wants functions and rules apart).


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
