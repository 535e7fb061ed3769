"""One real-word generalisation simulation beside the continuous simulation it sits beside.

The continuous simulation is one of today's Figure 4 (or 5) points: ``prepare`` at [CLS] (features, first
stage) and the Delta searches of ``search_many`` (``--searches fig4``: both trainings x surrogate and direct,
the default; ``all``: also the penalised loss at 1, 0.1, 0.01). The real-word simulation is ``prepare`` at a
word position (with [CLS] reachable, ``also=(0,)``) and ``scan_words``: every word of the vocabulary, both
trainings, every loss (surrogate, direct, penalised at 1, 0.1, 0.01), the best words and the frontiers
evaluated again in float64 where the scan is float32, the words' rows at the position included (the
vocabulary's centred embeddings, ``EmbeddingLayer.words``, are computed once per encoder, before the clock
starts, as a study computes them once per job). ``--full`` also times ``word_simulation`` (the words and
the continuous searches at [CLS], at the word position and at the best words' radii: the three settings of
one row of the study). Each side runs in its own subprocess (its peak memory is its own), on the same
training set, new sample and weights; the table prints seconds, peak memory and the ratio words /
continuous (target <= 2x at RAF, d = 768, n = 120, N = 1300).

Data: the first N + 1 reviews of the IMDb Parquet file (``--imdb``; default
/work/shared/data/imdb/train.parquet when present) tokenised with BERT-Base's ``vocab.txt`` (``--vocab``)
through a BERT-Base-shaped embedding layer with random weights (BERT's initialisation; the pre-trained
weights are not available here), the candidates every token of that vocabulary but the specials and
``[unused*]`` (``candidate_ids(..., "tokens")``: 29,523 of 30,522); without the files, seeded random tokens
and all 30,522 rows.

    python benchmarks/bench_gen_words.py                      # RAF at d = 768, n = 120, N = 1300
    python benchmarks/bench_gen_words.py --jobs raf-120-1300-768 rf-40-1300-768 --full
    python benchmarks/bench_gen_words.py --repeats 3 --threads 1    # alternating runs on a loaded machine
    python benchmarks/bench_gen_words.py --quick
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _harness import add_worker_flags, run_worker, selected

IMDB = Path("/work/shared/data/imdb/train.parquet")
VOCAB = Path("/work/shared/data/bert-base-uncased/vocab.txt")
BERT_VOCAB, BERT_WIDTH, BERT_POSITIONS = 30_522, 768, 512

# job -> (map, n, N, d, target)
JOBS = {
    "raf-120-1300-768": ("raf", 120, 1300, 768, "words <= 2x continuous"),
    "relu_raf-120-1300-768": ("relu_raf", 120, 1300, 768, "no target (a Figure 4 point)"),
    "rf-40-1300-768": ("rf", 40, 1300, 768, "no target (a Figure 4 point)"),
}
QUICK = {
    "raf-40-300-256": ("raf", 40, 300, 256, "quick"),
    "rf-20-300-128": ("rf", 20, 300, 128, "quick"),
}
SEARCHES = {"fig4": (), "all": (1.0, 0.1, 0.01)}  # the continuous side's penalties beside surrogate and direct


def _layer(width: int):
    """A BERT-shaped embedding layer with BERT's initialisation (random weights), float64."""
    import torch

    from wordsens.data.vocabulary import EmbeddingLayer

    g = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)

    ones, zeros = torch.ones(width, dtype=torch.float64), torch.zeros(width, dtype=torch.float64)
    return EmbeddingLayer(randn(BERT_VOCAB, width), randn(BERT_POSITIONS, width), randn(width), ones, zeros, 1e-12)


def _task(args: argparse.Namespace, layer):
    """The training set, the new sample, its token ids, the candidates' ids and the specials."""
    import numpy as np
    import torch

    from wordsens.data.vocabulary import candidate_ids, review_tokens

    n, N, d = args.n, args.N, args.d
    tokenizer = None
    if args.vocab and Path(args.vocab).exists() and args.imdb and Path(args.imdb).exists():
        import pandas as pd
        from transformers import BertTokenizerFast  # type: ignore[attr-defined]

        tokenizer = BertTokenizerFast(vocab=args.vocab, do_lower_case=True)
        frame = pd.read_parquet(args.imdb, columns=["text", "label"]).sample(N + 1, random_state=args.seed)
        ids = [review_tokens(tokenizer, str(t), n) for t in frame["text"]]
        labels = torch.as_tensor(2.0 * frame["label"].to_numpy() - 1.0)
        words, specials = candidate_ids(tokenizer, "tokens"), list(tokenizer.all_special_ids)
    else:
        rng = np.random.default_rng(args.seed)
        ids = [[101, *rng.integers(1000, BERT_VOCAB, n - 1).tolist()] for _ in range(N + 1)]
        labels = torch.as_tensor(rng.choice([-1.0, 1.0], N + 1))
        words, specials = np.arange(BERT_VOCAB), [0, 100, 101, 102, 103]
    flat = np.asarray(ids).reshape(-1)
    samples = layer.rows(flat, np.tile(np.arange(n), N + 1), d).reshape(N + 1, n, d)
    return samples[:N], labels[:N], samples[N], float(labels[N]), ids[N], words, specials


