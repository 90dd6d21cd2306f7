#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench, agent part: the node agent's CPU and memory, and the eBPF programs' own
# cost, while a load generator makes >= 50,000 context switches per second.
set -e
BUILD=${BUILD:-build}
SECONDS_RUN=${SECONDS_RUN:-10}
. "$(dirname "$0")/../e2e/lib.sh"

if [ "$(id -u)" -ne 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "agent bench: skipped (needs root and kernel BTF)"
	exit 0
fi
start_nats
start_agent
agent_pid=$(pgrep -f "trainscope-agent --nats $NATS_URL" | head -1)
ticks=$(getconf CLK_TCK)
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { print s + 0 }'; }
ctxt() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }
bpf_ns() { # total run time of the agent's programs
	bpftool prog show 2>/dev/null | awk '/name on_/ { for (i = 1; i < NF; i++) if ($i == "run_time_ns") s += $(i + 1) } END { print s + 0 }'
}
old_stats=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 > /proc/sys/kernel/bpf_stats_enabled
trap 'echo "$old_stats" > /proc/sys/kernel/bpf_stats_enabled; cleanup' EXIT

RANK=0 WORLD_SIZE=1 "$BIN/trainscope" run --nats "$NATS_URL" --job bench -- "$BUILD/bench/pingpong" "$SECONDS_RUN" \
	>"$WORK/pingpong.out" 2>"$WORK/pingpong.log" &
load=$!
wait_for 15 grep -q "tracing rank" "$AGENT_LOG" || die "the agent did not trace the load generator"
c0=$(cpu_ns "$agent_pid"); x0=$(ctxt); b0=$(bpf_ns); t0=$(date +%s.%N)
wait "$load"
t1=$(date +%s.%N); c1=$(cpu_ns "$agent_pid"); x1=$(ctxt); b1=$(bpf_ns)
rss_kb=$(awk '/VmRSS/ { print $2 }' "/proc/$agent_pid/status")
python3 - "$t0" "$t1" "$c0" "$c1" "$x0" "$x1" "$b0" "$b1" "$ticks" "$rss_kb" <<'PY'
import sys
t0, t1, c0, c1, x0, x1, b0, b1, tck, rss = map(float, sys.argv[1:])
dt = t1 - t0
cs = (x1 - x0) / dt
agent = (c1 - c0) / 1e9 / dt * 100
bpf = (b1 - b0) / 1e9 / dt * 100
row = lambda w, v, u, b: print("| %-46s | %14.2f %-10s | %-22s |" % (w, v, u, b))
print("\nnode agent benchmark (%.0f s of load)\n" % dt)
print("| %-46s | %25s | %-22s |" % ("what", "measured", "budget (design.md)"))
print("|%s|%s|%s|" % ("-" * 48, "-" * 27, "-" * 24))
row("context switches on the node", cs, "/s", ">= 50,000 /s (load)")
row("agent process CPU (user + system)", agent, "% of 1 core", "<= 0.5 % of one core")
row("agent resident memory", rss / 1024, "MiB", "<= 32 MiB")
row("eBPF programs' run time (all CPUs)", bpf, "% of 1 core", "-")
row("eBPF cost per context switch", (b1 - b0) / max(x1 - x0, 1), "ns", "-")
PY
echo
echo "per program (run count, mean ns; bpf_stats on during the run):"
bpftool prog show 2>/dev/null | awk '/name on_/ { n = ""; t = 0; c = 0; for (i = 1; i < NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) } if (c) printf "  %-16s %12d runs %8.1f ns\n", n, c, t / c; else printf "  %-16s            0 runs\n", n }'
