#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with a prebuilt
# bin/gdrcheck: the scheduler and fleet commands on the live host.
#   1. gdrcheck health (plain, --nfd, slurm-prolog with --drain print), timed
#   2. bench rdma (loopback, and cross-node as two ranks under mpirun): the
#      machine has no RDMA NIC, so each must say so in one line
#   3. RUNS dossiers of `run --profile quick` (each renamed node1..nodeN in
#      inventory.host and verdict.host, so that the runs stand for N nodes
#      of one class with the machine's real run-to-run noise), then `fleet`
#      over them (text, html, --drain-commands), timed
# Everything is kept under $OUT/fleet-health; each part prints its exit status.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
RUNS=${RUNS:-8}
D="$OUT/fleet-health"
rm -rf "$D"
mkdir -p "$D"
t() {
  local s e rc
  s=$(date +%s%N); "$@"; rc=$?; e=$(date +%s%N)
  echo "[rc=$rc, $(( (e - s) / 1000000 )) ms] $*" >&2
  return $rc
}

echo "== health"
t "$B" health
t "$B" health --nfd "$D/gdrcheck.features"
cat "$D/gdrcheck.features"
SLURMD_NODENAME=$(hostname -s) t "$B" health --mode slurm-prolog --drain print
t "$B" health --strict

echo "== bench rdma"
t "$B" bench rdma --out "$D/rdma-loop"
export GDRCHECK_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
t mpirun --allow-run-as-root --oversubscribe -np 2 -x GDRCHECK_SECRET \
  "$B" bench rdma --mode cross-node --join-timeout 30s --out "$D/rdma-cross"

echo "== run x$RUNS, fleet"
for i in $(seq 1 "$RUNS"); do
  t "$B" run -q --profile quick --out "$D/dossiers/run$i" >/dev/null
  python3 - "$D/dossiers/run$i/report.json" "node$i" <<'EOF'
import json, sys
p, h = sys.argv[1], sys.argv[2]
d = json.load(open(p))
d["inventory"]["host"] = h
d["verdict"]["host"] = h
json.dump(d, open(p, "w"))
EOF
done
t "$B" fleet "$D/dossiers" --out "$D/fleet"
t "$B" fleet "$D/dossiers" --format html >"$D/fleet-stdout.html"
t "$B" fleet "$D/dossiers" --drain-commands
ls -l "$D/fleet"
