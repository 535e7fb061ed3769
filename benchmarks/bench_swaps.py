"""Real-word substitutions: the vocabulary scan (wordsens.search.swaps) against the naive computation.

The naive computation of S_words at a position is one forward of the plain map per word, batched:
the sample with row i replaced by each word's row, through ``maps.apply``, against phi(X). The scan
evaluates the map's own word-sensitivity problem per word (attention: one row and one column of the
scores; RF: one product with the moved token's block). Each side runs in its own subprocess (its
peak memory is its own), on the same sample and weights, and the table prints the time ratio
naive / scan and whether both find the same best word.

Words: the 30,522 rows of a BERT-Base-shaped embedding layer with random weights (BERT's
initialisation: N(0, 0.02^2) embeddings, LayerNorm 1 and 0; the pre-trained weights are not
available here), at the positions of a review: the first review of the IMDb Parquet file given with
``--imdb`` (default: /work/shared/data/imdb/train.parquet when present) tokenised with BERT-Base's
``vocab.txt`` (``--vocab``), else seeded random tokens. The scan's float32 scores are re-checked in
float64 with the plain map for the best 64 words.

Jobs (``--jobs``): ``raf-768-128`` and ``relu_raf-768-128`` (one position, the whole vocabulary;
target <= 2 s on 2 cores), ``raf-768-128-all`` and ``relu_raf-768-128-all`` (every position of a
128-token review, <= 3 minutes; the naive side projected from one position), ``rf-768-150`` (one
position, <= 2 minutes; the naive side is not run: its dense matrix (k, n d) = (115,200, 115,200) is
53 GB; the table states the scan's flop floor 2 V k d instead). ``block-768-128`` (one position,
screened: its screen, then 256 words and 1,024 for the statistics scored exactly; no target).
``--naive-words N`` times the naive side on N words and projects the vocabulary (0: every word).

``--recall`` (the screened maps): on 100 (review, position) cases (the IMDb Parquet's first reviews,
one seeded position each, specials excluded), the rate at which a screen's top K holds the exhaustive
best word (every word scored by the problem's value), at K = 16, 64, 256, 1024, for the library's
screen (``screen_scores``: what a screened scan ranks by) and the first-order score ``D^T G D`` (the
baseline) side by side, with the seconds per case of each and of the exhaustive scoring: DRF (L = 2)
and ``block`` (4 heads) at d = 16, n = 16 on the BERT-Base-shaped layer's first 16 coordinates,
``block`` at d = 128, n = 32, and ``trained_layer`` (layer 1) of a tiny random BERT with BERT-Base's
vocabulary (width 64, 2 layers, 4 heads, as the demo's encoder), d = 64, n = 16; with ``--model
FOLDER`` also that encoder's layer 1 at its width, n = 32.

    python benchmarks/bench_swaps.py                        # the table, 2 threads
    python benchmarks/bench_swaps.py --jobs raf-768-128 --threads 1
    python benchmarks/bench_swaps.py --recall               # the screened maps' recall at K = 16, 64, 256, 1024
    python benchmarks/bench_swaps.py --quick                # small sizes, a minute
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _harness import add_worker_flags, run_worker, selected

IMDB = Path("/work/shared/data/imdb/train.parquet")
VOCAB = Path("/work/shared/data/bert-base-uncased/vocab.txt")
BERT_VOCAB, BERT_WIDTH, BERT_POSITIONS = 30_522, 768, 512

# job -> (map, n, d, positions: "one" | "all", target text)
JOBS = {
    "raf-768-128": ("raf", 128, 768, "one", "<= 2 s on 2 cores (naive: ~5e12 flops)"),
    "relu_raf-768-128": ("relu_raf", 128, 768, "one", "<= 2 s on 2 cores"),
    "raf-768-128-all": ("raf", 128, 768, "all", "<= 3 min for every position"),
    "relu_raf-768-128-all": ("relu_raf", 128, 768, "all", "<= 3 min for every position"),
    "rf-768-150": ("rf", 150, 768, "one", "<= 2 min on 2 cores"),
    "block-768-128": ("block", 128, 768, "one", "screened (256 words scored exactly); no target"),
}
QUICK = {
    "raf-128-32": ("raf", 32, 128, "one", "quick"),
    "relu_raf-128-32-all": ("relu_raf", 32, 128, "all", "quick"),
    "rf-64-40": ("rf", 40, 64, "one", "quick"),
}
POSITION = 17  # the position of the one-position jobs (a word of the review)
RECALL_K = (16, 64, 256, 1024)


def _layer(width: int, vocab: int = BERT_VOCAB, seed: int = 0):
    """A BERT-shaped embedding layer with BERT's initialisation (random weights), float64."""
    import torch

    from wordsens.data.vocabulary import EmbeddingLayer

    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)

    ones, zeros = torch.ones(width, dtype=torch.float64), torch.zeros(width, dtype=torch.float64)
    return EmbeddingLayer(randn(vocab, width), randn(BERT_POSITIONS, width), randn(width), ones, zeros, 1e-12)


