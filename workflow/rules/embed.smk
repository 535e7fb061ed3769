# Hidden states of the encoder for the review pool: one checksummed store per model and layer.


def embed_mem_mb(wildcards):
    m, d = config["model"], config["data"]
    width = model_width() or 1024
    store = d["pool_size"] * m["max_length"] * width * (2 if m["dtype"] == "float16" else 4)
    batch = m["batch_size"] * m["max_length"] * width * 4 * 40  # activations of one forward pass
    return int((2 * store + batch) / 1024**2) + 2048  # + the model and the interpreter


rule embed:
    input:
        pool=f"{RSRC}/pools/{model_tag()}/pool.parquet",
        model=model_files(),
    output:
        EMB_FILES,
    params:
        model=model_source(),
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
    script:
        "../../scripts/embed.py"
