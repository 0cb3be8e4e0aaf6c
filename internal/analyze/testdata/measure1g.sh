#!/usr/bin/env bash
# Reads 1 GiB (SIZE bytes) of each kind with gdrcheck analyze --kind, each
# input a corpus sample repeated: wall and CPU seconds, MB/s of each, peak
# RSS and exit status. Usage (docs/analyzers.md):
#   go build -o bin/gdrcheck ./cmd/gdrcheck
#   TMPDIR=/dev/shm internal/analyze/testdata/measure1g.sh [BINARY]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=${1:-$root/bin/gdrcheck}
tmp=${TMPDIR:-/tmp}/gdrmeasure; mkdir -p "$tmp"
gen() { # sample size out: the sample's body (after its '---' line) repeated
  python3 - "$1" "$2" "$3" <<'PY'
import sys
raw=open(sys.argv[1],'rb').read()
body=raw.split(b'\n---\n',1)[1] if b'\n---\n' in raw else raw
size=int(sys.argv[2]); out=open(sys.argv[3],'wb'); n=0
chunk=(body+b'\n')*max(1,(8<<20)//(len(body)+1))
while n<size: out.write(chunk); n+=len(chunk)
PY
}
measure() { # kind file: CPU time and peak RSS of the child, from getrusage
  python3 - "$bin" "$1" "$2" <<'PY'
import os, resource, subprocess, sys, time
bin, kind, f = sys.argv[1:4]
t0 = time.monotonic()
rc = subprocess.call([bin, "analyze", "--kind", kind, f], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
size = os.path.getsize(f)
print("%-16s %5d MiB  wall %6.2f s  %5.0f MB/s (wall)  cpu %6.2f s  %5.0f MB/s (cpu)  RSS %4.0f MB  exit %d" % (kind, size >> 20, wall, size / wall / 1e6, cpu, size / cpu / 1e6, ru.ru_maxrss / 1024, rc))
PY
}
while read -r kind sample; do
  gen "$root/internal/analyze/$sample" "${SIZE:-$((1<<30))}" "$tmp/in"
  measure "$kind" "$tmp/in"
done <<'LIST'
nvidia-smi-topo smitopo/testdata/h200x8-10nic-gpu3-triple-pix-tabs.txt
dcgmi dcgmi/testdata/dcgmi-diag-r2-aws-p4de-a100-dcgm333.txt
nvbandwidth nvbandwidth/testdata/nvbandwidth-v08-4x-t4-pcie-gen3-d2d-ce-sm.txt
perftest perftest/testdata/k8s-cx6-ib-write-bw-host-all-sizes-98g.txt
nccl-topo nccltopo/testdata/azure-ndv2-v100-topo.txt
nccl-tests nccltests/testdata/dgxc-h100-1node-allreduce-nvls-480.txt
nccl-log ncclog/testdata/synthetic-2node-ib-no-gdr.txt
nccl-tests nccltests/testdata/aws-p5-2node-efa-ofi-gdrdma-full.txt
LIST
# Review D3: one-row nccl-tests tables, 1 GiB.
python3 - "$tmp/in" "${SIZE:-$((1<<30))}" <<'PY'
import sys
b=b'# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n           8             2     float     sum      -1    35.06    0.00    0.00      0    34.83    0.00    0.00      0\n'
open(sys.argv[1],'wb').write(b*(int(sys.argv[2])//len(b)))
PY
measure nccl-tests "$tmp/in"
rm -rf "$tmp"
