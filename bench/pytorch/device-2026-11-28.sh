#!/bin/bash
# The one device call of 2026-11-28 (tests/data/h200-pytorch/README.md, "Host floor, row-wise fp8 and
# memory-bound rates"): run from the repository root on the lent machine with OUT set. Each part in its own
# process under its own limit, so that one failing leaves the others' files.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
{ date -u; nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total,driver_version --format=csv; lscpu; } > $R/machine.txt 2>&1
echo "== host_floor" >> $R/run.log
OUT=$R BUDGET=160 timeout 200 python3 bench/pytorch/host_floor.py >> $R/run.log 2>&1
echo "== decoder rowwise" >> $R/run.log
OUT=$R BUDGET=150 LIST=rowwise timeout 190 python3 bench/pytorch/decoder_steps.py >> $R/run.log 2>&1
echo "== elementwise" >> $R/run.log
OUT=$R timeout 80 python3 bench/pytorch/elementwise_rate.py >> $R/run.log 2>&1
echo "== end $(date -u)" >> $R/run.log
grep -h "ms\"\|error" $R/host.jsonl | cut -c1-300
grep -h "error\|rowwise" $R/decoder.jsonl | cut -c1-300
