#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with a prebuilt
# bin/gdrcheck: `gdrcheck bench nccl` as several ranks of one job on the one
# GPU, each rank its own NCCL_HOSTID so NCCL counts it as a node of its own
# and connects the ranks over NET/Socket (loopback), as two nodes without
# RDMA would. Scenarios: plain background processes (--rank/--world-size),
# Open MPI's mpirun, a Slurm-like environment set by hand, torchrun-style
# variables, a wrong secret, a missing rank and a rank killed mid-run.
# Usage: scripts/device/multinode.sh [MAXBYTES]     (OUT=out by default;
# ONLY="plain-2 killed-rank" runs those scenarios alone: the whole set takes
# a few minutes on loopback sockets, within one 10-minute device command)
# Every scenario prints one line "PASS name" or "FAIL name: why"; the exit
# status is the number of failed scenarios. Each rank's stdout/stderr and
# results (rank 0's results.json, rank-N/ of the others, NCCL's logs) are
# kept under $OUT/multinode/<scenario>.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
E=${1:-64M}
ROOT="$OUT/multinode"
rm -rf "$ROOT"
mkdir -p "$ROOT"
export GDRCHECK_SECRET=${GDRCHECK_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
# Several ranks on one GPU as several "hosts": NCCL's network is the
# socket transport on loopback.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1}
export NCCL_NVLS_ENABLE=0
ARGS=(bench nccl -b 8 -e "$E" -f 4 -w 5 -n 20 -c 1 --devices 0 --no-judge --join-timeout 60s --op-timeout 60s)
fails=0
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }

# check NAME N: every rank exited 0, rank 0 printed every rank and a table
# without wrong values, and the others printed nothing.
check() {
  local name=$1 n=$2 d="$ROOT/$1" r
  for r in $(seq 0 $((n - 1))); do
    [ "$(cat "$d/rc.$r" 2>/dev/null)" = 0 ] || { fail "$name" "rank $r exited $(cat "$d/rc.$r" 2>/dev/null): $(tail -c 400 "$d/err.$r")"; return; }
    if [ "$r" != 0 ] && [ -s "$d/out.$r" ]; then fail "$name" "rank $r printed to stdout"; return; fi
    grep -q "Rank *$r Group" "$d/out.0" || { fail "$name" "rank 0 does not list rank $r"; return; }
  done
  grep -q "Out of bounds values : 0 OK" "$d/out.0" || { fail "$name" "no clean table"; return; }
  grep -q "NET/Socket" "$d"/job/nccl-debug.*.log 2>/dev/null || echo "  note: $name: rank 0's NCCL log does not mention NET/Socket"
  pass "$name (largest row: $(grep '^ *[0-9]' "$d/out.0" | tail -1 | tr -s ' '))"
}

# plain NAME N [extra gdrcheck flags]: background processes with flags.
plain() {
  local name=$1 n=$2 d="$ROOT/$1" r port=$((29600 + RANDOM % 1000))
  shift 2
  mkdir -p "$d"
  for r in $(seq 0 $((n - 1))); do
    ( NCCL_HOSTID=fakehost$r "$B" "${ARGS[@]}" "$@" --rank "$r" --world-size "$n" --rendezvous "127.0.0.1:$port" --out "$d/job" >"$d/out.$r" 2>"$d/err.$r"; echo $? >"$d/rc.$r" ) &
  done
  wait
  check "$name" "$n"
}

mpi() {
  local name=$1 n=$2 d="$ROOT/$1"
  command -v mpirun >/dev/null || { fail "$name" "no mpirun"; return; }
  mkdir -p "$d"
  # Each rank's NCCL_HOSTID from its Open MPI rank; stdout and stderr per rank.
  mpirun --allow-run-as-root --oversubscribe -np "$n" -x GDRCHECK_SECRET -x NCCL_SOCKET_IFNAME -x NCCL_IB_DISABLE -x NCCL_NVLS_ENABLE \
    bash -c 'r=$OMPI_COMM_WORLD_RANK; NCCL_HOSTID=fakehost$r "$0" "${@}" >"'"$d"'/out.$r" 2>"'"$d"'/err.$r"; echo $? >"'"$d"'/rc.$r"' \
    "$B" "${ARGS[@]}" --out "$d/job" >"$d/mpirun.txt" 2>&1
  check "$name" "$n"
}

# launcher NAME N VARS...: a launcher's environment set by hand; @R in a
# variable's value is the rank.
launcher() {
  local name=$1 n=$2 d="$ROOT/$1" r
  shift 2
  mkdir -p "$d"
  for r in $(seq 0 $((n - 1))); do
    local vars=()
    for v in "$@"; do vars+=("${v//@R/$r}"); done
    ( env "${vars[@]}" NCCL_HOSTID=fakehost$r "$B" "${ARGS[@]}" --out "$d/job" >"$d/out.$r" 2>"$d/err.$r"; echo $? >"$d/rc.$r" ) &
  done
  wait
  check "$name" "$n"
}

