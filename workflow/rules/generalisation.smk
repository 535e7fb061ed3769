# Generalisation after changing one word (Figures 4 and 5): one job per figure, data source, map,
# n, N and chunk of simulations; each simulation serves every search of its figure.


wildcard_constraints:
    figure="fig4|fig5",
    gdata="imdb|synthetic",
    gsetting=r"(rf|raf|relu_raf)_n\d+_N\d+_d\d+",


rule gen:
    input:
        gen_inputs,
    output:
        f"{RES}/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.parquet",
    params:
        job=gen_params,
        data_label=lambda wc: (
            f"imdb:{model_tag()}:layer{config['model']['layer']}" if wc.gdata == "imdb" else "synthetic"
        ),
    threads: config["gen"]["threads"]
    resources:
        mem_mb=gen_mem_mb,
        runtime=gen_runtime,
        gpu=1 if config["gen"]["device"] == "cuda" else 0,
    log:
        f"{RES}/logs/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.log",
    benchmark:
        f"{RES}/benchmarks/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.tsv"
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/gen.py"


rule gen_table:
    input:
        lambda wc: gen_chunk_files(wc.figure, wc.gdata),
    output:
        parquet=f"{RES}/tables/gen_{{figure}}_{{gdata}}.parquet",
        csv=f"{RES}/tables/gen_{{figure}}_{{gdata}}.csv",
    log:
        f"{RES}/logs/gen_table_{{figure}}_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/aggregate.py"


rule fig4:
    input:
        f"{RES}/tables/gen_fig4_{{gdata}}.parquet",
    output:
        [report(p, caption="../report/fig4.rst", category="Figure 4") for p in figure_files("fig4_generalisation_{gdata}")],
    params:
        plots=canonical(config["plots"]),
        columns=gen_columns("fig4"),
    log:
        f"{RES}/logs/fig4_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/plot_gen.py"


rule fig5:
    input:
        f"{RES}/tables/gen_fig5_{{gdata}}.parquet",
    output:
        [report(p, caption="../report/fig5.rst", category="Figure 5") for p in figure_files("fig5_penalised_{gdata}")],
    params:
        plots=canonical(config["plots"]),
        columns=gen_columns("fig5"),
    log:
        f"{RES}/logs/fig5_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/plot_gen.py"
