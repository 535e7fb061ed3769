# Word-sensitivity jobs (one per map, grid point and chunk of trials) and their tables.


wildcard_constraints:
    map="rf|drf|raf|relu_raf",
    setting=r"d\d+_n\d+(_L\d+)?",
    chunk=r"\d+",


rule ws:
    input:
        ws_inputs,
    output:
        f"{RES}/ws/{{map}}/{{setting}}/chunk{{chunk}}.parquet",
    params:
        job=ws_params,
        data_label=(
            f"imdb:{model_tag()}:layer{config['model']['layer']}" if config["ws"]["data"] == "imdb" else "synthetic"
        ),
    threads: config["ws"]["threads"]
    resources:
        mem_mb=ws_mem_mb,
        runtime=ws_runtime,
        gpu=1 if config["ws"]["device"] == "cuda" else 0,
    log:
        f"{RES}/logs/ws/{{map}}/{{setting}}/chunk{{chunk}}.log",
    benchmark:
        f"{RES}/benchmarks/ws/{{map}}/{{setting}}/chunk{{chunk}}.tsv"
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/ws.py"


rule ws_table:
    input:
        lambda wc: ws_chunk_files(wc.map),
    output:
        parquet=f"{RES}/tables/ws_{{map}}.parquet",
        csv=f"{RES}/tables/ws_{{map}}.csv",
    log:
        f"{RES}/logs/ws_table_{{map}}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/aggregate.py"
