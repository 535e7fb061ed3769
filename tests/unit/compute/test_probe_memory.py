"""The memory of the encoder probes (Figure 1 left, Figure 3 panels 3-4) from the encoder's size, read from
its config.json without loading it (wordsens.compute.costs.probe_memory, wordsens.studies.probes.plan.probe_request);
4 GB where the size is unknown; the estimate against the peak of the probes' own code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from workflow_utils import ROOT, demo_config, env

from wordsens import compute
from wordsens.compute import costs
from wordsens.data import demo
from wordsens.data.models import encoder_size, model_heads, model_layers, model_width
from wordsens.studies.probes.plan import probe_request

FACTS = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
BASE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 512}
LIMITS = compute.Limits(256 * costs.GB, None)


def _encoder(tmp_path, name: str, **sizes) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**FACTS, **BASE, "vocab_size": 1000, **sizes}))
    return str(folder)


def _probe_mb(model: str) -> int:
    """The encoder probes' host memory (MB) where ``probes.model`` names ``model`` (merged, not checked:
    the Hub names need neither the Hub nor its cache to be sized)."""
    config = demo_config({"probes": {"model": model}}, check=False)
    return probe_request(config, LIMITS, "encoder").mem_mb


def test_the_probes_memory_grows_with_the_encoders_vocabulary_by_one_copy(tmp_path):
    """Two encoders that differ only in 100,000 vocabulary rows of width 64: the probe holds one float32
    copy of them more (25.6 MB), nothing else changes."""
    small, large = _encoder(tmp_path, "small"), _encoder(tmp_path, "large", vocab_size=101_000)
    extra = 100_000 * 64 * 4
    assert abs((_probe_mb(large) - _probe_mb(small)) - extra / costs.MB) <= 1


def test_the_probes_memory_grows_with_the_attention_maps_of_the_longest_text(tmp_path):
    """An encoder of 128 positions against one of 512 (the probes' texts are at most its positions long):
    the attention maps (heads x L^2 float32) of every layer kept before and after a move, and three per
    sequence of the two the ascent runs, make at least the difference."""
    short, long = _encoder(tmp_path, "short", max_position_embeddings=128), _encoder(tmp_path, "long")
    layers, heads, squares = 2, 4, 512**2 - 128**2
    kept = 2 * layers * heads * squares * 4
    ascent = 2 * 3 * heads * squares * 4
    assert _probe_mb(long) - _probe_mb(short) >= (kept + ascent) / costs.MB


def test_known_encoders_are_sized_and_an_unknown_one_gets_the_fallback():
    """The demo's tiny BERT, MiniLM, BERT-Base and BERT-Large (their facts known without the Hub) in the
    order of their sizes, each below the flat 4 GB the probes requested before they were sized; a Hub
    name that is not in the local cache: the fallback."""
    sizes = [_probe_mb(name) for name in ("demo-tiny-bert", "minilm", "bert-base-uncased", "bert-large-uncased")]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    assert sizes[-1] * costs.MB < costs.FALLBACK_PROBE
    assert _probe_mb("someone/an-encoder-not-in-the-cache") * costs.MB == costs.FALLBACK_PROBE


@pytest.mark.slow  # a fresh process per job (torch and transformers start-up)
@pytest.mark.parametrize("job", ["fig1", "fig3"])
def test_the_estimate_covers_the_measured_peak_of_the_probes(tmp_path, job):
    """A fresh process runs a probe job's code (``benchmarks/bench_probes.py``'s worker) on the demo's tiny
    BERT at the longest text it reads (510 tokens): its peak RSS is below the estimate of the job's
    Python process, and the estimate stays within 2 x peak + 256 MB."""
    folder = demo.make_tiny_bert(tmp_path / "tiny")
    script = ROOT / "benchmarks" / "bench_probes.py"
    command = [sys.executable, str(script), "--worker", "--method", job, "--model", str(folder)]
    out = subprocess.run(command, capture_output=True, text=True, env=env(), check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    peak = json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]
    sizes = {"width": model_width(str(folder)), "layers": model_layers(str(folder)), "heads": model_heads(str(folder))}
    estimate = costs.probe_memory("encoder", parameters=encoder_size(str(folder)), length=512, **sizes).total / costs.MB
    assert peak <= estimate <= 2 * peak + 256, (peak, estimate)
