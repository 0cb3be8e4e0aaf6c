#!/usr/bin/env bash
# The build without cgo (CGO_ENABLED=0): everything that judges facts works
# on snapshots, logs and reports; the native commands say plainly that this
# build has no GPU engine and exit 2. Usage: scripts/nocgo-smoke.sh BINARY
set -euo pipefail
bin=$1
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
snap=testdata/snapshots/h200x1-live-gdrcheck.tgz

fail() { echo "nocgo-smoke: $*" >&2; exit 1; }
# expect CODE WHAT CMD...: run CMD, want exit CODE.
expect() {
  local want=$1 what=$2; shift 2
  local rc=0
  "$@" >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$tmp/out" >&2; fail "$what: exit $rc, want $want"; }
}

expect 0 "version" "$bin" version
grep -q "built without cgo" "$tmp/out" || fail "version does not say the build has no NVML/CUDA/NCCL"
expect 0 "topo on a snapshot" "$bin" topo --root "$snap"
grep -q "GPU0" "$tmp/out" || fail "topo printed no matrix"
expect 0 "check on a snapshot" "$bin" check --root "$snap"
expect 0 "run on a snapshot" "$bin" run --root "$snap" --out "$tmp/dossier"
[ -s "$tmp/dossier/report.json" ] || fail "run wrote no report.json"
expect 0 "model" "$bin" model --gpu h100 --nodes 2 --gpus-per-node 8 --nics-per-node 8 --nic-rate 400
expect 0 "model of a snapshot" "$bin" model --root "$snap"
expect 0 "analyze" "$bin" analyze internal/analyze/nccltests/testdata/a100x8-allreduce-superbench.txt internal/analyze/ncclog/testdata/a100pcie-2gpu-allreduce-interleaved-nccl-info.txt
expect 0 "fleet" "$bin" fleet "$tmp/dossier"
expect 0 "diff" "$bin" diff "$tmp/dossier" "$tmp/dossier"
for cmd in "bench nccl -e 1M" "bench copy" "bench nvls --force"; do
  # shellcheck disable=SC2086
  expect 2 "$cmd" "$bin" $cmd
  grep -q "built without cgo" "$tmp/out" || { cat "$tmp/out" >&2; fail "$cmd does not say the build has no GPU engine"; }
done
echo "nocgo-smoke: ok"
