# Hidden states of the encoder for the review pool of each embedding store: one checksummed store per
# model and layer (and per length for a study's own store, e.g. long_context's), checked before it is
# written (docs/inputs.md: no NaN/Inf, enough distinct samples at every n of the jobs that read it).
# The grid's n and data.min_distinct_share reach the job through the configuration, not params, so
# that a new n re-embeds nothing; an existing store is checked against this grid's n here, before any
# job runs. One rule per store (embed, embed_<store>), for every store of the run.
from wordsens.data.inputs import store_problems
from wordsens.pipeline import store_metas

if not LINTING:
    _problems = [
        problem
        for _store, _meta in store_metas(config, STORES.values()).items()
        for problem in store_problems(
            _meta,
            GRID.store_ns(_store),
            config["data"]["min_distinct_share"],
            f"the {_store} store {store_dir(config, STORES[_store])}",
        )
    ]
    if _problems:
        raise WorkflowError(
            "an existing embedding store cannot carry this grid (docs/inputs.md):\n  "
            + "\n  ".join(_problems)
            + "\n  (remove the n, or delete the store folder to embed it again)"
        )


for _store in STORES.values():

    rule:
        name:
            _store.rule
        input:
            pool=getattr(rules, _store.pool_rule).output.pool,
            model=model_files(config["model"]["name"]),
        output:
            hidden=f"{store_dir(config, _store)}/hidden.npy",
            index=f"{store_dir(config, _store)}/index.parquet",
            meta=f"{store_dir(config, _store)}/meta.json",
        log:
            f"{LOGS}/{_store.rule}/{store_tag(_store)}.log",
        benchmark:
            f"{BENCH}/{_store.rule}/{store_tag(_store)}.tsv"
        priority: 50
        conda:
            ENV
        # One thread, like every data step: with priority 50 the job then takes the first core that
        # frees once its pool exists. A job needing two cores waits, on a busy machine, until two free
        # at once, which 1-thread compute jobs that need no data may put off for the whole run.
        threads: 1
        resources:
            mem_mb=wsplan.embed_step(config, LIMITS, _store).mem_mb,
            runtime=120,
            gpu=wsplan.embed_step(config, LIMITS, _store).gpu,
            gpu_mem_mb=wsplan.embed_step(config, LIMITS, _store).gpu_mem_mb,
        params:
            model_name=config["model"]["name"],
            layer=config["model"]["layer"],
            max_length=_store.max_length,
            batch_size=config["model"]["batch_size"],
            device=config["model"]["device"],
            dtype=config["model"]["dtype"],
            store=_store.name,
        script:
            "../../scripts/embed.py"