def _tokenizer(vocab: str):
    from transformers import BertTokenizerFast  # type: ignore[attr-defined]

    return BertTokenizerFast(vocab=vocab, do_lower_case=True) if vocab and Path(vocab).exists() else None


def _reviews(path: str, count: int) -> list[str]:
    if not path or not Path(path).exists():
        return []
    import pandas as pd

    return [str(t) for t in pd.read_parquet(path, columns=["text"])["text"].head(count)]


def _review_ids(args: argparse.Namespace, n: int, index: int = 0) -> list[int]:
    """The first n tokens of review ``index`` ([CLS] ... [SEP]), or seeded random ids without the data."""
    import numpy as np

    from wordsens.data.vocabulary import review_tokens

    tokenizer, texts = _tokenizer(args.vocab), _reviews(args.imdb, index + 1)
    if tokenizer is not None and len(texts) > index:
        return review_tokens(tokenizer, texts[index], n)
    rng = np.random.default_rng(index)
    return [101, *rng.integers(1000, BERT_VOCAB, n - 1).tolist()]


def worker(args: argparse.Namespace) -> None:
    """One side of one job in its own process: one JSON line."""
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from wordsens import maps
    from wordsens.compute import swap_costs
    from wordsens.compute.devices import peak_rss_bytes
    from wordsens.maps import registry
    from wordsens.search.swaps import prepare_problem, scan

    name, n, d, where = args.map, args.n, args.d, args.where
    layer = _layer(BERT_WIDTH)
    ids = _review_ids(args, n)
    X = layer.sample(ids, d)
    words = np.arange(BERT_VOCAB)
    weights = None if name == "rf" else maps.sample_weights(name, 0, n, d, dtype=torch.float64)
    started = time.perf_counter()
    out: dict = {}
    if args.side == "scan":
        positions = list(range(n)) if where == "all" else [POSITION]
        best = []
        vocabulary = layer.words(words)
        whole = swap_costs.exhaustive(registry.get(name), n, d, {}, vocab=len(words))
        for i in positions:
            rows = vocabulary.at(i, d)
            problem, _, _ = prepare_problem(name, X, i, seed=0, vocab=len(words), weights=weights, device="cpu")
            found = scan(problem, rows, X[i], top_k=10, exhaustive=whole, screen=256, sample=1024)
            best.append((found.top[0], found.top_scores[0]))
        out.update(best=best[0][0] if where == "one" else None, value=best[0][1], positions=len(positions))
        out.update(exhaustive=whole)
    else:  # one plain forward per word, batched, float64 (a sample of words, projected)
        i = POSITION
        rows = layer.rows(words, i, d)
        chosen = words if args.naive_words == 0 else words[: args.naive_words]
        W = weights
        base = maps.apply(name, X, W)
        scores = torch.empty(len(chosen), dtype=torch.float64)
        with torch.no_grad():
            for start in range(0, len(chosen), 64):
                part = torch.as_tensor(chosen[start : start + 64])
                moved = X.expand(part.numel(), -1, -1).clone()
                moved[:, i] = rows[part]
                change = (maps.apply(name, moved, W) - base).flatten(1)
                scores[start : start + part.numel()] = torch.linalg.vector_norm(change, dim=-1)
        scores /= float(torch.linalg.vector_norm(base))
        j = int(torch.argmax(scores))
        out.update(best=int(chosen[j]), value=float(scores[j]), words=len(chosen))
    out.update(seconds=time.perf_counter() - started, peak_mb=peak_rss_bytes() / 1024**2)
    print(json.dumps(out))


