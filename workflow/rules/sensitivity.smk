# Word-sensitivity jobs (one per study, map, grid point and chunk of trials) and their tables. The
# paper's grids (ws.maps) are study "ws" (results/ws/<map>/..., tables/ws_<map>); the studies beyond
# the paper (variants, long_synthetic, long_imdb, positions) write results/<study>/<map>/... and one
# table each (tables/<study>), so that the paper's figures are untouched.


wildcard_constraints:
    study="|".join(("ws", *wsplan.STUDIES)),
    # every registered map, plugins included (wordsens.maps.registry, loaded by the validation)
    map="|".join(registry.names()),
    # d, n and the values of the swept options (MapSpec.sweep: DRF's L, a plugin's own), as setting_name writes them
    setting=r"d\d+_n\d+" + "(_(" + "|".join(registry.swept_options()) + r")\d+)*",
    chunk=r"\d+",


rule ws:
    input:
        unpack(get_embeddings),
    output:
        table=f"{RES}/{{study}}/{{map}}/{{setting}}/chunk{{chunk}}.parquet",
    log:
        f"{LOGS}/{{study}}/{{map}}/{{setting}}/chunk{{chunk}}.log",
    benchmark:
        f"{BENCH}/{{study}}/{{map}}/{{setting}}/chunk{{chunk}}.tsv"
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
    script:
        "../../scripts/ws.py"


rule ws_table:
    input:
        chunks=get_ws_chunks,
    output:
        parquet=f"{RES}/tables/ws_{{map}}.parquet",
        csv=f"{RES}/tables/ws_{{map}}.csv",
    log:
        f"{LOGS}/ws_table/{{map}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        rows=get_ws_chunk_rows,
    script:
        "../../scripts/aggregate.py"


rule study_table:
    input:
        chunks=get_chunks,
    output:
        parquet=f"{RES}/tables/{{study}}.parquet",
        csv=f"{RES}/tables/{{study}}.csv",
    log:
        f"{LOGS}/study_table/{{study}}.log",
    wildcard_constraints:
        study="|".join(wsplan.STUDIES),
    conda:
        "../envs/wordsens.yaml"
    params:
        rows=get_chunk_rows,
    script:
        "../../scripts/aggregate.py"
