#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with a prebuilt
# bin/gdrcheck: the NCCL topology file gdrcheck writes is loaded by NCCL
# (issue 29). Writes the file with `topo --nccl-topo-file --nccl-env`,
# then runs a job of N ranks (N=2) of `bench nccl` on GPU 0, each rank its
# own NCCL_HOSTID (NCCL joins them over NET/Socket on loopback), with
# NCCL_TOPO_FILE naming the file; prints NCCL's own lines saying it read
# the file and the topology NCCL dumped, read back by `gdrcheck analyze`.
# Outputs stay under $OUT/topofile (OUT=out by default).
# LAYOUT=1: the file is written from a site profile's `layout:` (vm.yaml,
# written here: every GPU of this host under one PCIe switch), as for a VM
# whose PCI tree is flattened; outputs under $OUT/topofile-layout.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
N=${N:-2}
sub=topofile
[ -n "${LAYOUT:-}" ] && sub=topofile-layout
D="$(mkdir -p "$OUT/$sub" && cd "$OUT/$sub" && pwd)"
rm -rf "${D:?}"/*
expect=()
if [ -n "${LAYOUT:-}" ]; then
  "$B" topo --format json | python3 -c '
import json, sys
gpus = [g["address"] for g in json.load(sys.stdin)["gpus"]]
print("layout:\n  - gpus: [" + ", ".join(gpus) + "]")' >"$D/vm.yaml"
  echo "site profile $D/vm.yaml:"
  sed 's/^/  /' "$D/vm.yaml"
  expect=(--expect "$D/vm.yaml")
fi
echo "\$ $B topo --nccl-topo-file $D/nccl-topo.xml --nccl-env ${expect[*]}"
"$B" topo --nccl-topo-file "$D/nccl-topo.xml" --nccl-env "${expect[@]}" >"$D/env.txt" 2>&1
echo "  exit $?"
sed 's/^/  /' "$D/env.txt"
sed 's/^/  /' "$D/nccl-topo.xml"
export NCCL_TOPO_FILE="$D/nccl-topo.xml"
export GDRCHECK_SECRET=${GDRCHECK_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1} NCCL_NVLS_ENABLE=0
port=$((29600 + RANDOM % 1000))
echo "\$ NCCL_TOPO_FILE=$NCCL_TOPO_FILE: $N ranks of $B bench nccl -b 1M -e 16M -f 4 -w 2 -n 5 --devices 0"
for r in $(seq 0 $((N - 1))); do
  ( NCCL_HOSTID=topohost$r "$B" bench nccl -b 1M -e 16M -f 4 -w 2 -n 5 --devices 0 --join-timeout 60s --op-timeout 120s \
      --rank "$r" --world-size "$N" --rendezvous "127.0.0.1:$port" --out "$D/job" >"$D/job.out.$r" 2>"$D/job.err.$r"; echo $? >"$D/job.rc.$r" ) &
done
wait
for r in $(seq 0 $((N - 1))); do echo "  rank $r exit $(cat "$D/job.rc.$r")"; done
grep -E '^#|^ +[0-9]' "$D/job.out.0" | tail -6 | sed 's/^/  /'
echo "NCCL's own lines on the file:"
grep -rhoE 'NCCL_TOPO_FILE set by environment to .*|Loading topology file .*|Loading topology .*|Could not open XML topology file .*|XML Parse error.*|wrong version.*' "$D/job" | sort | uniq -c | sed 's/^/  /'
dump=$(grep -rlE '^<system' "$D/job" 2>/dev/null | head -1)
if [ -n "$dump" ]; then
  echo "\$ $B analyze $dump   # the topology NCCL built from the file"
  "$B" analyze "$dump" 2>&1 | head -30 | sed 's/^/  /'
fi
if [ -n "$dump" ]; then
  echo "the PCI tree NCCL dumped (switches it kept from the file are ffff: bridges):"
  grep -E '<pci ' "$dump" | sed -E 's/ (vendor|device|subsystem_vendor|subsystem_device)="[^"]*"//g; s/^/  /'
fi
