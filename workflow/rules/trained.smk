# The trained study (config key trained; wordsens.pipeline.trained): a pre-trained encoder's own
# layers against their random counterparts, in each convention. One job per layer reads the review
# pool and the encoder (the hidden states entering the layer are computed in the job: nothing else
# needs them), checks the encoder's tokenizer on its reviews (data.max_unk_share, read from the
# configuration as the pool step does: a gate, not a param), then a table, its figure and
# report-only rows of the claims table (claims.smk). The figure names the layers the limits left
# out (marked not run) and carries the run's stamp, both as params.
from wordsens.plots import run_stamp

TRAINED = config["trained"]
TRAINED_MODEL = wsplan.trained_model(config) if TRAINED else None


rule trained:
    input:
        pool=rules.pool.output.pool,
        model=model_files(TRAINED_MODEL) if TRAINED else [],
    output:
        table=f"{RES}/trained/layer{{layer}}.parquet",
    log:
        f"{LOGS}/trained/layer{{layer}}.log",
    benchmark:
        f"{BENCH}/trained/layer{{layer}}.tsv"
    wildcard_constraints:
        layer=r"\d+",
    priority: get_priority
    conda:
        "../envs/wordsens.yaml"
    threads: config["ws"]["threads"]
    # on the CPU (TrainedJob.device): no gpu resource
    resources:
        mem_mb=get_mem_mb,
        runtime=get_runtime,
    params:
        job=get_job_params,
        # the key that named the encoder, for the loader's errors
        model_key="trained.model" if TRAINED and TRAINED["model"] else "model.name",
    script:
        "../../scripts/trained.py"


rule trained_table:
    input:
        chunks=get_trained_chunks,
    output:
        parquet=f"{RES}/tables/trained.parquet",
        csv=f"{RES}/tables/trained.csv",
    log:
        f"{LOGS}/trained_table/trained.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        rows=get_trained_rows,
    script:
        "../../scripts/aggregate.py"


rule trained_figure:
    input:
        table=rules.trained_table.output.parquet,
    output:
        figures=report_figures("fig_trained", "fig_trained.rst", "Beyond the paper"),
    log:
        f"{LOGS}/trained_figure/fig_trained.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        left_out=[p for p in GRID.left_out() if p.get("study") == "trained"],
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_trained.py"