def recall_worker(args: argparse.Namespace) -> None:
    """The screened maps' recall on ``args.cases`` cases: one JSON line, per map the rank of the
    exhaustive best word under the library's screen (``screen_scores``, what a screened scan ranks by)
    and under the first-order score (the baseline, ``first_order_gram``), and their seconds."""
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from wordsens import maps
    from wordsens.search.swaps import first_order_gram, move_values, prepare_problem, scan, screen_scores

    tokenizer = _tokenizer(args.vocab)
    texts = _reviews(args.imdb, args.cases)
    rng = np.random.default_rng(0)
    cases = []
    for c in range(args.cases):
        ids = _review_ids(args, 32, c % max(len(texts), 1)) if texts else _review_ids(args, 32, c)
        cases.append(ids)
    folder = _tiny_bert_vocab(args)
    # label -> (map, d, n, options, embedding layer or an encoder's folder)
    setups: dict[str, tuple] = {
        "drf": ("drf", 16, 16, {}, _layer(64, seed=1)),
        "block": ("block", 16, 16, {"heads": 4}, _layer(64, seed=1)),
        "block-128": ("block", 128, 32, {"heads": 4}, _layer(128, seed=1)),
        "trained_layer": ("trained_layer", 64, 16, {"model": folder, "layer": 1}, folder),
    }
    if args.model:
        setups["trained_layer-model"] = ("trained_layer", 0, 32, {"model": args.model, "layer": 1}, args.model)
    if tokenizer is None:
        setups.pop("trained_layer")
    results = []
    for label, (name, d, n, options, layer) in setups.items():
        if isinstance(layer, str):
            from wordsens.data.pretrained import load_encoder
            from wordsens.data.vocabulary import EmbeddingLayer

            layer = EmbeddingLayer.of(load_encoder(layer, "cpu")[1])
            d = d or layer.width
        ranks: dict[str, list[int]] = {"screen": [], "first-order": []}
        seconds = {"screen": 0.0, "first-order": 0.0, "exhaustive": 0.0}
        agree, started = 0, time.perf_counter()
        vocabulary = layer.words(np.arange(BERT_VOCAB))
        for c, full_ids in enumerate(cases):
            ids = full_ids[:n]
            words = [p for p in range(1, n) if ids[p] not in (0, 100, 101, 102, 103)]
            i = int(rng.choice(words))
            X = layer.sample(ids, d)
            weights = maps.sample_weights(name, c, n, d, dtype=torch.float64, **options)
            rows = vocabulary.at(i, d)
            problem, chunk, _ = prepare_problem(name, X, i, seed=c, vocab=BERT_VOCAB, weights=weights, options=options)
            moves = rows - X[i]
            t0 = time.perf_counter()
            values = move_values(problem, moves, chunk)
            seconds["exhaustive"] += time.perf_counter() - t0
            best = int(torch.argmax(values))
            t0 = time.perf_counter()
            screened = screen_scores(problem, moves, chunk, seed=c)
            seconds["screen"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            G = first_order_gram(problem)
            first = ((moves @ G) * moves).sum(-1)
            seconds["first-order"] += time.perf_counter() - t0
            ranks["screen"].append(int((screened > screened[best]).sum()))
            ranks["first-order"].append(int((first > first[best]).sum()))
            if c < 10:  # the library's screened scan at K = 256 finds the same best where the rank says so
                found = scan(problem, rows, X[i], exhaustive=False, screen=256, sample=64, seed=c)
                agree += (found.top[0] == best) == (ranks["screen"][-1] < 256)
        for method, r in ranks.items():
            results.append(
                {
                    "map": label,
                    "screen": method,
                    "d": d,
                    "n": n,
                    "cases": len(cases),
                    "rates": {k: sum(x < k for x in r) / len(r) for k in RECALL_K},
                    "median_rank": float(np.median(r)),
                    "max_rank": max(r),
                    "scan_agrees": agree if method == "screen" else None,
                    "seconds": seconds[method] / len(cases),
                    "exhaustive_seconds": seconds["exhaustive"] / len(cases),
                }
            )
        print(f"{label}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    print(json.dumps({"maps": results}))


def _tiny_bert_vocab(args: argparse.Namespace) -> str:
    """A tiny random BERT (the demo encoder's shape: width 64, 2 layers, 4 heads) with BERT-Base's
    vocabulary, saved once in a temporary folder."""
    import tempfile

    import torch
    from transformers import BertConfig, BertModel

    folder = Path(tempfile.gettempdir()) / "wordsens-bench-tiny-bert-base-vocab"
    if not (folder / "config.json").exists():
        tokenizer = _tokenizer(args.vocab)
        if tokenizer is None:
            return ""
        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=BERT_VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256
        )
        config.initializer_range = 0.2  # as the demo's encoder (wordsens.data.demo.make_tiny_bert)
        BertModel(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return str(folder)


def _load() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="*", help="jobs to run (default: all of the table)")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per side (default 2)")
    parser.add_argument("--naive-words", type=int, default=2048, help="words timed on the naive side (0: all)")
    parser.add_argument("--recall", action="store_true", help="the screened maps' recall instead of the table")
    parser.add_argument("--cases", type=int, default=100, help="(review, position) cases of --recall")
    parser.add_argument("--imdb", default=str(IMDB) if IMDB.exists() else "", help="IMDb Parquet file")
    parser.add_argument("--vocab", default=str(VOCAB) if VOCAB.exists() else "", help="BERT-Base vocab.txt")
    parser.add_argument(
        "--model", default="", help="--recall: also a real encoder's layer 1 (a folder, BERT-Base's vocabulary; n = 32)"
    )
    add_worker_flags(parser, ("--map", "--where", "--side"), ("--n", "--d"))
    args = parser.parse_args()
    if args.worker:
        (recall_worker if args.recall else worker)(args)
        return
    common = ["--threads", str(args.threads), "--imdb", args.imdb, "--vocab", args.vocab]
    if args.recall:
        print(f"recall of the vocabulary screens, {args.cases} cases, load before: {_load()}")
        extra = ["--model", args.model] if args.model else []
        found = run_worker(__file__, [*common, "--recall", "--cases", str(args.cases), *extra])
        if "error" in found:
            print(f"error: {found['error']}")
            return
        ks = " | ".join(f"K = {k}" for k in RECALL_K)
        head = "median rank | max rank | scan agrees | s per case (exhaustive)"
        print(f"| map | screen | d | n | cases | {ks} | {head} |")
        print("|---|---|---|---|---|" + "---|" * len(RECALL_K) + "---|---|---|---|")
        for r in found["maps"]:
            rates = " | ".join(f"{100 * r['rates'][str(k)]:.0f}%" for k in RECALL_K)
            agrees = "-" if r["scan_agrees"] is None else f"{r['scan_agrees']}/10"
            print(
                f"| {r['map']} | {r['screen']} | {r['d']} | {r['n']} | {r['cases']} | {rates} | "
                f"{r['median_rank']:.0f} | {r['max_rank']} | {agrees} | "
                f"{r['seconds']:.2f} ({r['exhaustive_seconds']:.2f}) |"
            )
        print(f"load after: {_load()}")
        return
    table, names = selected(parser, args, JOBS, QUICK)
    print(f"threads {args.threads}; words {BERT_VOCAB}; load before: {_load()}")
    print("| job | scan s | naive s (words timed) | naive / scan | same best word | peak MB scan / naive | target |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        map_name, n, d, where, target = table[name]
        flags = [*common, "--map", map_name, "--n", str(n), "--d", str(d), "--where", where]
        fast = run_worker(__file__, [*flags, "--side", "scan"])
        if "error" in fast:
            print(f"| {name} | error: {fast['error']} | | | | | {target} |")
            continue
        if map_name == "rf":
            floor = 2 * BERT_VOCAB * (n * d) * d
            print(
                f"| {name} | {fast['seconds']:.1f} | not run: dense V is 53 GB | flop floor {floor:.2e} "
                f"({floor / fast['seconds'] / 1e9:.0f} GFLOP/s reached) | - | {fast['peak_mb']:.0f} / - | {target} |"
            )
            continue
        naive = run_worker(__file__, [*flags, "--side", "naive", "--naive-words", str(args.naive_words)])
        if "error" in naive:
            print(f"| {name} | {fast['seconds']:.2f} | error: {naive['error']} | | | | {target} |")
            continue
        projected = naive["seconds"] * BERT_VOCAB / naive["words"] * (fast["positions"] if where == "all" else 1)
        same = "yes" if naive["words"] == BERT_VOCAB and naive["best"] == fast["best"] else "-"
        if where == "one" and naive["words"] < BERT_VOCAB:
            same = "n/a (sample)"
        if not fast.get("exhaustive", True):
            same += ", scan screened"
        note = " projected" if naive["words"] < BERT_VOCAB or where == "all" else ""
        print(
            f"| {name} | {fast['seconds']:.2f} | {projected:.0f} ({naive['words']}{note}) "
            f"| {projected / fast['seconds']:.0f}x | {same} | {fast['peak_mb']:.0f} / {naive['peak_mb']:.0f} "
            f"| {target} |"
        )
    print(f"load after: {_load()}")


if __name__ == "__main__":
    main()
