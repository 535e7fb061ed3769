# Word-sensitivity jobs (one per map, grid point and chunk of trials) and their tables.


wildcard_constraints:
    map="rf|drf|raf|relu_raf",
    setting=r"d\d+_n\d+(_L\d+)?",
    chunk=r"\d+",


rule ws:
    input:
        unpack(get_embeddings),
    output:
        table=f"{RES}/ws/{{map}}/{{setting}}/chunk{{chunk}}.parquet",
    log:
        f"{LOGS}/ws/{{map}}/{{setting}}/chunk{{chunk}}.log",
    benchmark:
        f"{BENCH}/ws/{{map}}/{{setting}}/chunk{{chunk}}.tsv"
    conda:
        "../envs/wordsens.yaml"
    threads: config["ws"]["threads"]
    resources:
        mem_mb=get_mem_mb,
        runtime=get_runtime,
        gpu=get_gpu,
    params:
        job=get_job_params,
    script:
        "../../scripts/ws.py"


rule ws_table:
    input:
        chunks=get_chunks,
    output:
        parquet=f"{RES}/tables/ws_{{map}}.parquet",
        csv=f"{RES}/tables/ws_{{map}}.csv",
    log:
        f"{LOGS}/ws_table/{{map}}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/aggregate.py"
