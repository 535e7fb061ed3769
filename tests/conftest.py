"""Shared test settings: no network, small thread counts, fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The test modules live in folders below tests/ (unit/<sub-package>/, statistical/, workflow/, repo/:
# docs/testing.md) and import the shared helpers at this level (workflow_utils, regression_fixture).
sys.path.insert(0, str(Path(__file__).parent))

# No Hugging Face Hub in tests: without these, a Hub call retries for ~25 s before failing.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Plans use the built-in time calibration, not one a developer stored with `wordsens plan --calibrate`.
os.environ.setdefault("WORDSENS_CALIBRATION", "none")
# One BLAS/OpenMP thread per test process (set before torch loads). The suite runs on two xdist
# workers beside Snakemake jobs on a 2-core machine: with torch's default of one thread per core,
# threads that spin-wait on each other made a statistical test 6x slower beside the demo run
# (measured: 277 s vs 43 s alone). Snakemake jobs set their own count (torch.set_num_threads in
# scripts/), and no number depends on it.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep tests that share something expensive on one pytest-xdist worker (``--dist loadgroup``):
    everything that reads the demo run or submits to the one-node SLURM cluster ("demo": the demo is
    built once, the cluster is never shared by two runs), and each module whose tests share a
    module-scoped fixture (a tiny model, a corpus, a pre-trained encoder: built once). Without xdist
    the marks do nothing. A test that reads the demo run is also marked slow (runs before the
    ``-m`` selection: the quick loop never builds the demo)."""
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        defs = fixtures.name2fixturedefs.values() if fixtures is not None else []
        if "demo_run" in item.fixturenames and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)  # the demo run takes minutes: never in the quick loop
        if "demo_run" in item.fixturenames or item.get_closest_marker("slurm"):
            group = "demo"
        elif any(d[-1].scope == "module" for d in defs if d):
            group = item.module.__name__ if item.module is not None else item.nodeid
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def one_thread():
    """One torch thread for the test: on a shared 2-core machine two threads that wait on each other
    run searches 5-20x slower (measured); the numbers do not depend on it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """The demo workflow, run once per test session in a temporary copy of the project."""
    from workflow_utils import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path_factory.mktemp("demo"))
    snakemake(workdir, "--cores", "2", "--configfile", "config/demo.yaml")
    return workdir


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    """The demo's tiny random BERT, as the workflow builds it (2 layers, width 64, 4 heads), built once per
    module; a module that needs another shape defines its own ``tiny_bert``."""
    from wordsens.data import demo

    return str(demo.make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny"))
