#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: `gdrcheck bench copy` and
# the same copies through PyTorch (copy_torch.py), side by side, in ROUNDS
# interleaved rounds (gdrcheck, PyTorch, PyTorch, gdrcheck, ...): host copies
# through pageable memory vary by 15% between identical runs on a VM, so each
# tool's best run per test is compared, as bench-compare.sh does.
# Usage: scripts/device/copy-compare.sh [D2D_BYTES] [HOST_BYTES] [ROUNDS]
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/copy"
BIG=${1:-4G}
HOST=${2:-1G}
ROUNDS=${3:-3}
B=${GDRCHECK:-bin/gdrcheck}
tob() { python3 -c "import sys;s=sys.argv[1];m={'K':1<<10,'M':1<<20,'G':1<<30}.get(s[-1],1);print(int(s.rstrip('KMG'))*m)" "$1"; }
gdr() {
  $B bench copy --size "$BIG" --tests d2d -n 20 -w 3 --format json --out "$OUT/copy/big.$1" > "$OUT/copy/gdr-big.$1.json" 2> "$OUT/copy/gdr-big.$1.err"
  $B bench copy --size "$HOST" --tests h2d_pinned,d2h_pinned,h2d_pageable,d2h_pageable,bidir_pinned,latency -n 20 -w 3 --out "$OUT/copy/host.$1" > "$OUT/copy/gdr-host.$1.txt" 2>&1
  cp "$OUT/copy/host.$1/results.json" "$OUT/copy/gdr-host.$1.json"
}
torch() { python3 scripts/device/copy_torch.py "$(tob "$BIG")" "$(tob "$HOST")" > "$OUT/copy/torch.$1.json"; }
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then gdr "$r"; torch "$r"; else torch "$r"; gdr "$r"; fi
done
python3 - "$OUT/copy" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
torch, gdr = {}, {}
for f in sorted(glob.glob(os.path.join(d, "torch.*.json"))):
    for k, v in json.load(open(f)).items():
        torch.setdefault(k, []).append(v)
for f in sorted(glob.glob(os.path.join(d, "gdr-big.*.json"))) + sorted(glob.glob(os.path.join(d, "gdr-host.*.json"))):
    for r in json.load(open(f))["measurements"]:
        if r.get("peer", -1) < 0 and r.get("gbps"):
            gdr.setdefault(r["test"], []).append(r)
ok = True
print("%-14s %12s %12s %8s   runs (GB/s): gdrcheck | pytorch" % ("test", "gdrcheck", "pytorch", "ratio"))
for test, runs in gdr.items():
    if test not in torch:
        continue
    g = max(r["gbps"] for r in runs)
    t = max(v["gbps"] for v in torch[test])
    valid = all(r["valid"] for r in runs)
    ratio = g / t
    flag = "" if ratio >= 0.98 else "  < 0.98"
    if ratio < 0.98 or not valid:
        ok = False
    spread = " ".join("%.1f" % r["gbps"] for r in runs) + " | " + " ".join("%.1f" % v["gbps"] for v in torch[test])
    extra = ""
    if test == "d2d":
        extra = "  (read+write: %.1f vs %.1f)" % (max(r["read_write_gbps"] for r in runs), max(v["read_write_gbps"] for v in torch[test]))
    print("%-14s %7.1f GB/s %7.1f GB/s %8.3f%s  valid=%s   %s%s" % (test, g, t, ratio, flag, valid, spread, extra))
print("COPY WITHIN 2%%: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
