# Hidden states of the encoder for the review pool: one checksummed store per model and layer.


rule embed:
    input:
        pool=rules.pool.output.pool,
        model=model_files(config["model"]["name"]),
    output:
        hidden=f"{EMB}/hidden.npy",
        index=f"{EMB}/index.parquet",
        meta=f"{EMB}/meta.json",
    log:
        f"{LOGS}/embed/{MODEL_TAG}_layer{config['model']['layer']}.log",
    benchmark:
        f"{BENCH}/embed/{MODEL_TAG}_layer{config['model']['layer']}.tsv"
    priority: 50
    conda:
        "../envs/wordsens.yaml"
    threads: 2
    resources:
        mem_mb=embed_mem_mb(),
        runtime=120,
        gpu=1 if config["model"]["device"] == "cuda" else 0,
    params:
        model_name=config["model"]["name"],
        layer=config["model"]["layer"],
        max_length=config["model"]["max_length"],
        batch_size=config["model"]["batch_size"],
        device=config["model"]["device"],
        dtype=config["model"]["dtype"],
    script:
        "../../scripts/embed.py"
