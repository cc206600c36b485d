#!/usr/bin/env bash
# Regenerates the golden outputs on purpose. Run from the repository root after building:
#   tests/golden/refresh.sh [build-dir]      (default: build)
# Review the diff before committing: a golden file changes only when the model is meant to change.
set -euo pipefail
build=${1:-build}
export DLSCALE_DATA_DIR=$PWD
"$build/bin/dlscale" predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 > tests/golden/predict-worked-example.txt
echo "refreshed tests/golden/*; review with: git diff tests/golden"
