# IMDb reviews (Hub, local copies or the generated demo corpus) and the seeded review pool.
# Data steps have priority over the compute jobs and use one thread each, so each starts at the
# first core that frees once its input exists: without network, the reviews fail (naming the
# local sources, data.source and data.path) before any WS or generalisation job starts.


rule demo_corpus:
    output:
        corpus=directory(f"{RSRC}/demo/aclImdb"),
    log:
        f"{LOGS}/demo_corpus/demo_corpus.log",
    priority: 50
    localrule: True
    conda:
        ENV
    params:
        seed=config["seed"],
    script:
        "../../scripts/demo_corpus.py"


rule demo_model:
    output:
        config=f"{RSRC}/demo/tiny-bert/config.json",
    log:
        f"{LOGS}/demo_model/demo_model.log",
    priority: 50
    localrule: True
    conda:
        ENV
    params:
        seed=config["seed"],
    script:
        "../../scripts/demo_model.py"


rule reviews:
    input:
        unpack(get_local_copy),
    output:
        reviews=f"{RSRC}/imdb/reviews.parquet",
    log:
        f"{LOGS}/reviews/reviews.log",
    priority: 50
    localrule: True
    conda:
        ENV
    params:
        source=(
            "aclimdb"
            if config["data"]["source"] == "demo"
            else config["data"]["source"]
        ),
        path=config["data"]["path"],
        hub_name=config["data"]["hub_name"],
        split=config["data"]["split"],
    script:
        "../../scripts/reviews.py"


# The pool step checks the tokenizer first (docs/inputs.md): its vocabulary against the model's
# word-embedding rows, and its [UNK] share over the pool's tokens (data.max_unk_share, read by the
# job from the configuration: a gate, not a param). A refused pool is not written.
# The review pool of each embedding store (the main store's: data.pool_size reviews of fewer than
# data.max_tokens tokens; a study's own store, e.g. long_context's: its pool size, reviews of at least the
# tokens that fill its length): one rule per store (pool, pool_<store>), for every store of the run.
for _store in STORES.values():

    rule:
        name:
            _store.pool_rule
        input:
            reviews=rules.reviews.output.reviews,
            model=model_files(config["model"]["name"]),
        output:
            pool=pool_file(config, _store),
        log:
            f"{LOGS}/{_store.pool_rule}/{pool_tag(_store)}.log",
        priority: 50
        conda:
            ENV
        params:
            model_name=config["model"]["name"],
            pool_size=_store.pool_size,
            max_tokens=config["data"]["max_tokens"] if _store.name == "main" else None,
            min_tokens=_store.min_tokens or 0,
            section="data" if _store.name == "main" else _store.section,
            seed=config["seed"],
        script:
            "../../scripts/pool.py"
