#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's work done beside its stages. Builds run at idle priority (SCHED_IDLE and
# idle I/O: the CPU the tests leave): the first suites need none of what
# e2e/k8s/tools.sh builds (Kubernetes, CoreDNS, helm, Jaeger, the Collector, cert-manager
# and nats-server 2.12 from Go modules; etcd and Prometheus from Debian), nor the
# sanitizer builds of the scale and fault suites, so a cold cache's builds go on beside
# them. Suites run beside the node e2e (make test-lane) at the tests' own priority.
#   background.sh start [--now] DIR [CMD ARGS...]  start CMD (default: e2e/k8s/tools.sh),
#                               unless DIR's is still running, in a session of its own;
#                               its output in DIR/bg.log, its pid (its process group's) in
#                               DIR/bg.pid, its exit status in DIR/bg.rc when it ends.
#                               --now: at the caller's priority, not idle
#   background.sh wait DIR      wait for a build, saying every minute what it does
#   background.sh join DIR      wait for suites, then print their output whole and exit
#                               with their status (1 when they ended without one)
#   background.sh stop DIR      SIGTERM to its process group (each suite's cleanup runs),
#                               SIGKILL 30 s later
# wait exits 0 even when the build failed, was lost or ran 90 minutes (it says so, with
# the log's tail): each suite builds what it needs itself, skips without Go or fails
# saying why, as without this. A warm cache makes it seconds of checks. A session of its
# own: a background job of make's shell ignores SIGINT, which the suites' traps could not
# undo, so make test stops its suites with stop when interrupted.
set -u
usage="usage: $0 start [--now] DIR [CMD ARGS...] | wait DIR | join DIR | stop DIR"
cmd=${1:-}
now=
[ "$cmd" = start ] && [ "${2:-}" = --now ] && { now=1; shift; }
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
shift 2
name=$(basename "$dir")
log=$dir/bg.log
rc=$dir/bg.rc
pidf=$dir/bg.pid

running() { [ -s "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }

# Says why the build gave nothing, with its log's tail, and lets make test go on.
given_up() {
	echo "$name: $*; the suites that need it will build it themselves. The log's tail:" >&2
	tail -20 "$log" >&2 2>/dev/null
	exit 0
}

# Waits until DIR/bg.rc is written, saying every minute that it still VERBs. Returns 1
# when it ended without writing it, 2 after 90 minutes.
await() {
	t0=$(date +%s)
	last=$t0
	while [ ! -s "$rc" ]; do
		t=$(date +%s)
		# the wrapper writes its pid first: give it a few seconds to start; rc is read
		# again, as it may have been written just before the end
		if [ $((t - t0)) -gt 10 ] && ! running && [ ! -s "$rc" ]; then
			return 1
		fi
		[ $((t - t0)) -le 5400 ] || return 2
		if [ $((t - last)) -ge 60 ]; then
			echo "$name: still $1 after $((t - t0)) s: $(tail -1 "$log" 2>/dev/null)"
			last=$t
		fi
		sleep 2
	done
}

case $cmd in
start)
	mkdir -p "$dir" || exit 1
	if running; then
		echo "$name: a background build of $dir is still running (pid $(cat "$pidf")): waited for"
		exit 0
	fi
	rm -f "$rc" "$pidf" && : >"$log"
	prio=
	if [ -z "$now" ]; then
		prio="chrt --idle 0"
		$prio true 2>/dev/null || prio="nice -n 19"
		! ionice -c 3 true 2>/dev/null || prio="$prio ionice -c 3"
	fi
	[ $# -gt 0 ] || set -- bash "$(cd "$(dirname "$0")/.." && pwd)/e2e/k8s/tools.sh"
	# detached (its own session): make's recipe returns at once, and the build outlives
	# a failed make test; the paths go in as arguments, never into the script's text. A
	# make in it is not one of the caller's jobs: the jobserver's descriptors stay here.
	# shellcheck disable=SC2016
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL setsid sh -c \
		'echo $$ >"$2"; p=$1 l=$3 r=$4; shift 4; $p "$@" >>"$l" 2>&1; echo $? >"$r"' \
		sh "$prio" "$pidf" "$log" "$rc" "$@" </dev/null >/dev/null 2>&1 &
	# its process group known before this returns: stop needs it
	for _ in $(seq 50); do
		[ -s "$pidf" ] && break
		sleep 0.1
	done
	if [ -n "$now" ]; then
		echo "$name: running beside the next stages, its output when it is joined ($log)"
	else
		echo "$name: building in the background ($prio), log $log"
	fi
	;;
wait)
	[ -e "$log" ] || given_up "no background build under $dir"
	t0=$(date +%s)
	await building
	case $? in
	1) given_up "the background build ended without a status" ;;
	2) given_up "the background build ran 90 minutes" ;;
	esac
	status=$(cat "$rc")
	[ "$status" = 0 ] || given_up "the background build failed ($status)"
	echo "$name: ready ($(($(date +%s) - t0)) s waited)"
	;;
join)
	[ -e "$log" ] || { echo "$name: never started ($log missing)" >&2; exit 1; }
	t0=$(date +%s)
	await running
	got=$?
	echo "== $name, run beside the stages before (waited $(($(date +%s) - t0)) s for it)"
	cat "$log"
	[ "$got" = 0 ] || { echo "$name: ended without a status, or ran 90 minutes" >&2; exit 1; }
	status=$(cat "$rc")
	[ "$status" = 0 ] || echo "$name: failed ($status)"
	exit "$status"
	;;
stop)
	running && [ ! -s "$rc" ] || exit 0
	pid=$(cat "$pidf")
	echo "$name: stopping it (its suites clean up)"
	# a negative pid is the group (dash's kill takes no "--")
	kill -TERM "-$pid" 2>/dev/null
	for _ in $(seq 30); do
		kill -0 "-$pid" 2>/dev/null || exit 0
		sleep 1
	done
	echo "$name: still running 30 s after SIGTERM: killed" >&2
	kill -KILL "-$pid" 2>/dev/null
	;;
*) echo "$usage" >&2; exit 2 ;;
esac