want plain-2 && plain plain-2 2
want plain-4 && plain plain-4 4
# Split modes: with one rank per (fake) host, intra makes communicators of
# one rank and rail one of every rank; the code paths are the same as on
# nodes of several GPUs (ncclCommSplit, the groups, the combined table).
want split-intra-2 && plain split-intra-2 2 --split intra --op all_reduce,all_gather,alltoall -e 16M
want split-rail-4 && plain split-rail-4 4 --split rail --op all_reduce,all_gather,alltoall -e 16M
# The hierarchical all-reduce beside the flat one (verified against the same
# expected sums; with one GPU per host the node stages are trivial).
want hierarchical-4 && plain hierarchical-4 4 --hierarchical
want mpirun-2 && mpi mpirun-2 2
want mpirun-4 && mpi mpirun-4 4
want slurm-2 && launcher slurm-2 2 SLURM_PROCID=@R SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=@R SLURM_NODEID=@R SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_JOB_NODELIST=localhost GDRCHECK_RENDEZVOUS=127.0.0.1:29577
want torchrun-4 && launcher torchrun-4 4 RANK=@R WORLD_SIZE=4 LOCAL_RANK=@R GROUP_RANK=@R MASTER_ADDR=127.0.0.1 MASTER_PORT=29588

# A wrong secret: rank 1 is rejected, rank 0 names it as missing.
if want wrong-secret; then
d="$ROOT/wrong-secret"; mkdir -p "$d"
( NCCL_HOSTID=fakehost0 "$B" "${ARGS[@]}" --join-timeout 10s --rank 0 --world-size 2 --rendezvous 127.0.0.1:29590 --out "$d/job" >"$d/out.0" 2>"$d/err.0"; echo $? >"$d/rc.0" ) &
( NCCL_HOSTID=fakehost1 GDRCHECK_SECRET=not-the-secret-0123456789 "$B" "${ARGS[@]}" --join-timeout 10s --rank 1 --world-size 2 --rendezvous 127.0.0.1:29590 --out "$d/job" >"$d/out.1" 2>"$d/err.1"; echo $? >"$d/rc.1" ) &
wait
if grep -q "wrong secret" "$d/err.1" && grep -q "rank 1: never arrived" "$d/err.0"; then pass wrong-secret; else fail wrong-secret "$(cat "$d/err.0" "$d/err.1" | tail -c 600)"; fi
fi

# A missing rank: 3 expected, 2 come; both exit naming rank 2 within the join deadline.
if want missing-rank; then
d="$ROOT/missing-rank"; mkdir -p "$d"; s=$(date +%s)
for r in 0 1; do
  ( NCCL_HOSTID=fakehost$r "$B" "${ARGS[@]}" --join-timeout 10s --rank $r --world-size 3 --rendezvous 127.0.0.1:29591 --out "$d/job" >"$d/out.$r" 2>"$d/err.$r"; echo $? >"$d/rc.$r" ) &
done
wait
t=$(( $(date +%s) - s ))
if grep -q "rank 2" "$d/err.0" && grep -q "rank 2" "$d/err.1" && [ "$(cat "$d/rc.0")" = 1 ] && [ "$t" -lt 40 ]; then pass "missing-rank (${t}s)"; else fail missing-rank "after ${t}s: $(cat "$d/err.0" "$d/err.1" | tail -c 600)"; fi
fi

# A rank killed mid-run: the others abort their communicators and exit
# well before the op deadline; rank 0 keeps what was measured and names rank 1.
if want killed-rank; then
d="$ROOT/killed-rank"; mkdir -p "$d"
KARGS=(bench nccl -b 1M -e 1G -f 2 -w 5 -n 50 -c 0 --devices 0 --no-judge --join-timeout 60s --op-timeout 120s)
pids=()
for r in 0 1 2; do
  ( NCCL_HOSTID=fakehost$r exec "$B" "${KARGS[@]}" --rank $r --world-size 3 --rendezvous 127.0.0.1:29592 --out "$d/job" >"$d/out.$r" 2>"$d/err.$r" ) &
  pids+=($!)
done
# Kill once the ranks are well into the sweep (KILL_AFTER seconds).
sleep "${KILL_AFTER:-25}"
s=$(date +%s)
kill -9 "${pids[1]}"
rc0=0; rc2=0
wait "${pids[0]}" || rc0=$?
wait "${pids[2]}" || rc2=$?
t=$(( $(date +%s) - s ))
if [ "$rc0" = 1 ] && [ "$rc2" = 1 ] && grep -q "rank 1" "$d/err.0" && grep -q '"failures"' "$d/job/results.json" && [ "$t" -lt 100 ]; then
  pass "killed-rank (others exited ${t}s after the kill)"
else
  fail killed-rank "rc0=$rc0 rc2=$rc2 after ${t}s: $(tail -c 600 "$d/err.0") / $(tail -c 300 "$d/err.2")"
fi
fi
echo "$fails scenario(s) failed"
exit "$fails"
