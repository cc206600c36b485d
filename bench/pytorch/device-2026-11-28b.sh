#!/bin/bash
# The second device call of 2026-11-28 (tests/data/h200-pytorch/README.md, "Host floor, row-wise fp8 and
# memory-bound rates"): DeepSpeedExamples' GPT-2 shapes eager and graphed, FSDP2's small-batch steps.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total,driver_version --format=csv; python3 -c "import transformers; print('transformers', transformers.__version__)"; } > $R/machine.txt 2>&1
echo "== host_floor gpt2" >> $R/run.log
OUT=$R BUDGET=120 LIST=gpt2 timeout 160 python3 bench/pytorch/host_floor.py >> $R/run.log 2>&1
echo "== decoder hostfsdp" >> $R/run.log
OUT=$R BUDGET=150 LIST=hostfsdp timeout 190 python3 bench/pytorch/decoder_steps.py >> $R/run.log 2>&1
echo "== end $(date -u)" >> $R/run.log
grep -h "ms\"\|error" $R/host.jsonl | cut -c1-400
grep -h "ms_per\|error" $R/decoder.jsonl | cut -c1-400
