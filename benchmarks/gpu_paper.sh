#!/usr/bin/env bash
# The paper on one GPU node in one sitting: the default config.yaml (every figure, DRF at d = 768,
# the studies beyond the paper) end to end through profiles/gpu-node, timed per rule with its
# critical path and the device of every job, after the plan of the same run. The GPU machine has
# torch and transformers but no Snakemake and no network, and no BERT-Base weights are available:
# a BERT-Base with random weights is built there from its config.json and vocab.txt (the same
# architecture, so the same work per review; results computed with it say so), IMDb read from a
# local Parquet copy.
#
# Here, where PyPI is reachable (once):
#   bash benchmarks/gpu_wheels.sh                                   # fills .whl/ (Snakemake and its deps)
#   mkdir -p .gpu-data && cp -r ../shared/data/bert-base-uncased .gpu-data/ \
#       && mkdir -p .gpu-data/imdb && cp ../shared/data/imdb/train.parquet .gpu-data/imdb/
# There (device tool: carry [".whl", ".gpu-data"]; both are git-ignored), from the repository root:
#   bash benchmarks/gpu_paper.sh [OUT]
# Everything printed is also written under OUT (default $OUT, else /tmp/gpu-paper): machine.txt, the
# precision test of the DRF ascent on the GPU, plan.txt (wordsens plan on this node: jobs, hours,
# critical path, when the run ends), pipeline.txt (bench_pipeline: total wall time, per-rule table,
# devices, critical path) and the run's claims table (claims.csv), to set beside a laptop run's.
set -uo pipefail
out=${1:-${OUT:-/tmp/gpu-paper}}
data=${GPU_DATA:-.gpu-data}
work=${GPU_WORK:-/tmp/paper-gpu}
mkdir -p "$out"
for need in "$data/bert-base-uncased/config.json" "$data/bert-base-uncased/vocab.txt" "$data/imdb/train.parquet"; do
    [ -f "$need" ] || { echo "missing $need: copy ../shared/data there and carry it (see the header)" >&2; exit 2; }
done
python3 -m pip install --quiet --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site:$PWD/src HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export WORDSENS_CALIBRATION=none
{
    nvidia-smi --query-gpu=name,memory.total --format=csv
    nproc
    python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())"
} 2>&1 | tee "$out/machine.txt"

# BERT-Base with random weights, built from its config and vocabulary (BertTokenizerFast(vocab=...):
# transformers 5 ignores vocab_file= and would make every word [UNK])
model=/tmp/bert-base-random
python3 - "$data/bert-base-uncased" "$model" <<'PY' 2>&1 | tee "$out/model.txt"
import sys
import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

src, dst = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
BertModel(BertConfig.from_json_file(f"{src}/config.json")).save_pretrained(dst)
tok = BertTokenizerFast(vocab=f"{src}/vocab.txt", do_lower_case=True)
tok.save_pretrained(dst)
ids = tok("a wonderful film")["input_ids"]
assert tok.unk_token_id not in ids, ids
print(f"random-weight BERT-Base in {dst}; 'a wonderful film' -> {ids}")
PY

cat > /tmp/paper-gpu.yaml <<YAML
data: {source: parquet, path: $PWD/$data/imdb/train.parquet}
model: {name: $model}
YAML
budget=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
budget=${budget:-80000}

# the DRF ascent in reduced precision against float32, on the GPU
python3 -m pytest -q -p no:cacheprovider -n 0 tests/unit/search/test_drf_precision.py tests/unit/search/test_drf.py 2>&1 | tail -15 \
    | tee "$out/tests.txt"
# the plan of the run on this node, its critical path included, before anything runs
# (--probe scales the built-in time model to this machine's speed; --gpu: the node's GPU, its memory in GB)
python3 -m wordsens.cli plan --configfile /tmp/paper-gpu.yaml --cores "$(nproc)" --gpu $((budget / 1024)) --probe \
    2>&1 | tee "$out/plan.txt"
# the run: every core, the GPU shared within its memory, every WS, generalisation, embedding and probe
# job on cuda (device: auto)
python3 benchmarks/bench_pipeline.py --configfile /tmp/paper-gpu.yaml --cores all --workdir "$work" -- \
    --profile profiles/gpu-node --resources "gpu_mem_mb=$budget" 2>&1 | tee "$out/pipeline.txt"
cp "$work"/results/paper/tables/claims.csv "$out/claims.csv" 2>/dev/null || true
