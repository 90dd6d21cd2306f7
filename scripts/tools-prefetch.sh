#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's servers built while the tests run: the first suites need none of what
# e2e/k8s/tools.sh builds from Go modules (Kubernetes, CoreDNS, helm, Jaeger, Prometheus,
# the Collector, cert-manager, nats-server 2.12), so a cold cache's builds go in the
# background at idle priority (SCHED_IDLE: the CPU the tests leave, never theirs).
#   tools-prefetch.sh start DIR   start it; its output in DIR/tools.log, its exit status
#                                 in DIR/tools.rc when it ends
#   tools-prefetch.sh wait DIR    wait for it, saying every minute what it does; when it
#                                 failed, its log's tail (exit 0 all the same: each suite
#                                 runs tools.sh for what it needs, and builds it, skips
#                                 without Go or fails saying why, as without this)
# A warm cache makes it a few seconds of checks.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|wait DIR" >&2; exit 2; }
log=$dir/tools.log
rc=$dir/tools.rc
case $cmd in
start)
	mkdir -p "$dir" && rm -f "$rc" && : >"$log"
	idle="chrt --idle 0"
	$idle true 2>/dev/null || idle="nice -n 19"
	here=$(cd "$(dirname "$0")/.." && pwd)
	# detached: make's recipe returns at once; the build outlives a failed make test
	setsid sh -c "$idle bash '$here/e2e/k8s/tools.sh' >'$log' 2>&1; echo \$? >'$rc'" \
		</dev/null >/dev/null 2>&1 &
	echo "tools: building in the background ($idle), log $log"
	;;
wait)
	[ -e "$log" ] || [ -e "$rc" ] || { echo "tools: no background build under $dir" >&2; exit 1; }
	t0=$(date +%s)
	last=$t0
	while [ ! -s "$rc" ]; do
		now=$(date +%s)
		if [ $((now - t0)) -gt 5400 ]; then
			echo "tools: the background build ran 90 minutes: given up" >&2
			exit 1
		fi
		if [ $((now - last)) -ge 60 ]; then
			echo "tools: still building after $((now - t0)) s: $(tail -1 "$log" 2>/dev/null)"
			last=$now
		fi
		sleep 2
	done
	status=$(cat "$rc")
	if [ "$status" != 0 ]; then
		# as before there was a background build: each suite asks tools.sh for what it
		# needs, and builds it, skips (no Go) or fails saying why
		echo "tools: the background build failed ($status); the suites that need a tool" \
			"will try it themselves. Its log's tail:" >&2
		tail -20 "$log" >&2
		exit 0
	fi
	echo "tools: ready ($(grep -c 'building' "$log") built in the background, $(( $(date +%s) - t0 )) s waited)"
	;;
*) echo "usage: $0 start|wait DIR" >&2; exit 2 ;;
esac
