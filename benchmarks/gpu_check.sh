#!/usr/bin/env bash
# The checks of one GPU-machine session, in one command (the machine has torch and transformers but
# no Snakemake and no network): install the wheels of benchmarks/gpu_wheels.sh, run the tests that
# have CUDA paths on the GPU, then the whole demo pipeline on every core (benchmarks/bench_pipeline.py),
# as configured and through profiles/gpu-node with every job on the shared GPU.
#   bash benchmarks/gpu_wheels.sh                 # here, where PyPI is reachable: fills .whl/
#   bash benchmarks/gpu_check.sh [OUT]            # there, from the repository root, with .whl/ carried
# Everything printed is also written under OUT (default $OUT, else /tmp/gpu-check).
set -uo pipefail
out=${1:-${OUT:-/tmp/gpu-check}}
mkdir -p "$out"
python3 -m pip install --quiet --no-index --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=/tmp/site:$PWD/src HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export WORDSENS_CALIBRATION=none
{
    nvidia-smi --query-gpu=name,memory.total --format=csv
    nproc
    python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())"
} 2>&1 | tee "$out/machine.txt"
# the tests with CUDA paths (and the rest of their files), on the GPU
python3 -m pytest -q -p no:cacheprovider -n 0 tests/unit/search/test_drf.py tests/unit/maps/test_trained.py 2>&1 \
    | tail -25 | tee "$out/tests.txt"
# the whole demo, every core, timed per rule with its critical path: as configured (WS on the CPU) ...
python3 benchmarks/bench_pipeline.py --cores all --workdir /tmp/pipeline-demo 2>&1 | tee "$out/pipeline_demo.txt"
# ... and through the single-GPU-node profile with every WS and generalisation job on the shared GPU
# (device auto; gpu_mem_mb set to the GPU's memory): the devices column shows where each rule ran
budget=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
python3 benchmarks/bench_pipeline.py --cores all --workdir /tmp/pipeline-demo-gpu -- --profile profiles/gpu-node \
    --resources "gpu_mem_mb=${budget:-80000}" --config "ws={device: auto}" "gen={device: auto}" 2>&1 \
    | tee "$out/pipeline_demo_gpu.txt"
