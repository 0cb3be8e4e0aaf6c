#!/usr/bin/env bash
# Runs on the one-GPU machine (no RDMA NIC) from the repository root with a
# prebuilt bin/gdrcheck: what the sign-off says about a node that has no
# GPU Direct RDMA path (issue 24). Every step prints its command, its exit
# status and the lines that carry the verdict; the outputs stay under
# $OUT/proof (OUT=out by default).
#   1. `check` and `run --strict` on the live host: not READY for GDR, the
#      segments that were not measured named, exit 1 under --strict.
#   2. The same with a site profile that says gdr.required: false.
#   3. `bench rdma` with nothing to test: exit 1; with the profile: 0.
#   4. A job of N ranks (N=2 by default) of `bench nccl` on the one GPU,
#      each rank its own NCCL_HOSTID (NCCL joins them over NET/Socket on
#      loopback), judged, and its results folded into a `run` dossier with
#      --include (the node's own benchmarks off: --no-bench): the fabric
#      hop measured, GDR failed (host-staged), the
#      peer named.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
N=${N:-2}
E=${E:-64M}
D="$OUT/proof"
rm -rf "$D"
mkdir -p "$D"
step() { # step NAME CMD...: runs CMD, keeps its output, prints its status
  local name=$1
  shift
  echo "\$ $*"
  "$@" >"$D/$name.out" 2>"$D/$name.err"
  local rc=$?
  echo "  exit $rc"
  grep -E 'READY|DEGRADED|FAIL|not measured|sign-off|nothing to test|strict|measured' "$D/$name.out" "$D/$name.err" | sed 's/^/  /' | head -20
  return 0
}
printf 'gdr:\n  required: false\n' >"$D/no-gdr.yaml"
step check "$B" check
step run-strict "$B" run --strict --profile quick --bench-size 16M --out "$D/run-strict"
step check-nogdr "$B" check --expect "$D/no-gdr.yaml"
step run-nogdr "$B" run --no-bench --expect "$D/no-gdr.yaml" --out "$D/run-nogdr"
step rdma "$B" bench rdma
step rdma-nogdr "$B" bench rdma --expect "$D/no-gdr.yaml"

# The job: N ranks on the one GPU, each its own NCCL "host".
export GDRCHECK_SECRET=${GDRCHECK_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1} NCCL_NVLS_ENABLE=0
port=$((29600 + RANDOM % 1000))
echo "\$ $N ranks: NCCL_HOSTID=fakehostR $B bench nccl -b 8 -e $E -f 4 -w 5 -n 10 --devices 0 --rank R --world-size $N --rendezvous 127.0.0.1:$port --out $D/job"
for r in $(seq 0 $((N - 1))); do
  ( NCCL_HOSTID=fakehost$r "$B" bench nccl -b 8 -e "$E" -f 4 -w 5 -n 10 --devices 0 --join-timeout 60s --op-timeout 120s \
      --rank "$r" --world-size "$N" --rendezvous "127.0.0.1:$port" --out "$D/job" >"$D/job.out.$r" 2>"$D/job.err.$r"; echo $? >"$D/job.rc.$r" ) &
done
wait
for r in $(seq 0 $((N - 1))); do echo "  rank $r exit $(cat "$D/job.rc.$r")"; done
grep -E '^#|^ +[0-9]' "$D/job.out.0" | tail -8 | sed 's/^/  /'
if "$B" run --help 2>&1 | grep -q -- --include; then
  step run-include "$B" run --no-bench --include "$D/job" --out "$D/run-include"
  step run-include-strict "$B" run --no-bench --strict --include "$D/job" --out "$D/run-include-strict"
  grep -E 'fabric|NET/Socket|peer' "$D/run-include/report.md" | head -12 | sed 's/^/  /'
fi
