#!/usr/bin/env bash
# Runs on a GPU machine from the repository root: `gdrcheck bench copy` and
# the same copies through PyTorch (copy_torch.py), side by side.
# Usage: scripts/device/copy-compare.sh [D2D_BYTES] [HOST_BYTES]
set -u
OUT=${OUT:-out}
mkdir -p "$OUT/copy"
BIG=${1:-4G}
HOST=${2:-1G}
B=${GDRCHECK:-bin/gdrcheck}
tob() { python3 -c "import sys;s=sys.argv[1];m={'K':1<<10,'M':1<<20,'G':1<<30}.get(s[-1],1);print(int(s.rstrip('KMG'))*m)" "$1"; }
$B bench copy --size "$BIG" --tests d2d -n 20 -w 3 --format json --out "$OUT/copy/big" > "$OUT/copy/gdr-big.json" 2> "$OUT/copy/gdr-big.err"
$B bench copy --size "$HOST" --tests h2d_pinned,d2h_pinned,h2d_pageable,d2h_pageable,bidir_pinned,latency -n 20 -w 3 --out "$OUT/copy/host" > "$OUT/copy/gdr-host.txt" 2>&1
cp "$OUT/copy/host/results.json" "$OUT/copy/gdr-host.json"
python3 scripts/device/copy_torch.py "$(tob "$BIG")" "$(tob "$HOST")" > "$OUT/copy/torch.json"
python3 - "$OUT/copy" <<'PY'
import json, sys, os
d = sys.argv[1]
torch = json.load(open(os.path.join(d, "torch.json")))
res = json.load(open(os.path.join(d, "gdr-big.json")))["results"] + json.load(open(os.path.join(d, "gdr-host.json")))["results"]
ok = True
print("%-14s %12s %12s %8s" % ("test", "gdrcheck", "pytorch", "ratio"))
for r in res:
    t = torch.get(r["test"])
    if not t or r.get("peer", -1) >= 0:
        continue
    g = r["gbps"]
    ratio = g / t["gbps"]
    flag = "" if ratio >= 0.98 else "  < 0.98"
    if ratio < 0.98 or not r["valid"]:
        ok = False
    extra = "  (read+write: %.1f vs %.1f)" % (r.get("read_write_gbps", 0), t.get("read_write_gbps", 0)) if r["test"] == "d2d" else ""
    print("%-14s %10.1f GB/s %10.1f GB/s %8.3f%s%s  valid=%s" % (r["test"], g, t["gbps"], ratio, flag, extra, r["valid"]))
print("COPY WITHIN 2%%: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
