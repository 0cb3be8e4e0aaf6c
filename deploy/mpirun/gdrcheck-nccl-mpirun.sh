#!/usr/bin/env bash
# gdrcheck bench nccl across hosts under Open MPI: one rank per GPU. An MPI
# launcher does not tell a rank where rank 0 runs, so the rendezvous is
# rank 0's host, given here (the first host of HOSTS), and exported to every
# rank with the job's secret. See docs/multinode.md.
#   HOSTS=gpu01:8,gpu02:8 deploy/mpirun/gdrcheck-nccl-mpirun.sh [extra bench nccl flags]
set -euo pipefail
HOSTS=${HOSTS:?set HOSTS=host:slots,host:slots}
GDRCHECK=${GDRCHECK:-gdrcheck}
NP=0
for h in ${HOSTS//,/ }; do NP=$((NP + ${h##*:})); done
first=${HOSTS%%,*}
export GDRCHECK_RENDEZVOUS=${GDRCHECK_RENDEZVOUS:-${first%%:*}:29517}
GDRCHECK_SECRET=${GDRCHECK_SECRET:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
export GDRCHECK_SECRET
OUT=${OUT:-$PWD/gdrcheck-results/nccl-mpirun-$(date +%Y%m%d-%H%M%S)}
mpirun -np "$NP" -H "$HOSTS" --map-by ppr:"${HOSTS#*:}":node:"${MAP:-PE=1}" --bind-to none \
  -x GDRCHECK_SECRET -x GDRCHECK_RENDEZVOUS -x NCCL_SOCKET_IFNAME -x NCCL_IB_HCA -x PATH -x LD_LIBRARY_PATH \
  "$GDRCHECK" bench nccl -b 8 -e 8G -f 2 -w 5 -n 20 -c 1 --out "$OUT" "$@"
