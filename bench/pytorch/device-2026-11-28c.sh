#!/bin/bash
# The third device call of 2026-11-28: FSDP2's ops and host time per step (torchtitan's wrapping, world size 1),
# BERT-large SQuAD at small batches eager and graphed, GPT-2 at larger micro-batches.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
OUT=$R BUDGET=170 LIST=call3 timeout 200 python3 bench/pytorch/host_floor.py > $R/run.log 2>&1
grep -h "ms\"\|error" $R/host.jsonl | cut -c1-420
