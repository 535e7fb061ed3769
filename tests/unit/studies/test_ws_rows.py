"""The rows of one WS job (``wordsens.studies.sensitivity.ws_rows``), with map options, per-position profiles and
samples shared across maps (the studies beyond the paper), on a small in-memory embedding store."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from wordsens import search
from wordsens.compute.devices import workflow_device
from wordsens.data.samples import draw_sample, review_samples
from wordsens.data.store import EmbeddingStore
from wordsens.seeds import derive_seed
from wordsens.studies.sensitivity import WS_NUMERICS, WSJob, token_kinds, ws_rows

SETTINGS = {
    "position": 0,
    "method": "default",
    "device": "cpu",
    "min_tokens": False,
    "max_memory_gb": None,
    "draw_on": "device",
    "search": {"max_steps": 60},
}


def _rows(*, map_name, d, n, swept, trials, seed, source, data_label, settings) -> pd.DataFrame:
    """``ws_rows`` of the job these settings describe (as its params give them back)."""
    job = WSJob.of(
        {
            "study": "ws",
            "folder": "ws",
            "map": map_name,
            "d": d,
            "n": n,
            "swept": swept,
            "trials": list(trials),
            "seed": seed,
            "data": "synthetic" if isinstance(source, str) else "imdb",
            "data_label": data_label,
            "numerics_version": WS_NUMERICS[1],
            **settings,
        }
    )
    return ws_rows(job, source)


def _store(tmp_path, lengths=(5, 9, 12)) -> EmbeddingStore:
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((len(lengths), 10, 12)).astype(np.float32)
    index = pd.DataFrame(
        {
            "review_id": [100 + i for i in range(len(lengths))],
            "label": [i % 2 for i in range(len(lengths))],
            "length": list(lengths),
        }
    )
    return EmbeddingStore(hidden=hidden, index=index, meta={}, path=tmp_path)


def test_token_kinds_follow_the_stores_length():
    # length counts [CLS] and [SEP]: a review of 3 words has length 5, its [SEP] at row 4
    assert token_kinds(8, 5) == ["[CLS]", "word", "word", "word", "[SEP]", "[PAD]", "[PAD]", "[PAD]"]
    assert token_kinds(3, 5) == ["[CLS]", "word", "word"]  # truncated before its [SEP]
    assert token_kinds(3, None) == ["row", "row", "row"]


def test_profile_rows_hold_every_position_and_its_token(tmp_path):
    store = _store(tmp_path)
    settings = {**SETTINGS, "position": "all", "profile": True, "shared_samples": True}
    frame = _rows(
        map_name="raf", d=8, n=10, swept={}, trials=[0, 1], seed=0, source=store, data_label="imdb:x", settings=settings
    )
    assert len(frame) == 2 * 10 and list(frame["position"]) == list(range(10)) * 2
    for _, rows in frame.groupby("trial"):
        length = int(rows["review_tokens"].iloc[0])
        assert list(rows["token"]) == token_kinds(10, length)
        assert rows["lower"].max() == pytest.approx(rows["sup_lower"].iloc[0])
        assert int(rows["sup_position"].iloc[0]) == int(rows["lower"].to_numpy().argmax())
    # each position's value is the estimate at that position alone (same weights, same search)
    first = frame[frame["trial"] == 0]
    row = store.index.index[store.index["review_id"] == first["review_id"].iloc[0]][0]
    X = review_samples(store, int(row), 10, 8)
    one = search.estimate("raf", X, seed=int(first["seed"].iloc[0]), position=3, device="cpu", max_steps=60)
    assert one.lower == pytest.approx(float(first["lower"].iloc[3]), rel=1e-9)


def test_shared_samples_draw_the_same_review_for_every_map(tmp_path):
    store = _store(tmp_path, lengths=tuple(range(3, 11)) * 2)
    shared = {**SETTINGS, "shared_samples": True}
    runs = {
        m: _rows(
            map_name=m, d=8, n=6, swept={}, trials=[0, 1, 2], seed=1, source=store, data_label="imdb:x", settings=s
        )
        for m, s in (("raf", shared), ("relu_raf", shared))
    }
    expected = [
        draw_sample(store, 6, 8, derive_seed(1, "ws", "shared", 8, 6, t, "sample"))[1]["review_id"] for t in range(3)
    ]
    assert list(runs["raf"]["review_id"]) == list(runs["relu_raf"]["review_id"]) == expected
    # without the setting, the sample seed includes the map (the paper's grids: unchanged)
    own = _rows(
        map_name="relu_raf",
        d=8,
        n=6,
        swept={},
        trials=[0, 1, 2],
        seed=1,
        source=store,
        data_label="imdb:x",
        settings=SETTINGS,
    )
    assert list(own["review_id"]) == [
        draw_sample(store, 6, 8, derive_seed(1, "ws", "relu_raf", 8, 6, None, t, "sample"))[1]["review_id"]
        for t in range(3)
    ]


def test_map_options_reach_the_estimate_and_the_rows():
    def one_trial(map_name, d, options):
        return _rows(
            map_name=map_name,
            d=d,
            n=6,
            swept={},
            trials=[0],
            seed=0,
            source="synthetic",
            data_label="synthetic",
            settings={**SETTINGS, "options": options} if options else SETTINGS,
        )

    frame = one_trial("mh_raf", 16, {"heads": 4})
    assert json.loads(frame["options"].iloc[0]) == {"heads": 4}
    with pytest.raises(ValueError, match="heads"):
        one_trial("mh_raf", 16, {"heads": 5})
    paper = one_trial("raf", 8, None)
    assert paper["options"].iloc[0] == "{}" and "token" not in paper


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback of a machine without a GPU")
def test_a_job_planned_for_a_gpu_runs_on_the_cpu_where_none_is_visible(capsys):
    """limits.gpu_memory_gb declared a GPU this machine lacks: the job runs on the CPU, says so, and
    its rows record the device it ran on, with the CPU's numbers."""
    run = {"map_name": "raf", "d": 8, "n": 6, "swept": {}, "trials": [0], "seed": 0, "source": "synthetic"}
    planned = _rows(**run, data_label="synthetic", settings={**SETTINGS, "device": "cuda"})
    assert "planned for a GPU (device cuda) but no CUDA device is visible" in capsys.readouterr().err
    on_cpu = _rows(**run, data_label="synthetic", settings={**SETTINGS, "device": "cpu"})
    assert planned["device"].tolist() == ["cpu"] and planned["lower"].tolist() == on_cpu["lower"].tolist()
    assert workflow_device("cpu") == "cpu" and workflow_device("auto") == "auto"


