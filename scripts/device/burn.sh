#!/usr/bin/env bash
# Runs on the one-GPU machine from the repository root with a prebuilt
# bin/gdrcheck: issue 28's acceptance on hardware. Every step prints its
# command and exit status; the outputs stay under $OUT/burn (OUT=out).
#   1. `gdrcheck burn --duration $DUR --window $WIN`: the dossier with its
#      burn section (report.json, report.html, report.md, metrics.prom),
#      raw/burn/ holding burn.json and the counter samples.
#   2. `gdrcheck snapshot` of the node, so the captures can be replayed
#      elsewhere (--root).
#   3. `gdrcheck burn --replay` of the dossier on the live host and on the
#      snapshot, in JSON: the same verdicts as the run (compared here by
#      status, ID and subject).
#   4. `gdrcheck health --burn 30s`: the prolog's short burn-in.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
DUR=${DUR:-3m}
WIN=${WIN:-1m}
D="$OUT/burn"
rm -rf "$D"
mkdir -p "$D"
step() { # step NAME CMD...: runs CMD, keeps its output, prints its status
  local name=$1
  shift
  echo "\$ $*"
  "$@" >"$D/$name.out" 2>"$D/$name.err"
  local rc=$?
  echo "  exit $rc"
  tail -n 12 "$D/$name.out" | sed 's/^/  | /'
  return 0
}
step burn "$B" burn --duration "$DUR" --window "$WIN" --out "$D/dossier"
grep -h "gdrcheck: burn " "$D/burn.err" | sed 's/^/  progress: /'
step snapshot "$B" snapshot -o "$D/node.tgz"
step replay-live "$B" burn --replay "$D/dossier" --format json
step replay-snapshot "$B" --root "$D/node.tgz" burn --replay "$D/dossier" --format json
python3 - "$D" <<'PY'
import json, sys
d = sys.argv[1]
rep = json.load(open(f"{d}/dossier/report.json"))
run = sorted({(r["status"], r["id"], r["subject"]) for r in rep["results"] if r.get("source") == "burn"})
for name in ("replay-live", "replay-snapshot"):
    try:
        env = json.load(open(f"{d}/{name}.out"))
    except Exception as e:
        print(f"  {name}: not JSON: {e}")
        continue
    got = sorted({(r["status"], r["id"], r["subject"]) for r in env["results"]})
    print(f"  {name}: {len(got)} verdict kinds, the run {len(run)}; same: {got == run}")
    for x in sorted(set(run) ^ set(got))[:10]:
        print("    differs:", x)
b = rep.get("burn") or {}
print(f"  burn section: {len(b.get('windows', []))} window(s), complete {b.get('complete')}, {len(b.get('timeline', []))} timeline row(s)")
for w in b.get("windows", []):
    gpus = ", ".join(f"{g['gpu']} {g['sm_clock_mhz']:.0f} MHz {g['power_w']:.0f} W {g['max_temp_c']} C" for g in w.get("gpus", []))
    copies = ", ".join(f"{c['name']} {c['gbps']:.1f}" for c in w.get("copies", []))
    print(f"  {w['name']}: {w['passes']} passes, {w['moved_bytes']/2**30:.1f} GiB, copies GB/s {copies}; {gpus}")
PY
step health "$B" health --burn 30s --burn-out "$D/health-burn"
exit 0
