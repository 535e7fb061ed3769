#!/usr/bin/env bash
# Wheels that bring Snakemake to a GPU machine whose image has torch and transformers but not
# Snakemake (Python 3.12, manylinux x86_64, no network there). Run here, where PyPI is reachable:
#   bash benchmarks/gpu_wheels.sh [DEST]            # default DEST: .whl (git-ignored)
# then carry DEST to the GPU machine and install there without an index:
#   python3 -m pip install --no-index --no-deps --target /tmp/site DEST/*.whl
#   PYTHONPATH=/tmp/site:$PWD/src python3 -m snakemake --cores all --configfile config/demo.yaml
# The versions are those that ran the whole demo there; newer ones may need more packages.
set -euo pipefail
dest=${1:-.whl}
mkdir -p "$dest"
wheels=(
    annotated_types==0.8.0 argparse_dataclass==2.0.0 conda_inject==1.3.2 configargparse==1.9.0
    docutils==0.22.4 dpath==2.2.0 fastjsonschema==2.22.3 gitdb==4.0.12 gitpython==3.2.1 greenlet==3.5.6
    humanfriendly==10.0 immutables==0.21 jsonschema==4.26.0 jsonschema_specifications==2025.9.1
    jupyter_core==5.9.1 nbformat==5.11.1 platformdirs==4.14.8 pulp==3.3.2 pydantic==2.14.4
    pydantic_core==2.50.5 referencing==0.37.0 rpds_py==2026.9.1 smart_open==7.7.1 smmap==5.0.3
    snakemake==9.27.1 snakemake_interface_common==1.23.0 snakemake_interface_executor_plugins==9.4.0
    snakemake_interface_logger_plugins==2.1.0 snakemake_interface_report_plugins==1.3.0
    snakemake_interface_scheduler_plugins==2.0.2 snakemake_interface_storage_plugins==4.4.1
    sqlalchemy==2.0.58 sqlmodel==0.0.37 tenacity==9.2.1 throttler==1.2.3 traitlets==5.16.1
    typing_inspection==0.4.5 yte==1.9.4 jsonschema==4.26.0 pytest==9.2.0 pluggy==1.7.0
    iniconfig==2.3.1 pytest_xdist==3.8.0 execnet==2.1.2
)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$dest" "${wheels[@]}"
# connection_pool publishes no wheel: build one (pure Python)
python3 -m pip wheel --quiet --no-deps -w "$dest" connection_pool==0.0.3
ls "$dest" | wc -l
