# Probes of a pre-trained encoder as it is (Figure 1 left, Figure 3 panels 3-4) and, optionally,
# of a causal language model (Figure 1 right). Each probe computes its tables in one rule and
# draws them in another, so a plot setting re-draws the figures without running the models; the
# figure rules get the stamp of the model they drew ("toy demo: ..." on a random one) as a param.
# The workflow includes this file because the probes study names it (StudySpec.rules_file); the paths
# below are relative to it, the shared environment is the workflow's (ENV).
from wordsens.plots import run_stamp
from wordsens.studies.probes.plan import caption, probe_model, probe_request

PROBE_MODEL = probe_model(config)
PROBE_ENCODER = probe_request(config, LIMITS, "encoder")
PROBE_LM = probe_request(config, LIMITS, "lm")


rule demo_lm:
    output:
        config=f"{RSRC}/demo/tiny-lm/config.json",
    log:
        f"{LOGS}/demo_lm/demo_lm.log",
    localrule: True
    conda:
        ENV
    params:
        seed=config["seed"],
    script:
        "scripts/demo_lm.py"


rule fig1_attention:
    input:
        model=model_files(PROBE_MODEL),
    output:
        table=f"{RES}/tables/fig1_attention.csv",
    log:
        f"{LOGS}/fig1_attention/fig1_attention.log",
    benchmark:
        f"{BENCH}/fig1_attention/fig1_attention.tsv"
    priority: PRIORITY.get("fig1_attention", 0)
    conda:
        ENV
    resources:
        mem_mb=PROBE_ENCODER.mem_mb,
        gpu=PROBE_ENCODER.gpu,
        gpu_mem_mb=PROBE_ENCODER.gpu_mem_mb,
    params:
        model_name=PROBE_MODEL,
        device=config["probes"]["device"],
        fig1=canonical(config["probes"]["fig1"]),
    script:
        "scripts/probe_fig1.py"


rule fig1_attention_figure:
    input:
        table=rules.fig1_attention.output.table,
    output:
        figures=report_figures("fig1_attention", caption("fig1.rst"), "Figure 1"),
    log:
        f"{LOGS}/fig1_attention/fig1_attention_figure.log",
    localrule: True
    conda:
        ENV
    params:
        model_name=PROBE_MODEL,
        layer=config["probes"]["fig1"]["layer"],
        heads=canonical(config["probes"]["fig1"]["heads"]),
        plots=PLOTS,
        stamp=run_stamp(config, model=PROBE_MODEL),
    script:
        "scripts/plot_fig1.py"


rule fig3_probes:
    input:
        model=model_files(PROBE_MODEL),
        # the review pool, when panel 3's text is drawn from it
        pool=rules.pool.output.pool if config["probes"]["fig3"]["text"] is None else [],
    output:
        layers=f"{RES}/tables/fig3_layer_changes.csv",
        scores=f"{RES}/tables/fig3_scores.csv",
    log:
        f"{LOGS}/fig3_probes/fig3_probes.log",
    benchmark:
        f"{BENCH}/fig3_probes/fig3_probes.tsv"
    priority: PRIORITY.get("fig3_probes", 0)
    conda:
        ENV
    resources:
        mem_mb=PROBE_ENCODER.mem_mb,
        gpu=PROBE_ENCODER.gpu,
        gpu_mem_mb=PROBE_ENCODER.gpu_mem_mb,
    params:
        model_name=PROBE_MODEL,
        device=config["probes"]["device"],
        fig3=canonical(config["probes"]["fig3"]),
        seed=config["probes"]["seed"],
    script:
        "scripts/probe_fig3.py"


rule fig3_figures:
    input:
        layers=rules.fig3_probes.output.layers,
        scores=rules.fig3_probes.output.scores,
    output:
        panel3=report_figures(
            "fig3_panel3_layer_changes", caption("fig3_panel3.rst"), "Figure 3"
        ),
        panel4=report_figures(
            "fig3_panel4_scores", caption("fig3_panel4.rst"), "Figure 3"
        ),
    log:
        f"{LOGS}/fig3_probes/fig3_figures.log",
    localrule: True
    conda:
        ENV
    params:
        model_name=PROBE_MODEL,
        token=config["probes"]["fig3"]["token"],
        short_token=config["probes"]["fig3"]["short_token"],
        layer=config["probes"]["fig3"]["layer"],
        head=config["probes"]["fig3"]["head"],
        plots=PLOTS,
        stamp=run_stamp(config, model=PROBE_MODEL),
    script:
        "scripts/plot_fig3.py"


rule fig1_lm:
    input:
        model=model_files(config["probes"]["lm"]["model"]),
    output:
        table=f"{RES}/tables/fig1_lm_answers.csv",
    log:
        f"{LOGS}/fig1_lm/fig1_lm.log",
    benchmark:
        f"{BENCH}/fig1_lm/fig1_lm.tsv"
    priority: PRIORITY.get("fig1_lm", 0)
    conda:
        ENV
    resources:
        mem_mb=PROBE_LM.mem_mb,
        gpu=PROBE_LM.gpu,
        gpu_mem_mb=PROBE_LM.gpu_mem_mb,
    params:
        model_name=config["probes"]["lm"]["model"],
        lm=canonical(config["probes"]["lm"]),
    script:
        "scripts/probe_lm.py"


rule fig1_lm_figure:
    input:
        table=rules.fig1_lm.output.table,
    output:
        figures=report_figures("fig1_lm_answers", caption("fig1_lm.rst"), "Figure 1"),
    log:
        f"{LOGS}/fig1_lm/fig1_lm_figure.log",
    localrule: True
    conda:
        ENV
    params:
        model_name=config["probes"]["lm"]["model"],
        plots=PLOTS,
        stamp=run_stamp(config, model=config["probes"]["lm"]["model"]),
    script:
        "scripts/plot_lm.py"
