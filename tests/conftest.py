"""Shared test settings: no network, small thread counts, fixtures."""

from __future__ import annotations

import os

# No Hugging Face Hub in tests: without these, a Hub call retries for ~25 s before failing.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Plans use the built-in time calibration, not one a developer stored with `wordsens plan --calibrate`.
os.environ.setdefault("WORDSENS_CALIBRATION", "none")


import pytest


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The demo workflow, run once per test session in a temporary copy of the project."""
    from workflow_utils import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path_factory.mktemp("demo"))
    snakemake(workdir, "--cores", "2", "--configfile", "config/demo.yaml")
    return workdir
