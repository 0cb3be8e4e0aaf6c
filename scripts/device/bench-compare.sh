#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: builds nccl-tests (from
# vendor-src/nccl-tests, a git archive of NVIDIA/nccl-tests), then runs every
# collective with nccl-tests and with `gdrcheck bench nccl`, same sizes and
# iterations, ROUNDS times each, alternating which goes first (nccl-tests,
# gdrcheck | gdrcheck, nccl-tests | ...) with a pause between runs (a process
# that has just exited slows the next one's first sizes), and compares the
# best run of each.
# Usage: scripts/device/bench-compare.sh [NGPUS] [MAXBYTES] [FACTOR]
# (ROUNDS=3 runs of each tool; COLLS= a subset of the collectives; CPUS=4-7
# runs both tools on the same CPUs, under taskset: on a VM a process's speed
# at small sizes depends on where it lands; REF_GDRCHECK=bin/gdrcheck-old
# makes that gdrcheck binary the reference instead of nccl-tests, to show
# that a change left the numbers where they were)
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/cmp"
G=${1:-1}
E=${2:-1G}
B=${GDRCHECK:-bin/gdrcheck}
export NCCL_NVLS_ENABLE=0
F=${3:-2}
ROUNDS=${ROUNDS:-3}
ARGS="-b 8 -e $E -f $F -w 5 -n 20 -c 1 -g $G"
PIN=()
[ -n "${CPUS:-}" ] && PIN=(taskset -c "$CPUS")
scripts/device/build-nccl-tests.sh || exit 2
for c in ${COLLS:-all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv}; do
  # nccl-tests runs under the NCCL environment gdrcheck sets for itself
  # (debug log and dumps to files), so both see the same NCCL.
  if [ -n "${REF_GDRCHECK:-}" ]; then
    ref() { "${PIN[@]}" $REF_GDRCHECK bench nccl --op $c $ARGS --no-judge --out "$OUT/cmp/$c.ref.$1" > "$OUT/cmp/$c.nccltests.$1.txt" 2>&1; sleep 2; }
  else
  ref() { NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV NCCL_DEBUG_FILE="$OUT/cmp/$c.nccltests.$1.nccl-debug.%h.%p.log" NCCL_TOPO_DUMP_FILE="$OUT/cmp/$c.nccltests.$1.topo.xml" NCCL_GRAPH_DUMP_FILE="$OUT/cmp/$c.nccltests.$1.graph.xml" "${PIN[@]}" vendor-src/nccl-tests/build/${c}_perf $ARGS > "$OUT/cmp/$c.nccltests.$1.txt" 2>&1; sleep 2; }
  fi
  gdr() { "${PIN[@]}" $B bench nccl --op $c $ARGS --no-judge --out "$OUT/cmp/$c.gdrcheck.$1" > "$OUT/cmp/$c.gdrcheck.$1.txt" 2>&1; sleep 2; }
  s=$(date +%s)
  for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then ref "$r"; gdr "$r"; else gdr "$r"; ref "$r"; fi
  done
  echo "$c: $(( $(date +%s) - s )) s"
done
REF_LABEL=${REF_GDRCHECK:-nccl-tests} python3 scripts/device/compare.py "$OUT/cmp" | tee "$OUT/compare.txt"
exit "${PIPESTATUS[0]}"
