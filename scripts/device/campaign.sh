#!/usr/bin/env bash
# Runs on a GPU machine from the repository root with a prebuilt
# bin/gdrcheck: a real `gdrcheck fleet plan` campaign over N "nodes" that
# are ranks on the one GPU, each its own NCCL_HOSTID (NCCL joins them over
# NET/Socket on loopback, as nodes without RDMA). Each step of a round is
# run as the round's steps.sh would run it under srun, but with the flags
# launcher on 127.0.0.1, one step at a time (the "nodes" share one GPU), and
# writes the files the campaign reads: results/STEP.json (rank 0's bench
# nccl JSON), STEP.rc, STEP.err. Planted faults:
#   SLOW   nodes whose every rank is starved of CPU (pinned to one core with
#          spinners on it): NCCL's socket proxy is CPU-bound, so the node is slow
#   LINK   NODE:RAIL, a node slow (as above) on that rail's steps only
#   DEAD   nodes that cannot run (CUDA_VISIBLE_DEVICES empty: no GPU)
# Usage: N=16 SLOW=n09 LINK=n05:1 DEAD=n11 scripts/device/campaign.sh
#        STRATEGY=bisect MIN_BUSBW=1 MIN_RAIL_BUSBW=1 ... (bisection needs thresholds)
#        JOIN=8s: how long a step waits for its ranks (a dead node costs this per step)
# Prints every round's plan and the findings; exit status: fleet plan's.
set -u
OUT=${OUT:-out}
B=${GDRCHECK:-$PWD/bin/gdrcheck}
N=${N:-16}
SIZE=${SIZE:-16M}
SLOW=${SLOW:-}
LINK=${LINK:-}
DEAD=${DEAD:-}
C="$OUT/campaign"
rm -rf "$C"
mkdir -p "$OUT"
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_NVLS_ENABLE=0
secret="$OUT/campaign.secret"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret"

nodes=$(printf 'n%02d,' $(seq 1 "$N"))
extra=(--strategy "${STRATEGY:-pairs}")
[ -n "${MIN_BUSBW:-}" ] && extra+=(--min-busbw "$MIN_BUSBW")
[ -n "${MIN_RAIL_BUSBW:-}" ] && extra+=(--min-rail-busbw "$MIN_RAIL_BUSBW")
"$B" fleet plan --nodes "${nodes%,}" --rails mlx5_0,mlx5_1 --gpus-per-node 1 \
  --size "$SIZE" --iters 10 "${extra[@]}" --out "$C" || exit $?

in_list() { [[ ",$2," == *",$1,"* ]]; }

# steps ROUNDDIR: "ID RAILNAME NODE..." for every step of the latest round.
steps() {
  python3 - "$C/campaign.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
rails = c.get("config", c).get("rails") or c.get("rails") or []
r = c["rounds"][-1]
for s in r["steps"]:
    rail = rails[s["rail"]] if s.get("rail", -1) >= 0 else "-"
    print(s["id"], rail, " ".join(s["nodes"]))
EOF
}

port=29700
round=1
while :; do
  rd=$(printf '%s/round-%02d' "$C" "$round")
  [ -d "$rd" ] || break
  mkdir -p "$rd/results" "$rd/out"
  echo "== round $round: $(steps | wc -l) steps"
  while read -r id rail rest; do
    read -ra members <<<"$rest"
    k=${#members[@]}
    port=$((port + 1))
    pids=()
    spin=()
    for r in $(seq 0 $((k - 1))); do
      node=${members[$r]}
      env=(NCCL_HOSTID="$node")
      pre=()
      [ "$rail" != - ] && env+=(NCCL_IB_HCA="=$rail")
      in_list "$node" "$DEAD" && env+=(CUDA_VISIBLE_DEVICES=)
      slow=0
      in_list "$node" "$SLOW" && slow=1
      for l in ${LINK//,/ }; do
        [ "${l%%:*}" = "$node" ] && [ "$rail" = "mlx5_${l##*:}" ] && slow=1
      done
      if [ $slow = 1 ]; then
        core=$(($(nproc) - 1 - r))
        pre=(taskset -c "$core")
        for _ in 1 2 3; do taskset -c "$core" sh -c 'while :; do :; done' & spin+=($!); done
      fi
      o=/dev/null e="$rd/out/$id.err.$r"
      [ "$r" = 0 ] && o="$rd/results/$id.json" && e="$rd/results/$id.err"
      env "${env[@]}" "${pre[@]}" "$B" bench nccl --devices 0 --rank "$r" --world-size "$k" \
        --rendezvous "127.0.0.1:$port" --secret-file "$secret" --join-timeout "${JOIN:-20s}" --op-timeout 60s \
        --op all_reduce -b "$SIZE" -e "$SIZE" -n 10 --no-judge --format json --out "$rd/out/$id" \
        >"$o" 2>"$e" &
      pids+=($!)
    done
    # The step's exit status is the first rank's that failed (srun
    # --kill-on-bad-exit fails the step when any rank does).
    rc0=0
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}"; rc=$?
      [ "$rc0" = 0 ] && rc0=$rc
    done
    [ ${#spin[@]} -gt 0 ] && kill "${spin[@]}" 2>/dev/null
    echo "$rc0" >"$rd/results/$id.rc"
    echo "   $id ${members[*]} rail=$rail rc=$rc0 busbw=$(python3 -c '
import json,sys
try:
    d=json.load(open(sys.argv[1]))
    print("%.3f" % max(max(r[k]["busbw_gbs"] for k in ("out_of_place", "in_place")) for m in d["measurements"] for r in m["rows"]))
except Exception as e: print("-")' "$rd/results/$id.json")"
  done < <(steps)
  round=$((round + 1))
  "$B" fleet plan --next "$C"
  rc=$?
  [ -d "$(printf '%s/round-%02d' "$C" "$round")" ] || exit $rc
done
