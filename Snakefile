# wordsens: the experiments of Bombari & Mondelli (ICML 2024) from raw data to figures.
#   snakemake --cores all                                  # the paper (downloads IMDb and BERT-Base)
#   snakemake --cores all --configfile config/demo.yaml    # offline demo, a few minutes
#   snakemake --profile profiles/slurm                     # the same on a SLURM cluster
#   snakemake --report report.html                         # every figure with its caption
import sys

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/sensitivity.smk"
include: "workflow/rules/plots.smk"


localrules:
    all,
    demo_corpus,
    demo_model,
    reviews,
    ws_table,
    fig2,
    fig3,


def final_outputs():
    out = [f"{RES}/tables/ws_{m}.parquet" for m in ws_maps()]
    if {"rf", "drf"} & set(ws_maps()):
        out += figure_files("fig2_rf_drf") + figure_files("fig2_rf_drf_scaled")
    if {"raf", "relu_raf"} & set(ws_maps()):
        out += figure_files("fig3_raf_relu_raf") + figure_files("fig3_raf_relu_raf_scaled")
    return out


rule all:
    input:
        final_outputs(),
    default_target: True
