#!/bin/bash
# The node agent's real eBPF programs, end to end: a CPU hog pinned to one rank's core
# is found as that rank's run-queue delay, the report names the rank, cause HostCPU and
# the hog; a healthy run blames nobody.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "agent e2e: skipped: needs root and kernel BTF"
	echo "agent e2e: 0 passed, 0 failed, 6 skipped"
	exit 0
fi
start_nats
start_analyzer --quiet
start_agent --interval-ms 500
fails=0
check() { if "$@"; then :; else fails=$((fails + 1)); fi; }

run_job host-8 8 300 host --fault-rank 5 --fault-step 40 $HOST_FAULT_OPTS
wait_report host-8 299
check check_report host-8 5 HostCPU
if grep -q 'preempted by stress (pid [0-9]*' "$WORK/host-8.json"; then
	echo "ok    the evidence names the hog: $(grep -o 'runq[^;]*stress[^;]*' "$WORK/host-8.json" | head -1)"
else
	echo "FAIL  the evidence does not name the hog"; fails=$((fails + 1))
fi

"$BIN/trainscope" timeline --nats "$NATS_URL" --job host-8 --out "$WORK/host-8.trace.json" ||
	die "timeline failed"
check python3 "$here/check_timeline.py" "$WORK/host-8.trace.json" 8 5 stress

run_job healthy-agent-8 8 300 none $HOST_FAULT_OPTS
wait_report healthy-agent-8 299
check check_report healthy-agent-8 healthy
if grep -q "preempted by" "$WORK/healthy-agent-8.json"; then
	echo "FAIL  a healthy run blames a preemptor"; fails=$((fails + 1))
else
	echo "ok    a healthy run blames no preemptor"
fi

metrics=$(curl -sf "$AGENT_METRICS") || die "no agent metrics"
samples=$(echo "$metrics" | awk '$1 == "trainscope_agent_host_samples_total" { print $2 }')
if [ "${samples:-0}" -gt 0 ] && echo "$metrics" | grep -q 'trainscope_agent_feature{feature="scheduling"} 1'; then
	echo "ok    agent metrics: $samples host samples, scheduling feature on"
else
	echo "FAIL  agent metrics"; fails=$((fails + 1))
fi
echo "agent e2e: $((6 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
