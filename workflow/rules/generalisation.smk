# Generalisation after changing one word (Figures 4 and 5): one job per figure, data source, map,
# n, N and chunk of simulations; each simulation serves every search of its figure.


wildcard_constraints:
    figure="fig4|fig5",
    gdata="imdb|synthetic",
    # every registered map, plugins included (wordsens.maps.registry, loaded by the validation)
    gsetting="(" + "|".join(registry.names()) + r")_n\d+_N\d+_d\d+",


rule gen:
    input:
        unpack(get_embeddings),
    output:
        table=f"{RES}/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.parquet",
    log:
        f"{LOGS}/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.log",
    benchmark:
        f"{BENCH}/gen/{{figure}}/{{gdata}}/{{gsetting}}/chunk{{chunk}}.tsv"
    priority: get_priority
    conda:
        "../envs/wordsens.yaml"
    threads: config["gen"]["threads"]
    resources:
        mem_mb=get_mem_mb,
        runtime=get_runtime,
        gpu=get_gpu,
        gpu_mem_mb=get_gpu_mem_mb,
    params:
        job=get_job_params,
    script:
        "../../scripts/gen.py"


rule gen_table:
    input:
        chunks=get_chunks,
    output:
        parquet=f"{RES}/tables/gen_{{figure}}_{{gdata}}.parquet",
        csv=f"{RES}/tables/gen_{{figure}}_{{gdata}}.csv",
    log:
        f"{LOGS}/gen_table/{{figure}}_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        rows=get_chunk_rows,
    script:
        "../../scripts/aggregate.py"
