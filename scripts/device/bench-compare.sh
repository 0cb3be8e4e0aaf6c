#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: builds nccl-tests (from
# vendor-src/nccl-tests, a git archive of NVIDIA/nccl-tests), then runs every
# collective with nccl-tests and with `gdrcheck bench nccl`, same sizes and
# iterations, one after the other (order alternating), and compares them.
# Usage: scripts/device/bench-compare.sh [NGPUS] [MAXBYTES]
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/cmp"
G=${1:-1}
E=${2:-1G}
B=${GDRCHECK:-bin/gdrcheck}
export NCCL_NVLS_ENABLE=0
ARGS="-b 8 -e $E -f 2 -w 5 -n 20 -c 1 -g $G"
if [ ! -x vendor-src/nccl-tests/build/all_reduce_perf ]; then
  (cd vendor-src/nccl-tests && make -j"$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=/usr > "$OUT/nccl-tests-build.log" 2>&1) || { echo "nccl-tests build failed"; tail "$OUT/nccl-tests-build.log"; exit 2; }
fi
i=0
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
  ref() { vendor-src/nccl-tests/build/${c}_perf $ARGS > "$OUT/cmp/$c.nccltests.txt" 2>&1; }
  gdr() { $B bench nccl --op $c $ARGS --no-judge --out "$OUT/cmp/$c.gdrcheck" > "$OUT/cmp/$c.gdrcheck.txt" 2>&1; }
  s=$(date +%s)
  if [ $((i % 2)) -eq 0 ]; then ref; gdr; else gdr; ref; fi
  echo "$c: $(( $(date +%s) - s )) s"
  i=$((i + 1))
done
python3 scripts/device/compare.py "$OUT/cmp" | tee "$OUT/compare.txt"
