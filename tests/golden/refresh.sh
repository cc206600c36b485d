#!/usr/bin/env bash
# Regenerates the golden outputs on purpose. Run from the repository root after building:
#   tests/golden/refresh.sh [build-dir]      (default: build)
# Review the diff before committing: a golden file changes only when the model is meant to change.
set -euo pipefail
build=${1:-build}
export DLSCALE_DATA_DIR=$PWD
"$build/bin/dlscale" predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 > tests/golden/predict-worked-example.txt
"$build/bin/dlscale" reproduce shi-chu-2018 --experiment table5-single-gpu > tests/golden/reproduce-table5.txt
"$build/bin/dlscale" sweep --spec tests/data/plan/sweep-small.yaml > tests/golden/sweep-small.csv
"$build/bin/dlscale" predict --profile worked-example-cntk-alexnet --gpus 1,2,4,8,16 --format json > tests/golden/predict-worked-example.json
"$build/bin/dlscale" sweep --spec tests/data/plan/sweep-small.yaml --format jsonl > tests/golden/sweep-small.jsonl
"$build/bin/dlscale" simulate --profile worked-example-cntk-alexnet --gpus 1,4 --iterations 2 --format json \
  --trace tests/golden/simulate-worked-example-trace.json > tests/golden/simulate-worked-example.json
"$build/bin/dlscale" explain --cluster dgx1v --model resnet50 --framework pytorch-ddp --precision fp16 --batch 64 --gpus 32 --target 0.99 > tests/golden/explain-resnet50-dgx1v.txt
"$build/bin/dlscale" explain --cluster shi-chu-p40 --model alexnet --framework cntk --batch 1024 --gpus 16 --target 80% > tests/golden/explain-alexnet-cntk.txt
"$build/bin/dlscale" explain --cluster dgx1v --model resnet50 --framework pytorch-ddp --precision fp16 --batch 64 --gpus 32 --target 0.99 --format json > tests/golden/explain-resnet50-dgx1v.json
"$build/bin/dlscale" plan --parallel --cluster dgx-h100-ndr --nodes 1 --model llama3-8b --precision bf16 --frameworks megatron-core \
  --gpus 8 --top 3 --tp 1,2 --pp 1,2 --cp 1,2 --micro-batch 1,2 --recompute selective,full --zero 1 --format json > tests/golden/plan-parallel-llama3-8b.json
"$build/bin/dlscale" topo show dgx1v --format json > tests/golden/topo-show-dgx1v.json
"$build/bin/dlscale" collective --cluster dgx2 --gpus 12 --gpus-per-thread 12 --sweep 8B:1GiB --format json > tests/golden/collective-dgx2-g12.json
echo "refreshed tests/golden/*; review with: git diff tests/golden"
python3 tests/golden/refresh_readme.py "$build"
# The figures the README and docs/planning.md show: the report's first plot, and reproduce's DGX-2 figures.
tmp=$(mktemp -d)
"$build/bin/dlscale" report --cluster shi-chu-p40 --model alexnet --framework cntk --batch 1024 --gpus 1,2,4,8,16 -o "$tmp/r.html"
python3 - "$tmp/r.html" docs/alexnet-cntk-p40-throughput.svg <<'PY'
import sys
html = open(sys.argv[1]).read()
start = html.index("<svg")
open(sys.argv[2], "w").write(html[start:html.index("</svg>", start) + len("</svg>")] + "\n")
PY
"$build/bin/dlscale" reproduce dgx2-comparison --experiment high-throughput-models --plots "$tmp/plots" > /dev/null
cp "$tmp"/plots/dgx2-comparison-high-throughput-models-repro-*.svg docs/
rm -rf "$tmp"
echo "refreshed docs/*.svg figures"
