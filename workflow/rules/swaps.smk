# The swaps study (config key swaps; wordsens.pipeline.swaps): real words put in place of a review's
# words, scored exactly over the encoder's vocabulary (or a first-order shortlist), beside the
# continuous word sensitivity at the radius the best word moves. One job per map and (d, n) reads the
# review pool and the encoder (model.name: its embedding layer gives every word's row), then a
# table, its figure with the readable top substitutions, and rows of the claims table (claims.smk).
from wordsens.plots import run_stamp

SWAPS = config["swaps"]


rule swaps:
    input:
        pool=rules.pool.output.pool,
        model=model_files(config["model"]["name"]) if SWAPS else [],
    output:
        table=f"{RES}/swaps/{{map}}/{{setting}}.parquet",
    log:
        f"{LOGS}/swaps/{{map}}/{{setting}}.log",
    benchmark:
        f"{BENCH}/swaps/{{map}}/{{setting}}.tsv"
    wildcard_constraints:
        setting=r"d\d+_n\d+",
    priority: get_priority
    conda:
        "../envs/wordsens.yaml"
    threads: config["ws"]["threads"]
    resources:
        mem_mb=get_mem_mb,
        runtime=get_runtime,
        gpu=get_gpu,
        gpu_mem_mb=get_gpu_mem_mb,
    params:
        job=get_job_params,
        # the working arrays of a chunk of words: changes no number (not a job param)
        chunk_mb=SWAPS["chunk_mb"] if SWAPS else 64,
    script:
        "../../scripts/swaps.py"


rule swaps_table:
    input:
        chunks=get_swap_chunks,
    output:
        parquet=f"{RES}/tables/swaps.parquet",
        csv=f"{RES}/tables/swaps.csv",
    log:
        f"{LOGS}/swaps_table/swaps.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        rows=get_swap_rows,
    script:
        "../../scripts/aggregate.py"


rule swaps_figure:
    input:
        table=rules.swaps_table.output.parquet,
    output:
        figures=report_figures("fig_swaps", "fig_swaps.rst", "Beyond the paper"),
        text=report(
            f"{RES}/tables/swaps_top.md",
            caption="../report/swaps_top.rst",
            category="Beyond the paper",
        ),
    log:
        f"{LOGS}/swaps_figure/fig_swaps.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        left_out=[p for p in GRID.left_out() if p.get("study") == "swaps"],
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_swaps.py"
