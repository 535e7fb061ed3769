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
#   optionally a CPU run's claims table of the same configuration: cp RESULTS/tables/claims.csv .gpu-data/claims-cpu.csv
# There (device tool: carry [".whl", ".gpu-data"]; both are git-ignored), from the repository root:
#   bash benchmarks/gpu_paper.sh [OUT]
#   GPU_PAPER_TESTS=0 GPU_PAPER_LIMIT=540 bash benchmarks/gpu_paper.sh   # no precision tests; stop the run at 9 min
# Everything printed is also written under OUT (default $OUT, else /tmp/gpu-paper): machine.txt, the
# precision test of the DRF ascent on the GPU (tests.txt), plan.txt (wordsens plan on this node: jobs,
# their devices, hours, when the run ends, its critical path), the run itself (run.txt: Snakemake's
# output; stopped after GPU_PAPER_LIMIT seconds, default 900), pipeline.txt (bench_pipeline on its log:
# total wall time, per-rule table with each job's device, critical path), fit.txt (benchmarks/gpu_fit.py
# on its log: the GPU model refitted, the replay), summary.txt (measured wall time against the plan's,
# steps done) and the run's claims table (claims.csv) beside the CPU run's (claims-diff.txt).
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
if [ "${GPU_PAPER_TESTS:-1}" != 0 ]; then
    python3 -m pytest -q -p no:cacheprovider -n 0 tests/unit/search/test_drf_precision.py tests/unit/search/test_drf.py \
        2>&1 | tail -15 | tee "$out/tests.txt"
fi
# the plan of the run on this node, before anything runs: each job's device (CPU or the GPU shared by
# 2 jobs: wordsens.compute.placement), when the run ends and its critical path (--probe scales the
# built-in time model to this machine's speed; --gpu: the node's GPU, its memory in GB)
python3 -m wordsens.cli plan --configfile /tmp/paper-gpu.yaml --cores "$(nproc)" --gpu $((budget / 1024)) --probe \
    2>&1 | tee "$out/plan.txt"
# the run: every core, the GPU shared by at most 2 jobs within its memory (the command line replaces the
# profile's resources: both named), jobs started by priority (the profile's greedy scheduler); stopped
# with SIGINT (Snakemake ends its jobs and keeps its log) after GPU_PAPER_LIMIT seconds
rm -rf "$work" && mkdir -p "$work"
python3 -c "import sys; sys.path.insert(0, 'tests'); from workflow_utils import copy_workflow; copy_workflow(__import__('pathlib').Path(sys.argv[1]))" "$work"
started=$(date +%s)
(cd "$work" && timeout -s INT -k 60 "${GPU_PAPER_LIMIT:-900}" python3 -m snakemake --cores all \
    --configfile /tmp/paper-gpu.yaml --profile profiles/gpu-node --resources "gpu_mem_mb=$budget" gpu=2) \
    >"$out/run.txt" 2>&1
status=$?
wall=$(($(date +%s) - started))
log=$(ls -t "$work"/.snakemake/log/*.snakemake.log 2>/dev/null | head -1)
python3 benchmarks/bench_pipeline.py --log "$log" --configfile /tmp/paper-gpu.yaml 2>&1 | tee "$out/pipeline.txt"
cp "$log" "$out/snakemake.log"
python3 benchmarks/gpu_fit.py --log "$log" --write "$out/run.csv" --stop "$wall" --cores "$(nproc)" --gpu-mb "$budget" \
    --gpu-gb $((budget / 1024)) \
    2>&1 | tee "$out/fit.txt"
{
    echo "snakemake exited $status after $wall s (GPU_PAPER_LIMIT ${GPU_PAPER_LIMIT:-900} s; 124: stopped there)"
    grep -E "steps \([0-9]+%\) done" "$out/run.txt" | tail -1
    planned=$(grep -oE "expected wall time [^:]*: [0-9]+:[0-9]+:[0-9]+" "$out/plan.txt" | grep -oE "[0-9]+:[0-9]+:[0-9]+$")
    python3 - "$planned" "$wall" "$status" <<'PY'
import sys

planned, wall, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
h, m, s = (int(x) for x in planned.split(":"))
plan = 3600 * h + 60 * m + s
ended = "ended" if status == 0 else "was stopped"
print(f"the plan said {plan} s; the run {ended} after {wall} s: the plan's error {(plan - wall) / wall:+.0%}"
      + ("" if status == 0 else " (stopped there: the run's own time is longer)"))
print(f"target 540 s (9 minutes): {'met' if status == 0 and wall <= 540 else 'not met'}")
PY
} 2>&1 | tee "$out/summary.txt"
cp "$work"/results/paper/tables/claims.csv "$out/claims.csv" 2>/dev/null || echo "no claims table: the run did not reach it" | tee -a "$out/summary.txt"
if [ -f "$out/claims.csv" ] && [ -f "$data/claims-cpu.csv" ]; then
    python3 benchmarks/claims_diff.py "$out/claims.csv" "$data/claims-cpu.csv" 2>&1 | tee "$out/claims-diff.txt"
else
    echo "claims beside a CPU run's: pending (no $data/claims-cpu.csv carried, or no claims table here)" | tee -a "$out/summary.txt"
fi
