# wordsens: the experiments of Bombari & Mondelli (ICML 2024) from raw data to figures.
#   snakemake --cores all                                  # the paper (downloads IMDb and BERT-Base)
#   snakemake --cores all --configfile config/demo.yaml    # offline demo, a few minutes
#   snakemake --profile profiles/slurm                     # the same on a SLURM cluster
#   snakemake --report report.html                         # every figure with its caption
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# The package in src/ is importable by the workflow and its jobs even where it is not installed
# (for example inside --software-deployment-method conda environments): the checkout's own code.
_SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, _SRC)
from wordsens.io import prepend_pythonpath

prepend_pythonpath(_SRC)


# validates the configuration (workflow/schemas/config.schema.yaml with the studies' sections) and
# plans the job grid of every registered study (wordsens.studies)
include: "workflow/rules/common.smk"
# the packaged pre-trained encoders (model.name: minilm), before the rules that load models
include: "workflow/rules/pretrained.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/embed.smk"
# every study's jobs, tables and figures, made from the study registry
include: "workflow/rules/studies.smk"
include: "workflow/rules/claims.smk"


# the rules a study keeps in a file of its own (StudySpec.rules_file: the probes'), found by the registry
for _rules in [spec.rules_file for spec in RUNNING if spec.rules_file]:

    include: _rules


# A run whose first step cannot run here (IMDb from an unreachable Hub) stops before any job.
onstart:
    run_may_start()


# The jobs left out (limits.unfit: skip) are listed when the grid is planned and again at the end,
# with the failed jobs and their logs when a job failed (keep-going runs everything else first).
onsuccess:
    end_of_run(log, failed=False)


onerror:
    end_of_run(log, failed=True)


rule all:
    default_target: True
    input:
        targets(),
