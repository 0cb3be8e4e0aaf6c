#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: builds nccl-tests (from
# vendor-src/nccl-tests, a git archive of NVIDIA/nccl-tests), then runs every
# collective with nccl-tests and with `gdrcheck bench nccl`, same sizes and
# iterations, twice each in the order nccl-tests, gdrcheck, gdrcheck,
# nccl-tests with a pause between runs (a process that has just exited
# slows the next one's first sizes), and compares the better run of each.
# Usage: scripts/device/bench-compare.sh [NGPUS] [MAXBYTES] [FACTOR]
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/cmp"
G=${1:-1}
E=${2:-1G}
B=${GDRCHECK:-bin/gdrcheck}
export NCCL_NVLS_ENABLE=0
F=${3:-2}
ARGS="-b 8 -e $E -f $F -w 5 -n 20 -c 1 -g $G"
scripts/device/build-nccl-tests.sh || exit 2
for c in ${COLLS:-all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv}; do
  # nccl-tests runs under the NCCL environment gdrcheck sets for itself
  # (debug log and dumps to files), so both see the same NCCL.
  ref() { NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV NCCL_DEBUG_FILE="$OUT/cmp/$c.nccltests.$1.nccl-debug.%h.%p.log" NCCL_TOPO_DUMP_FILE="$OUT/cmp/$c.nccltests.$1.topo.xml" NCCL_GRAPH_DUMP_FILE="$OUT/cmp/$c.nccltests.$1.graph.xml" vendor-src/nccl-tests/build/${c}_perf $ARGS > "$OUT/cmp/$c.nccltests.$1.txt" 2>&1; sleep 2; }
  gdr() { $B bench nccl --op $c $ARGS --no-judge --out "$OUT/cmp/$c.gdrcheck.$1" > "$OUT/cmp/$c.gdrcheck.$1.txt" 2>&1; sleep 2; }
  s=$(date +%s)
  ref 1; gdr 1; gdr 2; ref 2; ref 3; gdr 3
  echo "$c: $(( $(date +%s) - s )) s"
done
python3 scripts/device/compare.py "$OUT/cmp" | tee "$OUT/compare.txt"
exit "${PIPESTATUS[0]}"
