# Figures of the paper, drawn from the aggregated tables (changing plots.* re-runs only these).


def tables_for(maps):
    return {m: f"{RES}/tables/ws_{m}.parquet" for m in maps if m in ws_maps()}


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
        plots=config["plots"],
    log:
        f"{RES}/logs/fig2.log",
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
        plots=config["plots"],
    log:
        f"{RES}/logs/fig3.log",
    script:
        "../../scripts/plot_ws.py"
