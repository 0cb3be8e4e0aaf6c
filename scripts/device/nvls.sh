#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with a prebuilt
# bin/gdrcheck: the NVLS multicast probe (bench nvls, issue 29 item 2).
# Prints each command, its exit status and its verdict lines; the full
# outputs go under $OUT/nvls.
#  1. bench nvls as a node would run it (skipped without NVSwitch);
#  2. bench nvls --force: the driver's CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
#     and, where it is 1, every create/add/bind call with its CUresult;
#  3. the same as JSON (results.json);
#  4. on two GPUs or more: an NCCL all_reduce with NVLS allowed, and
#     nccl.nvls read from its logs (the model judges the all_reduce).
# Usage: scripts/device/nvls.sh   (GDRCHECK=path of the binary, OUT=folder)
set -u
OUT=${OUT:-out}/nvls
B=${GDRCHECK:-bin/gdrcheck}
mkdir -p "$OUT"
step() { # name, command... (FULL=1: the whole output, not only the verdict lines)
  local name=$1; shift
  echo "== $name"
  echo "\$ $*"
  "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "exit status: $rc"
  if [ "${FULL:-0}" = 1 ]; then cat "$OUT/$name.txt"; return; fi
  grep -E '^(PASS|WARN|FAIL|SKIP|UNKNOWN|ERROR)  |remedy:|cuDeviceGetAttribute|^NVSwitches:|^CUDA driver:|not run' "$OUT/$name.txt" || tail -5 "$OUT/$name.txt"
}
echo "== context"
nvidia-smi -L 2>&1 | head -16
echo "fabric manager: $(systemctl is-active nvidia-fabricmanager 2>&1)"
nvidia-smi -q 2>/dev/null | grep -A3 -E '^\s+Fabric$' | head -8
step plain "$B" bench nvls --out "$OUT/plain"
FULL=1 step forced "$B" bench nvls --force --out "$OUT/forced"
step forced-json "$B" bench nvls --force --format json --out "$OUT/forced-json"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${NGPU:-0}" -ge 2 ]; then
  step nccl-nvls "$B" bench nccl --op all_reduce -b 1G -e 8G -f 2 -w 5 -n 20 --out "$OUT/nccl"
  step nccl-nvls-logs "$B" analyze "$OUT"/nccl/nccl-debug.*
  grep -E 'nccl.nvls' "$OUT/nccl-nvls-logs.txt"
else
  echo "== nccl-nvls: skipped, $NGPU GPU(s): NCCL builds no NVLS channel on one GPU"
fi
