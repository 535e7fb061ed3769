"""The memory of the trained study's jobs from the encoder's size, read from its config.json without
loading it (wordsens.compute.costs.encoder_parameters, wordsens.data.models.encoder_size)."""

from __future__ import annotations

import json

import pytest
from transformers import BertConfig, BertModel
from workflow_utils import ROOT

from wordsens import compute, pipeline
from wordsens.compute import costs
from wordsens.data.models import BERT_VOCAB, encoder_size
from wordsens.studies.trained import TrainedJob

FACTS = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}


@pytest.mark.parametrize(
    "sizes",
    [
        {},  # BERT-Base: 109,482,240
        {"hidden_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 100},
        {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 999, "type_vocab_size": 1},
    ],
)
def test_the_parameter_count_is_the_models_own(sizes):
    config = BertConfig(**sizes)
    expected = sum(p.numel() for p in BertModel(config).parameters())
    found = costs.encoder_parameters(
        width=config.hidden_size,
        layers=config.num_hidden_layers,
        vocab=config.vocab_size,
        positions=config.max_position_embeddings,
        intermediate=config.intermediate_size,
        type_vocab=config.type_vocab_size,
    )
    assert found == expected


def _encoder(tmp_path, name: str, **sizes) -> str:
    folder = tmp_path / name
    folder.mkdir()
    base = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 512}
    (folder / "config.json").write_text(json.dumps({**FACTS, **base, **sizes}))
    return str(folder)


def _trained_job(model: str) -> TrainedJob:
    config = pipeline.load_config(
        ROOT / "config.yaml", ROOT / "config" / "demo.yaml", overrides={"trained": {"model": model, "layers": [1]}}
    )
    (job,) = [
        job for job in pipeline.Grid(config, limits=compute.Limits(256 * costs.GB, None)).fit if job.rule == "trained"
    ]
    return job


def test_a_trained_job_holds_the_encoder_twice_whatever_its_size(tmp_path):
    """Two encoders that differ only in their vocabulary: the same searches, the same batch, and a
    job memory that differs by two float32 copies of the extra embedding rows (the job loads the
    encoder, the trained maps load it again for their layer); the demo's tiny BERT needs well under
    the 4 GB a job was given whatever its encoder."""
    small = _trained_job(_encoder(tmp_path, "small", vocab_size=1_000))
    large = _trained_job(_encoder(tmp_path, "xlmr-like", vocab_size=250_002))
    assert small.cost.arrays == large.cost.arrays
    assert large.cost.host_bytes - small.cost.host_bytes == 2 * 4 * (250_002 - 1_000) * 64
    demo = _trained_job("demo-tiny-bert")
    processes = costs.PROCESS_OVERHEAD + costs.JOBSTEP_OVERHEAD
    assert demo.cost.host_bytes >= processes + 2 * 4 * encoder_size("demo-tiny-bert")
    assert demo.mem_mb < 1024
    # the vocabulary is BERT's where the config does not say (the demo, a well-known Hub name)
    unsaid = costs.encoder_parameters(width=64, layers=2, vocab=BERT_VOCAB, positions=512)
    assert encoder_size("demo-tiny-bert") == unsaid
    assert encoder_size(_encoder(tmp_path, "unsaid")) == encoder_size("demo-tiny-bert")
