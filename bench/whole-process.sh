#!/bin/bash
# Whole-process timings of the dlscale command, as a user feels them (issue 17): start-up, the NCCL
# channel search on one node, predict/simulate on DGX-2, collectives at 1,024 GPUs, simulate on 16,384
# GPUs (dgx-h100-ndr composed to 2,048 nodes), every shipped cluster's default prediction, and /bin/true
# (a bare process start on the same machine, to compare start-up with). Each command
# is timed by hyperfine (Debian's `hyperfine`, no shell, warm-up runs first) and the MEDIAN is printed,
# since the machine may be shared.
#
#   bench/whole-process.sh [DLSCALE_BINARY] [RUNS]      (defaults: build/bin/dlscale, 15 runs)
#
# Prints a Markdown table: command, median, min, max wall time, and the mean CPU time (user + system,
# which a loaded machine inflates far less than wall time), in ms, and each command's median and minimum
# over /bin/true's of the same run (issue 35's start-up target is a ratio: compare ratios within a run,
# since this machine's timings drift from run to run). Needs hyperfine and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin/dlscale}
runs=${2:-15}
command -v hyperfine >/dev/null || { echo "whole-process.sh: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 2; }
[ -x "$bin" ] || { echo "whole-process.sh: no binary $bin (build first: cmake --build --preset dev)" >&2; exit 2; }
export DLSCALE_DATA_DIR=${DLSCALE_DATA_DIR:-$PWD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmds=(
  "--version"
  "predict"
  "predict --cluster dgx2 --model resnet50 --framework pytorch-ddp --gpus 16"
  "simulate --cluster dgx2 --model resnet50 --framework pytorch-ddp --gpus 16"
  "collective --cluster dgx2 --op allreduce --gpus 8 --bytes 1GiB"
  "collective --cluster dgx2 --op allreduce --gpus 16 --bytes 1GiB"
  "collective --cluster dgx-a100-hdr --op allreduce --gpus 8 --bytes 1GiB"
  "collective --cluster dgx-h100-ndr --op allreduce --gpus 8 --bytes 1GiB"
  "collective --cluster dgx1v --op allreduce --gpus 8 --bytes 1GiB"
  "collective --cluster dgx-a100-hdr --op allreduce --gpus 1024 --bytes 1GiB"
  "collective --cluster dgx-h100-ndr --op allreduce --gpus 1024 --bytes 1GiB"
  "simulate --cluster dgx-h100-ndr --nodes 2048 --model resnet50 --framework pytorch-ddp --gpus 16384"
)
# every shipped cluster, ResNet-50 on its whole size (the default 1,2,4,8,16 does not fit the small ones)
for f in topologies/*.yaml; do
  c=$(basename "$f" .yaml)
  gpn=$(awk '/^gpus_per_node:/ {print $2; exit}' "$f")
  [ -n "$gpn" ] || continue  # not a cluster (the GPU catalogue, the kernel model's parameters)
  nodes=$(awk '/^nodes:/ {print $2; exit}' "$f")
  cmds+=("predict --cluster $c --gpus 1,$((gpn * ${nodes:-1}))")
done

echo "| command | median (ms) | min | max | CPU (ms) | × /bin/true (median / min) |"
echo "|---|---|---|---|---|---|"
# A bare process start on the same machine first (issue 35: a one-node question within twice it).
row() {  # row LABEL COMMAND...
  local label=$1 json=$tmp/$RANDOM$RANDOM.json
  shift
  hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$json" "$*" >/dev/null 2>&1 ||
    { echo "| \`$label\` | failed | | | | |"; return; }
  python3 - "$json" "$label" "$tmp/true.json" <<'PY'
import json, os, statistics, sys
res = json.load(open(sys.argv[1]))["results"][0]
ms = [t * 1000 for t in res["times"]]
cpu = (res["user"] + res["system"]) * 1000
if sys.argv[2] == "/bin/true":  # the first row: what the others are compared with
    json.dump([statistics.median(ms), min(ms)], open(sys.argv[3], "w"))
ratio = ""
if os.path.exists(sys.argv[3]):
    base = json.load(open(sys.argv[3]))
    ratio = f"{statistics.median(ms) / base[0]:.2f} / {min(ms) / base[1]:.2f}"
print(f"| `{sys.argv[2]}` | {statistics.median(ms):.2f} | {min(ms):.2f} | {max(ms):.2f} | {cpu:.2f} | {ratio} |")
PY
}
row /bin/true /bin/true
for c in "${cmds[@]}"; do row "dlscale $c" "$bin $c"; done
