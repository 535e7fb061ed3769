"""Snakemake adapter: one job of any study. Its rule's name finds the body in the study registry
(wordsens.studies.JobRule.body), which turns the job's params back into its typed settings and returns
its rows; the table is written atomically."""

import torch

from wordsens.io import log_to, write_table
from wordsens.studies import JobFiles, job_rule

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
kind = job_rule(snakemake.rule)
frame = kind.body()(
    snakemake.params.job, JobFiles(dict(snakemake.input.items()), snakemake.config), **snakemake.params.extra
)
write_table(snakemake.output.table, frame)
print(kind.summary(frame) if callable(kind.summary) else frame[list(kind.summary)].to_string(index=False))
