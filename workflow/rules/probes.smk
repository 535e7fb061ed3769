# Probes of a pre-trained encoder as it is (Figure 1 left, Figure 3 panels 3-4) and, optionally,
# of a causal language model (Figure 1 right).


rule demo_lm:
    output:
        f"{RSRC}/demo/tiny-lm/config.json",
    params:
        seed=config["seed"],
    log:
        f"{RSRC}/logs/demo_lm.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/demo_lm.py"


rule fig1_attention:
    input:
        model=probe_model_files(),
    output:
        table=f"{RES}/tables/fig1_attention.csv",
        figures=[
            report(p, caption="../report/fig1.rst", category="Figure 1") for p in figure_files("fig1_attention")
        ],
    params:
        model_name=probe_model_name(),
        device=config["probes"]["device"],
        fig1=canonical(config["probes"]["fig1"]),
        plots=canonical(config["plots"]),
    resources:
        mem_mb=probe_mem_mb,
    log:
        f"{RES}/logs/fig1_attention.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/probe_fig1.py"


rule fig3_probes:
    input:
        model=probe_model_files(),
        pool=probe_pool(),
    output:
        layers=f"{RES}/tables/fig3_layer_changes.csv",
        scores=f"{RES}/tables/fig3_scores.csv",
        panel3=[
            report(p, caption="../report/fig3_panel3.rst", category="Figure 3")
            for p in figure_files("fig3_panel3_layer_changes")
        ],
        panel4=[
            report(p, caption="../report/fig3_panel4.rst", category="Figure 3")
            for p in figure_files("fig3_panel4_scores")
        ],
    params:
        model_name=probe_model_name(),
        device=config["probes"]["device"],
        fig3=canonical(config["probes"]["fig3"]),
        seed=config["probes"]["seed"],
        plots=canonical(config["plots"]),
    resources:
        mem_mb=probe_mem_mb,
    log:
        f"{RES}/logs/fig3_probes.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/probe_fig3.py"


rule fig1_lm:
    input:
        model=lm_model_files(),
    output:
        table=f"{RES}/tables/fig1_lm_answers.csv",
        figures=[report(p, caption="../report/fig1_lm.rst", category="Figure 1") for p in figure_files("fig1_lm_answers")],
    params:
        model_name=config["probes"]["lm"]["model"],
        lm=canonical(config["probes"]["lm"]),
        plots=canonical(config["plots"]),
    resources:
        mem_mb=lm_mem_mb,
        gpu=1 if config["probes"]["lm"]["device"] == "cuda" else 0,
    log:
        f"{RES}/logs/fig1_lm.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/probe_lm.py"
