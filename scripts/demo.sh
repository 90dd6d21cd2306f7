#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make demo: a local NATS, the analyzer, and an 8-rank synthetic job under
# `trainscope run` with one rank slowed; prints the report and stops everything.
#   FAULT=compute (default) | storage | host | none     RANKS=8     STEPS=150
#   PLOT=FILE.svg: where the picture of the job goes (default $BUILD/demo-heatmap.svg)
# FAULT=host also runs the eBPF node agent (root) and pins a CPU hog to rank 5's core.
set -e
BUILD=${BUILD:-build}
FAULT=${FAULT:-compute}
RANKS=${RANKS:-8}
# the host fault is judged on the agent's samples (every 500 ms here): 5 make an alarm
[ "$FAULT" = host ] && STEPS=${STEPS:-300}
STEPS=${STEPS:-150}
. "$(dirname "$0")/../e2e/lib.sh"

case "$FAULT" in
compute | storage | none) extra="" ;;
host) extra="$HOST_FAULT_OPTS" ;;
*) die "FAULT must be compute, storage, host or none" ;;
esac
start_nats
start_analyzer --quiet
if [ "$FAULT" = host ]; then
	[ "$(id -u)" -eq 0 ] || die "FAULT=host runs the eBPF node agent: run as root"
	start_agent --interval-ms 500
	echo "demo: node agent up (eBPF), metrics at $AGENT_METRICS"
fi
echo "demo: NATS at $NATS_URL, analyzer metrics at $ANALYZER_METRICS"
echo "demo: $RANKS ranks, $STEPS steps, fault '$FAULT' on rank 5 from step 40"
run_job demo "$RANKS" "$STEPS" "$FAULT" --fault-rank 5 --fault-step 40 $extra
wait_report demo $((STEPS - 1))
echo
"$BIN/trainscope" report --dir "$REPORTS" --job demo
echo
# the picture: each rank's time per step in the blamed phase against the median rank
PLOT=${PLOT:-$BUILD/demo-heatmap.svg}
if "$BIN/trainscope" report --dir "$REPORTS" --job demo --nats "$NATS_URL" --plot "$PLOT" >/dev/null; then
	echo "demo: the job drawn (rank 5's row stands out from step 40): $PLOT"
fi
echo "demo: the report as JSON (SlowNodeReport status + sysTrace fields): trainscope report --json"
