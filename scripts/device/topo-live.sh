#!/usr/bin/env bash
# Runs on a GPU machine from the repository root, with bin/gdrcheck built:
# compares `gdrcheck topo` with `nvidia-smi topo -m` of the same moment, takes
# a snapshot and checks that the snapshot replays to the same matrix.
# Output files go to $OUT (default ./out). Exit 1 on any difference.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
B=${GDRCHECK:-bin/gdrcheck}
export NCCL_NVLS_ENABLE=0
rc=0

strip() { sed -e 's/\x1b\[[0-9;]*m//g'; }

$B version | tee "$OUT/version.txt"
nvidia-smi topo -m | strip > "$OUT/nvidia-smi-topo-m.txt"
$B topo --color never > "$OUT/gdrcheck-topo.txt"
n=$(wc -l < "$OUT/nvidia-smi-topo-m.txt")
# gdrcheck prints the same lines as nvidia-smi, then the pairing.
if diff <(head -n "$n" "$OUT/gdrcheck-topo.txt") "$OUT/nvidia-smi-topo-m.txt" > "$OUT/topo.diff"; then
  echo "TOPO MATCH: gdrcheck topo == nvidia-smi topo -m ($n lines)"
else
  echo "TOPO DIFFER:"; cat "$OUT/topo.diff"; rc=1
fi
cat "$OUT/gdrcheck-topo.txt"

start=$(date +%s%N)
$B snapshot --out "$OUT/snapshot.tgz" | tee "$OUT/snapshot.txt"
end=$(date +%s%N)
echo "snapshot took $(( (end - start) / 1000000 )) ms, $(stat -c %s "$OUT/snapshot.tgz") bytes"
$B topo --color never --root "$OUT/snapshot.tgz" > "$OUT/replay-topo.txt"
if diff "$OUT/gdrcheck-topo.txt" "$OUT/replay-topo.txt" > "$OUT/replay.diff"; then
  echo "REPLAY MATCH: topo --root snapshot.tgz == live topo"
else
  echo "REPLAY DIFFER:"; cat "$OUT/replay.diff"; rc=1
fi
$B topo --format json > "$OUT/gdrcheck-topo.json" || rc=1
# Collect, then judge: the checks on the snapshot give what they give live.
$B check --format json > "$OUT/check-live.json"
$B check --format json --root "$OUT/snapshot.tgz" > "$OUT/check-replay.json"
python3 - "$OUT/check-live.json" "$OUT/check-replay.json" <<'PY' || rc=1
import json, sys
key = lambda r: (r["id"], r.get("subject", ""), r["status"], r.get("reason", ""))
live, replay = (sorted(map(key, json.load(open(p))["results"])) for p in sys.argv[1:3])
if live == replay:
    print("CHECKS MATCH: check --root snapshot == live check (%d results)" % len(live))
    sys.exit(0)
print("CHECKS DIFFER:")
for r in sorted(set(live) ^ set(replay)):
    print("  live" if r in live else "  replay", *r)
sys.exit(1)
PY
$B run > "$OUT/run.txt" 2>&1 || rc=1
exit $rc
