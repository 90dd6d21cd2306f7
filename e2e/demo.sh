#!/bin/bash
# make demo: a local NATS, the analyzer, and an 8-rank synthetic job under
# `trainscope run` with one rank slowed; prints the report and stops everything.
#   FAULT=compute (default) | storage | none     RANKS=8     STEPS=150
set -e
BUILD=${BUILD:-build}
FAULT=${FAULT:-compute}
RANKS=${RANKS:-8}
STEPS=${STEPS:-150}
. "$(dirname "$0")/lib.sh"

case "$FAULT" in
compute | storage | none) ;;
*) die "FAULT must be compute, storage or none (host comes with the node agent)" ;;
esac
start_nats
start_analyzer --quiet
echo "demo: NATS at $NATS_URL, analyzer metrics at $ANALYZER_METRICS"
echo "demo: $RANKS ranks, $STEPS steps, fault '$FAULT' on rank 5 from step 40"
run_job demo "$RANKS" "$STEPS" "$FAULT" --fault-rank 5 --fault-step 40
wait_report demo $((STEPS - 1))
echo
"$BIN/trainscope" report --dir "$REPORTS" --job demo
echo
echo "demo: the report as JSON (SlowNodeReport status + sysTrace fields): trainscope report --json"
