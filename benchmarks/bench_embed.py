"""Embedding benchmark: ``embed.hidden_states`` (only the layers needed run) against the full
forward pass of every encoder layer (the behaviour before), side by side.

Both methods embed the same texts with the same randomly initialised BERT-Base architecture
(12 layers, width 768, 12 heads; built locally, no network) at ``max_length`` 256, in float32 on
the CPU, each in its own subprocess. Printed: reviews per second, peak memory, the ratio, and
whether both returned the same hidden states.

    python benchmarks/bench_embed.py                    # layers 0 and 4, 64 texts
    python benchmarks/bench_embed.py --layers 0 --texts 128
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _harness import add_worker_flags, run_worker


def worker(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    from wordsens.compute.devices import peak_rss_bytes
    from wordsens.data import embed, pretrained

    torch.set_num_threads(os.cpu_count() or 1)
    texts = json.loads(Path(args.texts_file).read_text())
    tokenizer, model = pretrained.load_encoder(args.model, "cpu")
    started = time.perf_counter()
    if args.method == "ours":
        hidden, _ = embed.hidden_states(
            tokenizer,
            model,
            texts,
            layer=args.layer,
            max_length=args.max_length,
            batch_size=16,
            dtype=np.float32,
            progress=False,
        )
    else:  # every layer runs, the requested one is kept
        parts = []
        with torch.no_grad():
            for start in range(0, len(texts), 16):
                batch = embed.encode(tokenizer, texts[start : start + 16], args.max_length)
                parts.append(model(**batch, output_hidden_states=True).hidden_states[args.layer].numpy())
        hidden = np.concatenate(parts)
    seconds = time.perf_counter() - started
    np.save(args.out, hidden)
    print(json.dumps({"seconds": seconds, "rate": len(texts) / seconds, "peak_mb": peak_rss_bytes() / 1024**2}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, nargs="*", default=[0, 4], help="encoder layers to extract")
    parser.add_argument("--texts", type=int, default=64, help="number of texts (reviews)")
    add_worker_flags(parser, ("--method", "--model", "--texts-file", "--out"), ("--layer", "--max-length"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    import numpy as np

    from wordsens.data.demo import make_corpus, make_tiny_bert

    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_bert(Path(tmp) / "bert-base", hidden=768, layers=12, heads=12, initializer_range=0.02)
        corpus = make_corpus(Path(tmp) / "corpus", per_label=args.texts // 2 + 1, min_words=180, max_words=260)
        texts = [p.read_text() for p in sorted(corpus.rglob("*.txt"))][: args.texts]
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        print(
            f"# {time.strftime('%Y-%m-%d %H:%M')}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.1f}  "
            f"BERT-Base architecture (random), {len(texts)} texts, max_length 256, float32, CPU"
        )
        print(f"{'layer':>5} {'method':>6} {'reviews/s':>10} {'seconds':>8} {'peak MB':>8}")
        for layer in args.layers:
            rows = {}
            for method in ("full", "ours"):
                out = str(Path(tmp) / f"{method}{layer}.npy")
                rows[method] = r = run_worker(
                    os.path.abspath(__file__),
                    [
                        "--method",
                        method,
                        "--model",
                        str(model),
                        "--texts-file",
                        str(texts_file),
                        "--out",
                        out,
                        "--layer",
                        str(layer),
                        "--max-length",
                        "256",
                    ],
                )
                if "error" in r:
                    print(f"{layer:>5} {method:>6}  error: {r['error']}")
                    continue
                print(
                    f"{layer:>5} {method:>6} {r['rate']:>10.1f} {r['seconds']:>8.2f} {r['peak_mb']:>8.0f}", flush=True
                )
            if all("error" not in r for r in rows.values()):
                same = np.allclose(
                    np.load(Path(tmp) / f"full{layer}.npy"), np.load(Path(tmp) / f"ours{layer}.npy"), atol=1e-5
                )
                print(
                    f"layer {layer}: speed-up ours/full = {rows['full']['seconds'] / rows['ours']['seconds']:.1f}x, "
                    f"same hidden states: {same}"
                )


if __name__ == "__main__":
    main()
