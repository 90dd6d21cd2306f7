#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The node agent's real eBPF programs, end to end: a CPU hog pinned to one rank's core
# is found as that rank's run-queue delay, the report names the rank, cause HostCPU and
# the hog; a healthy run blames nobody; forged announcements trace nothing.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "agent e2e: skipped: needs root and kernel BTF"
	echo "agent e2e: 0 passed, 0 failed, 8 skipped"
	exit 0
fi
start_nats
start_analyzer --quiet
# the node's network ports from a sysfs tree of the test's own: an Ethernet port with a
# device behind it, whose errors the test raises later
mkdir -p "$WORK/sys/class/net/eth9/device" "$WORK/sys/class/net/eth9/statistics"
for f in rx_errors tx_errors tx_dropped; do echo 0 >"$WORK/sys/class/net/eth9/statistics/$f"; done
start_agent --interval-ms 500 --sysfs "$WORK/sys"
check() { if "$@"; then :; else fails=$((fails + 1)); fi; }

run_job host-8 8 200 host --fault-rank 5 --fault-step 40 $HOST_FAULT_OPTS
wait_report host-8 199
check check_report host-8 5 HostCPU --passing
if grep -q 'preempted by stress (pid [0-9]*' "$WORK/host-8.json"; then
	pass "the evidence names the hog: $(grep -o 'runq[^;]*stress[^;]*' "$WORK/host-8.json" | head -1)"
else
	fail "the evidence does not name the hog"
fi

"$BIN/trainscope" timeline --nats "$NATS_URL" --job host-8 --out "$WORK/host-8.trace.json" ||
	die "timeline failed"
check python3 "$here/check_timeline.py" "$WORK/host-8.trace.json" 8 5 stress

run_job healthy-agent-8 8 300 none $HOST_FAULT_OPTS
wait_report healthy-agent-8 299
check check_report healthy-agent-8 healthy
if grep -q "preempted by" "$WORK/healthy-agent-8.json"; then
	fail "a healthy run blames a preemptor"
else
	pass "a healthy run blames no preemptor"
fi

echo 7 >"$WORK/sys/class/net/eth9/statistics/rx_errors"
nic_errors() { curl -sf "$AGENT_METRICS" | grep -q '^trainscope_node_nic_errors_total 7$'; }
if wait_for 10 nic_errors; then
	pass "agent metrics: the node's port errors read from sysfs (7)"
else
	fail "agent metrics: no port errors: $(curl -sf "$AGENT_METRICS" | grep nic_)"
fi
metrics=$(curl -sf "$AGENT_METRICS") || die "no agent metrics"
samples=$(echo "$metrics" | awk '$1 == "trainscope_agent_host_samples_total" { print $2 }')
if [ "${samples:-0}" -gt 0 ] && echo "$metrics" | grep -q 'trainscope_agent_feature{feature="scheduling"} 1'; then
	pass "agent metrics: $samples host samples, scheduling feature on"
else
	fail "agent metrics"
