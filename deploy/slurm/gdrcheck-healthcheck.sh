#!/usr/bin/env bash
# gdrcheck as Slurm's HealthCheckProgram: the node's readiness checks (no
# benchmarks); a node that fails one is drained by gdrcheck itself, with its
# one-line verdict as the reason (slurmd does not act on the exit status of
# a HealthCheckProgram: the program must drain the node). A node that is
# only degraded, or that gdrcheck could not check, is left in service; the
# line goes to syslog either way. A node that passes again is resumed, but
# only when gdrcheck drained it (its reason starts "gdrcheck FAIL: ") and it
# is only drained: a drain by anyone else or for another reason is left as
# it is (GDRCHECK_RESUME=false: never resume). See docs/scheduler.md.
#
# slurm.conf (every node):
#   HealthCheckProgram=/etc/slurm/gdrcheck-healthcheck.sh
#   HealthCheckInterval=600
#   HealthCheckNodeState=ANY,CYCLE
#   # ANY runs on drained nodes too, which the resume needs (NONDRAINED_IDLE
#   # would never look at a drained node again).
#   # HealthCheckTimeout=60 (the default) kills the program after 60 s:
#   # GDRCHECK_TIMEOUT below keeps gdrcheck well inside it, with at most two
#   # scontrol commands of 8 s each after it (show and resume, or a drain).
#
# Settings (environment, or edit here). Slurm gives its programs no search
# path, so the programs are named by absolute path.
set -u
LOGGER=${LOGGER:-logger} # where the line goes: syslog
GDRCHECK=${GDRCHECK:-/usr/local/bin/gdrcheck}
SCONTROL=${SCONTROL:-/usr/bin/scontrol}
GDRCHECK_EXPECT=${GDRCHECK_EXPECT:-/etc/gdrcheck/site.yaml} # the site profile, used when readable
GDRCHECK_TIMEOUT=${GDRCHECK_TIMEOUT:-40s}                   # discovery and collection
GDRCHECK_DRAIN=${GDRCHECK_DRAIN:-apply}                     # print: log the command instead of running it
GDRCHECK_RESUME=${GDRCHECK_RESUME:-true}                    # false: never resume a node gdrcheck drained

args=(--timeout "$GDRCHECK_TIMEOUT" health --mode slurm-health --drain "$GDRCHECK_DRAIN" --resume="$GDRCHECK_RESUME" --scontrol "$SCONTROL" --drain-timeout 8s)
if [ -r "$GDRCHECK_EXPECT" ]; then
	args+=(--expect "$GDRCHECK_EXPECT")
fi
# slurmd names the node in SLURMD_NODENAME (recent releases); gdrcheck
# falls back to the short host name.
if [ -n "${SLURMD_NODENAME:-}" ]; then
	args+=(--node "$SLURMD_NODENAME")
fi

errors=$(mktemp) || exit 2
line=$("$GDRCHECK" "${args[@]}" 2>"$errors")
rc=$?
"$LOGGER" -t gdrcheck-healthcheck -- "exit $rc: $line" 2>/dev/null || true
while IFS= read -r e; do
	"$LOGGER" -t gdrcheck-healthcheck -- "$e" 2>/dev/null || true
done <"$errors"
rm -f "$errors"
exit "$rc"