def test_rows_record_the_working_dtype_of_their_search():
    """ws.dtype reaches the search through the job's settings (``dtype``, where it is not the map's
    own) and every row records the dtype the search worked in: DRF in bfloat16 where asked, each map's
    own otherwise (float32 for DRF, float64 for attention)."""
    run = {"d": 8, "n": 4, "trials": [0, 1], "seed": 0, "source": "synthetic", "data_label": "synthetic"}
    drf = {**run, "map_name": "drf", "swept": {"L": 2}}
    reduced = _rows(**drf, settings={**SETTINGS, "dtype": "bfloat16"})
    plain = _rows(**drf, settings=SETTINGS)
    attention = _rows(**run, map_name="raf", swept={}, settings=SETTINGS)
    assert reduced["dtype"].tolist() == ["bfloat16"] * 2 and plain["dtype"].tolist() == ["float32"] * 2
    assert attention["dtype"].tolist() == ["float64"] * 2
    # the same weights and samples: the bfloat16 search's estimate is a value of the same float32 map
    assert (reduced["lower"] > 0).all() and reduced["lower"].tolist() != plain["lower"].tolist()
    with pytest.raises(ValueError, match="does not run in reduced precision"):
        _rows(**run, map_name="raf", swept={}, settings={**SETTINGS, "dtype": "bfloat16"})
