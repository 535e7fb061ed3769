# Figures of the paper, drawn from the aggregated tables (changing plots.* re-runs only these):
# one rule per family. ws_figure draws Figure 2 (RF, DRF) and Figure 3 panels 1-2 (RAF, ReLU-RAF),
# plain and times sqrt(n); gen_figure draws Figure 4 (colour N) and Figure 5 (colour penalty), each
# with its companion: the alignment ratio a against gamma_min in the same layout. Every figure rule
# gets the run's stamp ("toy demo: tiny random BERT" on a random encoder) as a param.
from wordsens.plots import run_stamp


wildcard_constraints:
    wsfig="|".join(wsplan.WS_FIGURES),
    genfig="|".join(wsplan.GEN_FIGURES),


rule ws_figure:
    input:
        unpack(get_ws_tables),
    output:
        plain=report_figures("{wsfig}", "ws_figure.rst", get_report_category),
        scaled=report_figures(
            "{wsfig}_scaled", "ws_figure_scaled.rst", get_report_category
        ),
    log:
        f"{LOGS}/ws_figure/{{wsfig}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        maps=get_ws_figure_maps,
        left_out=get_ws_left_out,
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_ws.py"


rule gen_figure:
    input:
        table=get_gen_table,
    output:
        figures=report_figures(
            "{genfig}_{gdata}", "gen_figure.rst", get_report_category
        ),
        alignment=report_figures(
            "{genfig}_alignment_{gdata}", "gen_alignment.rst", get_report_category
        ),
    log:
        f"{LOGS}/gen_figure/{{genfig}}_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        columns=get_gen_columns,
        hue=get_gen_hue,
        left_out=get_gen_left_out,
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_gen.py"


# Beyond the paper: every registered map on one grid, long contexts, per-position profiles.
rule variants_figure:
    input:
        table=rules.study_table.output.parquet.format(study="variants"),
    output:
        figures=report_figures("fig_variants", "fig_variants.rst", "Beyond the paper"),
    log:
        f"{LOGS}/variants_figure/fig_variants.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("variants"),
        left_out=study_left_out("variants"),
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_variants.py"


rule long_context_figure:
    input:
        unpack(get_long_context_tables),
    output:
        figures=report_figures(
            "fig_long_context", "fig_long_context.rst", "Beyond the paper"
        ),
    log:
        f"{LOGS}/long_context_figure/fig_long_context.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("long_synthetic", "long_imdb"),
        imdb_limit=LONG["max_length"] if LONG else None,
        left_out=study_left_out("long_synthetic", "long_imdb"),
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_long_context.py"


rule positions_figure:
    input:
        table=rules.study_table.output.parquet.format(study="positions"),
    output:
        figures=report_figures("fig_positions", "fig_positions.rst", "Beyond the paper"),
    log:
        f"{LOGS}/positions_figure/fig_positions.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("positions"),
        left_out=study_left_out("positions"),
        plots=PLOTS,
        stamp=run_stamp(config),
    script:
        "../../scripts/plot_positions.py"