def worker(args: argparse.Namespace) -> None:
    """One side of one job in its own process: one JSON line."""
    import json

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from wordsens import generalisation as G
    from wordsens.compute.devices import peak_rss_bytes
    from wordsens.data.vocabulary import swap_positions
    from wordsens.generalisation.comparison import word_simulation
    from wordsens.generalisation.words import scan_words, word_losses

    layer = _layer(BERT_WIDTH)
    Xt, yt, X, y, ids, words, specials = _task(args, layer)
    position = swap_positions(ids, specials, count=1, n_min=args.n, seed=args.seed)[0]
    penalties = SEARCHES[args.searches]
    out: dict = {"position": position, "words": 0}
    vocabulary = layer.words(words) if args.side != "continuous" else None  # per encoder: once per job
    started = time.perf_counter()
    if args.side == "continuous":
        setup = G.prepare(args.map, Xt, yt, X, y, seed=args.seed, position=0)
        out["prepare"] = time.perf_counter() - started
        found = G.search_many(setup, word_losses(penalties), seed=args.seed, restarts=16, max_steps=500)
        out["errs"] = [r.err for r in found]
    else:
        setup = G.prepare(args.map, Xt, yt, X, y, seed=args.seed, position=position, also=(0,))
        out["prepare"] = time.perf_counter() - started
        rows = vocabulary.at(position, args.d)  # type: ignore[union-attr]
        exclude = int((torch.as_tensor(words) == ids[position]).nonzero()[0, 0]) if ids[position] in words else None
        if args.side == "words":
            scan = scan_words(setup, rows, exclude=exclude)
        else:
            sim = word_simulation(
                setup, rows, exclude=exclude, seed=args.seed, search={"restarts": 16, "max_steps": 500}
            )
            scan = sim.words
            out["settings"] = sim.seconds
        out["words"], out["rechecked"] = scan.words, scan.rechecked
        out["errs"] = [c.err for c in scan.choices if c.loss in ("surrogate", "direct")]
    out["seconds"] = time.perf_counter() - started
    out["peak_mb"] = peak_rss_bytes() / 1024**2
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--jobs", nargs="*")
    parser.add_argument("--seeds", type=int, default=1, help="simulations per job (default 1)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of each side per simulation, alternating (a loaded machine)"
    )
    parser.add_argument("--searches", choices=sorted(SEARCHES), default="fig4", help="the continuous side's searches")
    parser.add_argument("--full", action="store_true", help="also the three settings side by side (word_simulation)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per worker (0: torch's default)")
    parser.add_argument("--imdb", default=str(IMDB) if IMDB.exists() else "")
    parser.add_argument("--vocab", default=str(VOCAB) if VOCAB.exists() else "")
    add_worker_flags(parser, ("--map", "--side"), ("--n", "--N", "--d", "--seed"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    table, names = selected(parser, args, JOBS, QUICK)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.2f}  threads "
        f"{args.threads or 'default'}  continuous searches: {args.searches}  data: {args.imdb or 'random tokens'}",
        flush=True,
    )
    for name in names:
        run_job(args, name, table[name])


def run_job(args: argparse.Namespace, name: str, job: tuple) -> None:
    """Every side of one job, for each seed ``--repeats`` times, alternating; the ratios."""
    map_name, n, N, d, target = job
    sides = ("continuous", "words", *(("full",) if args.full else ()))
    print(f"\n## {name}: {map_name} n={n} N={N} d={d}  target: {target}")
    head = f"{'seed':>4} {'side':>10} {'seconds':>8} {'prepare':>8} {'peak MB':>8} {'words':>6}"
    print(f"{head}  Err (surrogate, direct)")
    ratios = []
    for seed in (s for s in range(args.seeds) for _ in range(args.repeats)):
        got = {}
        for side in sides:
            flags = ["--map", map_name, "--side", side, "--n", str(n), "--N", str(N), "--d", str(d)]
            flags += ["--seed", str(seed), "--searches", args.searches, "--threads", str(args.threads)]
            flags += ["--imdb", args.imdb, "--vocab", args.vocab]
            r = run_worker(os.path.abspath(__file__), flags)
            if "error" in r:
                print(f"{seed:>4} {side:>10}  error: {r['error']}", flush=True)
                continue
            got[side] = r
            errs = ", ".join(f"{e:.3f}" for e in r["errs"])
            extra = f"  settings {r['settings']}" if "settings" in r else ""
            print(
                f"{seed:>4} {side:>10} {r['seconds']:>8.2f} {r['prepare']:>8.2f} {r['peak_mb']:>8.0f} "
                f"{r['words']:>6}  {errs}{extra}",
                flush=True,
            )
        if "continuous" in got and "words" in got:
            c, w = got["continuous"], got["words"]
            ratios.append(w["seconds"] / c["seconds"])
            line = (
                f"ratio words / continuous: time {ratios[-1]:.2f}x, peak memory {w['peak_mb'] / c['peak_mb']:.2f}x "
                f"(scan alone {w['seconds'] - w['prepare']:.2f} s, the continuous searches "
                f"{c['seconds'] - c['prepare']:.2f} s)"
            )
            if "full" in got:
                line += f"; the three settings and the words / continuous: {got['full']['seconds'] / c['seconds']:.2f}x"
            print(line, flush=True)
    if len(ratios) > 1:
        ratios.sort()
        print(
            f"ratio words / continuous over {len(ratios)} pairs: median {ratios[len(ratios) // 2]:.2f}x, "
            f"min {ratios[0]:.2f}x, max {ratios[-1]:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
