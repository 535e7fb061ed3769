# Figures of the paper, drawn from the aggregated tables (changing plots.* re-runs only these).


rule fig2:
    input:
        unpack(lambda wc: tables_for(["rf", "drf"])),
    output:
        plain=[report(p, caption="../report/fig2.rst", category="Figure 2") for p in figure_files("fig2_rf_drf")],
        scaled=[
            report(p, caption="../report/fig2_scaled.rst", category="Figure 2")
            for p in figure_files("fig2_rf_drf_scaled")
        ],
    params:
        plots=canonical(config["plots"]),
    log:
        f"{RES}/logs/fig2.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/plot_ws.py"


rule fig3:
    input:
        unpack(lambda wc: tables_for(["raf", "relu_raf"])),
    output:
        plain=[report(p, caption="../report/fig3.rst", category="Figure 3") for p in figure_files("fig3_raf_relu_raf")],
        scaled=[
            report(p, caption="../report/fig3_scaled.rst", category="Figure 3")
            for p in figure_files("fig3_raf_relu_raf_scaled")
        ],
    params:
        plots=canonical(config["plots"]),
    log:
        f"{RES}/logs/fig3.log",
    conda:
        "../envs/wordsens.yaml"
    script:
        "../../scripts/plot_ws.py"
