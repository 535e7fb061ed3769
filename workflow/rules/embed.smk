# Hidden states of the encoder for the review pool: one checksummed store per model and layer.


rule embed:
    input:
        pool=f"{RSRC}/pools/{model_tag()}/pool.parquet",
        model=model_files(),
    output:
        EMB_FILES,
    params:
        model_name=config["model"]["name"],
        layer=config["model"]["layer"],
        max_length=config["model"]["max_length"],
        batch_size=config["model"]["batch_size"],
        device=config["model"]["device"],
        dtype=config["model"]["dtype"],
    threads: 2
    resources:
        mem_mb=embed_mem_mb,
        runtime=120,
        gpu=1 if config["model"]["device"] == "cuda" else 0,
    log:
        f"{EMB}/embed.log",
    benchmark:
        f"{EMB}/embed.benchmark.tsv"
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/embed.py"
