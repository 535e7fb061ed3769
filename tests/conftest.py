"""Shared test settings: no network, small thread counts, fixtures."""

from __future__ import annotations

import os

# No Hugging Face Hub in tests: without these, a Hub call retries for ~25 s before failing.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
