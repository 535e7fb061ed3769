# Hidden states of the encoder for the review pool: one checksummed store per model and layer,
# checked before it is written (docs/inputs.md: no NaN/Inf, enough distinct samples at every n of
# the jobs that read it). The grid's n and data.min_distinct_share reach the job through the
# configuration, not params, so that a new n re-embeds nothing; an existing store is checked
# against this grid's n here, before any job runs.
from wordsens.data.inputs import store_problems
from wordsens.pipeline import store_metas

if not LINTING:
    _problems = [
        problem
        for _store, _meta in store_metas(config).items()
        for problem in store_problems(
            _meta,
            GRID.store_ns(_store),
            config["data"]["min_distinct_share"],
            f"the {_store} store {EMB_LONG if _store == 'long' else EMB}",
        )
    ]
    if _problems:
        raise WorkflowError(
            "an existing embedding store cannot carry this grid (docs/inputs.md):\n  "
            + "\n  ".join(_problems)
            + "\n  (remove the n, or delete the store folder to embed it again)"
        )


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
    # One thread, like every data step: with priority 50 the job then takes the first core that
    # frees once its pool exists. A job needing two cores waits, on a busy machine, until two free
    # at once, which 1-thread compute jobs that need no data may put off for the whole run.
    threads: 1
    resources:
        mem_mb=EMBED.mem_mb,
        runtime=120,
        gpu=EMBED.gpu,
        gpu_mem_mb=EMBED.gpu_mem_mb,
    params:
        model_name=config["model"]["name"],
        layer=config["model"]["layer"],
        max_length=config["model"]["max_length"],
        batch_size=config["model"]["batch_size"],
        device=config["model"]["device"],
        dtype=config["model"]["dtype"],
        store="main",
    script:
        "../../scripts/embed.py"


# long_context on IMDb: a second pool of long reviews (at least max_length - 2 WordPiece tokens, so
# that [CLS], the words and [SEP] fill every position: no [PAD] row at any n), embedded at
# long_context.max_length (up to the encoder's position limit, 512 for BERT) in a second store
# beside the first (the first is never rewritten).
if EMB_LONG:

    use rule pool as pool_long with:
        output:
            pool=f"{RSRC}/pools/{MODEL_TAG}/pool_long{LONG['max_length']}.parquet",
        log:
            f"{LOGS}/pool_long/{MODEL_TAG}_len{LONG['max_length']}.log",
        params:
            pool_size=LONG["pool_size"],
            max_tokens=None,
            min_tokens=tokens_to_fill(LONG["max_length"]),
            section="long_context",

    use rule embed as embed_long with:
        input:
            pool=rules.pool_long.output.pool,
            model=model_files(config["model"]["name"]),
        output:
            hidden=f"{EMB_LONG}/hidden.npy",
            index=f"{EMB_LONG}/index.parquet",
            meta=f"{EMB_LONG}/meta.json",
        log:
            f"{LOGS}/embed_long/{MODEL_TAG}_layer{config['model']['layer']}_len{LONG['max_length']}.log",
        benchmark:
            f"{BENCH}/embed_long/{MODEL_TAG}_layer{config['model']['layer']}_len{LONG['max_length']}.tsv"
        resources:
            mem_mb=EMBED_LONG.mem_mb,
            runtime=120,
            gpu=EMBED_LONG.gpu,
            gpu_mem_mb=EMBED_LONG.gpu_mem_mb,
        params:
            max_length=LONG["max_length"],
            store="long",
