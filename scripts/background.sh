#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's builds done while the tests run, in the background at idle priority
# (SCHED_IDLE and idle I/O: the CPU the tests leave). The first suites need none of what
# e2e/k8s/tools.sh builds (Kubernetes, CoreDNS, helm, Jaeger, the Collector, cert-manager
# and nats-server 2.12 from Go modules; etcd and Prometheus from Debian), nor the
# sanitizer builds of the scale and fault suites, so a cold cache's builds go on beside
# them.
#   background.sh start DIR [CMD ARGS...]  start CMD (default: e2e/k8s/tools.sh), unless
#                               DIR's is still running; its output in DIR/bg.log, its
#                               pid in DIR/bg.pid, its exit status in DIR/bg.rc when it ends
#   background.sh wait DIR      wait for it, saying every minute what it does
# wait exits 0 even when the build failed, was lost or ran 90 minutes (it says so, with
# the log's tail): each suite builds what it needs itself, skips without Go or fails
# saying why, as without this. A warm cache makes it seconds of checks.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR [CMD ARGS...] | wait DIR" >&2; exit 2; }
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

case $cmd in
start)
	mkdir -p "$dir" || exit 1
	if running; then
		echo "$name: a background build of $dir is still running (pid $(cat "$pidf")): waited for"
		exit 0
	fi
	rm -f "$rc" "$pidf" && : >"$log"
	idle="chrt --idle 0"
	$idle true 2>/dev/null || idle="nice -n 19"
	! ionice -c 3 true 2>/dev/null || idle="$idle ionice -c 3"
	[ $# -gt 0 ] || set -- bash "$(cd "$(dirname "$0")/.." && pwd)/e2e/k8s/tools.sh"
	# detached (its own session): make's recipe returns at once, and the build outlives
	# a failed make test; the paths go in as arguments, never into the script's text. A
	# make in it is not one of the caller's jobs: the jobserver's descriptors stay here.
	# shellcheck disable=SC2016
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL setsid sh -c \
		'echo $$ >"$2"; p=$1 l=$3 r=$4; shift 4; $p "$@" >>"$l" 2>&1; echo $? >"$r"' \
		sh "$idle" "$pidf" "$log" "$rc" "$@" </dev/null >/dev/null 2>&1 &
	echo "$name: building in the background ($idle), log $log"
	;;
wait)
	[ -e "$log" ] || given_up "no background build under $dir"
	t0=$(date +%s)
	last=$t0
	while [ ! -s "$rc" ]; do
		now=$(date +%s)
		# the wrapper writes its pid first: give it a few seconds to start
		if [ $((now - t0)) -gt 10 ] && ! running && [ ! -s "$rc" ]; then
			given_up "the background build ended without a status"
		fi
		[ $((now - t0)) -le 5400 ] || given_up "the background build ran 90 minutes"
		if [ $((now - last)) -ge 60 ]; then
			echo "$name: still building after $((now - t0)) s: $(tail -1 "$log" 2>/dev/null)"
			last=$now
		fi
		sleep 2
	done
	status=$(cat "$rc")
	[ "$status" = 0 ] || given_up "the background build failed ($status)"
	echo "$name: ready ($(($(date +%s) - t0)) s waited)"
	;;
*) echo "usage: $0 start DIR [CMD ARGS...] | wait DIR" >&2; exit 2 ;;
esac
