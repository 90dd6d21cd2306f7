#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's suites that run beside another one (a lane), timed as stages.
#   lane.sh start FILE NAME CMD ARGS...  starts CMD in the background; its output goes to
#                         FILE.NAME.log, its status to FILE.NAME.rc. CMD writes its own stage
#                         rows to FILE.NAME (make test-lane STAGES=FILE.NAME).
#   lane.sh join FILE NAME  waits for it (saying every minute that it does), prints its
#                         output, adds its rows to FILE, marked "(beside)", and exits with
#                         its status: its output comes whole, after the foreground's, not
#                         mixed into it line by line.
#   lane.sh stop FILE NAME  ends it (SIGTERM to its process group: each suite's own
#                         cleanup runs) and waits for it, 30 s at most.
# make test joins a lane even when the stage beside it failed, and stops it when it is
# interrupted, so that it never ends with a suite still running. The lane runs in a
# session of its own: a background job of make's shell ignores SIGINT, and the suites'
# traps could not undo that.
set -u
cmd=${1:-}
file=${2:-}
name=${3:-}
[ -n "$cmd" ] && [ -n "$file" ] && [ -n "$name" ] ||
	{ echo "usage: $0 start FILE NAME CMD... | join FILE NAME | stop FILE NAME" >&2; exit 2; }
shift 3
lane=$file.$name
case $cmd in
start)
	[ $# -gt 0 ] || { echo "$0: start needs a command" >&2; exit 2; }
	rm -f "$lane" "$lane.rc" "$lane.pid" && : >"$lane.log" || exit 1
	# its own make: the jobserver's descriptors stay with the caller's; the paths go in as
	# arguments, never into the script's text
	# shellcheck disable=SC2016
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL setsid sh -c \
		'echo $$ >"$1.pid"; l=$1; shift; "$@" >>"$l.log" 2>&1 </dev/null; echo $? >"$l.rc"' \
		sh "$lane" "$@" &
	# its process group known before this returns: stop needs it
	for _ in $(seq 50); do
		[ -s "$lane.pid" ] && break
		sleep 0.1
	done
	[ -s "$lane.pid" ] || { echo "$name: did not start" >&2; exit 1; }
	echo "$name: started beside the next stages, its output when it is joined ($lane.log)"
	;;
join)
	[ -e "$lane.log" ] || { echo "$name: never started ($lane.log missing)" >&2; exit 1; }
	t0=$(date +%s)
	last=$t0
	pid=$(cat "$lane.pid" 2>/dev/null)
	while [ ! -s "$lane.rc" ]; do
		now=$(date +%s)
		# its group gone and still no status: killed from outside, never to write one
		if ! kill -0 "-$pid" 2>/dev/null && [ ! -s "$lane.rc" ]; then
			cat "$lane.log"
			echo "$name: ended without a status (killed?)" >&2
			exit 1
		fi
		if [ $((now - last)) -ge 60 ]; then
			echo "$name: still running after $((now - t0)) s: $(tail -1 "$lane.log")"
			last=$now
		fi
		sleep 2
	done
	echo "== $name, run beside the stages before (waited $(($(date +%s) - t0)) s for it)"
	cat "$lane.log"
	[ ! -s "$lane" ] || awk '{ $1 = $1 "(beside)"; print }' "$lane" >>"$file"
	status=$(cat "$lane.rc")
	[ "$status" = 0 ] || echo "$name: failed ($status)"
	exit "$status"
	;;
stop)
	pid=$(cat "$lane.pid" 2>/dev/null)
	[ -n "$pid" ] && [ ! -s "$lane.rc" ] || exit 0
	echo "$name: stopping it (the suites beside clean up)"
	# a negative pid is the group (dash's kill takes no "--")
	kill -TERM "-$pid" 2>/dev/null
	for _ in $(seq 30); do
		kill -0 "-$pid" 2>/dev/null || exit 0
		sleep 1
	done
	echo "$name: still running 30 s after SIGTERM: killed" >&2
	kill -KILL "-$pid" 2>/dev/null
	;;
*) echo "usage: $0 start FILE NAME CMD... | join FILE NAME | stop FILE NAME" >&2; exit 2 ;;
esac
