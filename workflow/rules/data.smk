# IMDb reviews (Hub, local copies or the generated demo corpus) and the seeded review pool.


rule demo_corpus:
    output:
        directory(f"{RSRC}/demo/aclImdb"),
    params:
        seed=config["seed"],
    log:
        f"{RSRC}/logs/demo_corpus.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/demo_corpus.py"


rule demo_model:
    output:
        f"{RSRC}/demo/tiny-bert/config.json",
    params:
        seed=config["seed"],
    log:
        f"{RSRC}/logs/demo_model.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/demo_model.py"


rule reviews:
    input:
        reviews_inputs,
    output:
        f"{RSRC}/imdb/reviews.parquet",
    params:
        source=lambda wc, input: "aclimdb" if config["data"]["source"] == "demo" else config["data"]["source"],
        path=lambda wc, input: input[0] if input else config["data"]["path"],
        hub_name=config["data"]["hub_name"],
        split=config["data"]["split"],
    log:
        f"{RSRC}/logs/reviews.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/reviews.py"


rule pool:
    input:
        reviews=f"{RSRC}/imdb/reviews.parquet",
        model=model_files(),
    output:
        f"{RSRC}/pools/{model_tag()}/pool.parquet",
    params:
        model_name=config["model"]["name"],
        pool_size=config["data"]["pool_size"],
        max_tokens=config["data"]["max_tokens"],
        seed=config["seed"],
    log:
        f"{RSRC}/logs/pool-{model_tag()}.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/pool.py"
