# Figures of the paper, drawn from the aggregated tables (changing plots.* re-runs only these):
# one rule per family. ws_figure draws Figure 2 (RF, DRF) and Figure 3 panels 1-2 (RAF, ReLU-RAF),
# plain and times sqrt(n); gen_figure draws Figure 4 (colour N) and Figure 5 (colour penalty), each
# with its companion: the alignment ratio a against gamma_min in the same layout.


wildcard_constraints:
    wsfig="|".join(wsplan.WS_FIGURES),
    genfig="|".join(wsplan.GEN_FIGURES),


rule ws_figure:
    input:
        unpack(get_ws_tables),
    output:
        plain=[
            report(p, caption="../report/ws_figure.rst", category=get_report_category)
            for p in figure_files("{wsfig}")
        ],
        scaled=[
            report(
                p,
                caption="../report/ws_figure_scaled.rst",
                category=get_report_category,
            )
            for p in figure_files("{wsfig}_scaled")
        ],
    log:
        f"{LOGS}/ws_figure/{{wsfig}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        maps=get_ws_figure_maps,
        left_out=get_ws_left_out,
        plots=PLOTS,
    script:
        "../../scripts/plot_ws.py"


rule gen_figure:
    input:
        table=get_gen_table,
    output:
        figures=[
            report(p, caption="../report/gen_figure.rst", category=get_report_category)
            for p in figure_files("{genfig}_{gdata}")
        ],
        alignment=[
            report(
                p, caption="../report/gen_alignment.rst", category=get_report_category
            )
            for p in figure_files("{genfig}_alignment_{gdata}")
        ],
    log:
        f"{LOGS}/gen_figure/{{genfig}}_{{gdata}}.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        columns=get_gen_columns,
        hue=get_gen_hue,
        left_out=get_gen_left_out,
        plots=PLOTS,
    script:
        "../../scripts/plot_gen.py"


# Beyond the paper: every registered map on one grid, long contexts, per-position profiles.
rule variants_figure:
    input:
        table=rules.study_table.output.parquet.format(study="variants"),
    output:
        figures=[
            report(
                p, caption="../report/fig_variants.rst", category="Beyond the paper"
            )
            for p in figure_files("fig_variants")
        ],
    log:
        f"{LOGS}/variants_figure/fig_variants.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("variants"),
        left_out=study_left_out("variants"),
        plots=PLOTS,
    script:
        "../../scripts/plot_variants.py"


rule long_context_figure:
    input:
        unpack(get_long_context_tables),
    output:
        figures=[
            report(
                p,
                caption="../report/fig_long_context.rst",
                category="Beyond the paper",
            )
            for p in figure_files("fig_long_context")
        ],
    log:
        f"{LOGS}/long_context_figure/fig_long_context.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("long_synthetic", "long_imdb"),
        imdb_limit=LONG["max_length"] if LONG else None,
        left_out=study_left_out("long_synthetic", "long_imdb"),
        plots=PLOTS,
    script:
        "../../scripts/plot_long_context.py"


rule positions_figure:
    input:
        table=rules.study_table.output.parquet.format(study="positions"),
    output:
        figures=[
            report(
                p, caption="../report/fig_positions.rst", category="Beyond the paper"
            )
            for p in figure_files("fig_positions")
        ],
    log:
        f"{LOGS}/positions_figure/fig_positions.log",
    conda:
        "../envs/wordsens.yaml"
    params:
        labels=study_labels("positions"),
        left_out=study_left_out("positions"),
        plots=PLOTS,
    script:
        "../../scripts/plot_positions.py"