fi
# ---- forged announcements: an agent in pods-only mode (as in a pod) traces none of them (host
# pid 1, a process announced without a pod, one outside the pod that announced it); a rank
# inside the announcing pod's cgroup is traced -----------------------------------------------
cg2=/sys/fs/cgroup
[ -f "$cg2/cgroup.controllers" ] || cg2=/sys/fs/cgroup/unified
cg_id() { stat -c %i "$cg2$(sed -n 's/^0:://p' "/proc/$1/cgroup")"; }
forged() {
	local uid=0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0 pod log m pid refused
	pod="$cg2/trainscope-e2e-kubepods/pod$uid"
	mkdir -p "$pod"
	sleep 600 &
	pid=$!
	PIDS="$PIDS $pid"
	echo "$pid" >"$pod/cgroup.procs"
	log="$WORK/agent-pods.log"
	"$BIN/trainscope-agent" --nats "$NATS_URL" --node forge-node --pods-only --metrics-port 0 \
		--interval-ms 200 2>"$log" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "metrics on" "$log" || return 1
	m=$(grep -o 'http://[0-9.:]*/metrics' "$log" | head -1)
	a() { "$BIN/forge" --nats "$NATS_URL" --announce forge-node "$@"; }
	refused() { [ "$(curl -sf -m 2 "$m" | awk '$1 == "trainscope_agent_refused_announcements_total" { print $2 }')" = "$1" ]; }
	a --job forged --rank 0 --pid 1 --cgroup-id "$(cg_id 1)" --pod-uid "$uid" &&
		a --job forged --rank 1 --pid $$ --cgroup-id "$(cg_id $$)" &&
		a --job forged --rank 2 --pid $$ --cgroup-id "$(cg_id $$)" --pod-uid "$uid" ||
		return 1
	# a forger announces the real rank first, with another pod's uid: refused; the real
	# relay's announcement after it is checked anew and traced
	a --job real --rank 0 --pid "$pid" --cgroup-id "$(stat -c %i "$pod")" \
		--pod-uid 99999999-0000-0000-0000-000000000000 || return 1
	wait_for 20 refused 4 || { echo "      refusals: $(curl -sf -m 2 "$m" | grep refused_announcements_total)"; return 1; }
	a --job real --rank 0 --pid "$pid" --cgroup-id "$(stat -c %i "$pod")" --pod-uid "$uid" ||
		return 1
	wait_for 20 grep -q "tracing rank 0 of default/real" "$log" || { echo "      the real rank was not traced"; return 1; }
	echo "      $(grep -m1 'not tracing' "$log" | sed 's/.*agent: //')"
	flood "$uid" "$pod" "$log" "$m" || return 1
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	rmdir "$pod" "$cg2/trainscope-e2e-kubepods" 2>/dev/null || true
	! grep -q "agent: tracing rank . of default/forged" "$log"
}
# flood UID POD LOG METRICS: 300 announcements whose processes do not exist, then a real
# rank announced every 2 s as its relay does: traced once the flood's entries are past
# their grace; the agent's CPU over the flood under 5 % of a core.
flood() {
	local uid=$1 pod=$2 log=$3 m=$4 apid pid2 t0 t1 c0 c1 i
	apid=$(pgrep -f -- "--node forge-node" | head -1)
	ticks() { awk '{ print $14 + $15 }' "/proc/$apid/stat"; }
	c0=$(ticks) t0=$(date +%s%N)
	for i in $(seq 0 299); do
		"$BIN/forge" --nats "$NATS_URL" --announce forge-node --job flood --rank "$i" \
			--pid $((4000000 + i)) --cgroup-id 12345 --pod-uid "$uid" || return 1
	done
	sleep 600 &
	pid2=$!
	PIDS="$PIDS $pid2"
	echo "$pid2" >"$pod/cgroup.procs"
	traced2() {
		"$BIN/forge" --nats "$NATS_URL" --announce forge-node --job real2 --rank 0 \
			--pid "$pid2" --cgroup-id "$(stat -c %i "$pod")" --pod-uid "$uid" >/dev/null &&
			grep -q "tracing rank 0 of default/real2" "$log"
	}
	wait_for 40 traced2 || { echo "      the real rank announced during the flood was not traced"; return 1; }
	c1=$(ticks) t1=$(date +%s%N)
	local pct=$(( (c1 - c0) * 100 * 1000000000 / $(getconf CLK_TCK) / (t1 - t0) ))
	echo "      300 unresolvable announcements: the real rank traced after $(( (t1 - t0) / 1000000000 )) s, agent CPU ${pct}% of a core, $(curl -sf -m 2 "$m" | awk '$1 == "trainscope_agent_announcements_dropped_total" { print $2 }') announcements dropped"
	kill "$pid2"
	[ "$pct" -lt 5 ]
}
if forged; then
	pass "forged announcements (host pid 1, no pod, another pod, the real rank's with another pod's uid first): none traced, 4 refused; the real rank traced; a flood of 300 unresolvable ones holds no real rank out"
else
	fail "forged announcements"
fi
served_as_declared "$BIN/trainscope-agent" "$AGENT_METRICS"
echo "agent e2e: $((9 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
