#!/usr/bin/env bash
# gdrcheck in Slurm's Prolog: before the first step of a job on this node,
# the readiness checks (no benchmarks). A failing node makes this prolog
# exit 1, and Slurm drains the node and requeues the job (held, unless
# SchedulerParameters has nohold_on_prolog_fail). Slurm's recorded reason
# is then its own generic one; with GDRCHECK_DRAIN=apply gdrcheck first
# drains the node with its one-line verdict as the reason. That is off by
# default because SchedMD advises prologs not to call Slurm commands. When
# gdrcheck itself cannot run, the prolog passes (exit 0), so a broken
# install does not drain every node a job lands on. See docs/scheduler.md.
#
# slurm.conf (every node):
#   Prolog=/etc/slurm/gdrcheck-prolog.sh   (or a glob such as /etc/slurm/prolog.d/*)
#   PrologTimeout=60                      (a hung prolog drains the node too)
#
# Slurm gives its prologs no search path: programs are named by absolute path.
set -u
LOGGER=${LOGGER:-logger} # where the line goes: syslog
GDRCHECK=${GDRCHECK:-/usr/local/bin/gdrcheck}
SCONTROL=${SCONTROL:-/usr/bin/scontrol}
GDRCHECK_EXPECT=${GDRCHECK_EXPECT:-/etc/gdrcheck/site.yaml} # the site profile, used when readable
GDRCHECK_TIMEOUT=${GDRCHECK_TIMEOUT:-30s}                   # discovery and collection
GDRCHECK_DRAIN=${GDRCHECK_DRAIN:-none}                      # apply: drain with gdrcheck's reason first

args=(--timeout "$GDRCHECK_TIMEOUT" health --mode slurm-prolog --drain "$GDRCHECK_DRAIN" --scontrol "$SCONTROL" --drain-timeout 10s)
if [ -r "$GDRCHECK_EXPECT" ]; then
	args+=(--expect "$GDRCHECK_EXPECT")
fi
if [ -n "${SLURMD_NODENAME:-}" ]; then
	args+=(--node "$SLURMD_NODENAME")
fi

# The prolog's output is not kept by Slurm: the line goes to syslog.
line=$("$GDRCHECK" "${args[@]}" 2>/dev/null)
rc=$?
"$LOGGER" -t gdrcheck-prolog -- "job ${SLURM_JOB_ID:-?}: exit $rc: $line" 2>/dev/null || true
case $rc in
0 | 1) exit "$rc" ;;
*) # gdrcheck missing (127), killed, or refusing its options: not the node's fault
	"$LOGGER" -t gdrcheck-prolog -- "gdrcheck could not run (exit $rc); the prolog passes" 2>/dev/null || true
	exit 0
	;;
esac
