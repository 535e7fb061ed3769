"""Snakemake adapter: one job of any study. Its rule's name finds its kind in the study registry
(wordsens.studies.job_kind), which turns the job's params back into the job; its body (Job.run) returns its
rows, written atomically."""

import torch

from wordsens.io import log_to, write_table
from wordsens.studies import JobFiles, job_kind

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
job = job_kind(snakemake.rule).of(snakemake.params.job, snakemake.params.extra)
frame = job.run(JobFiles(dict(snakemake.input.items()), snakemake.config))
write_table(snakemake.output.table, frame)
print(job.log(frame))
