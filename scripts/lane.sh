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
# make test joins a lane even when the stage beside it failed, so that it never ends with
# a suite still running.
set -u
cmd=${1:-}
file=${2:-}
name=${3:-}
[ -n "$cmd" ] && [ -n "$file" ] && [ -n "$name" ] ||
	{ echo "usage: $0 start FILE NAME CMD... | join FILE NAME" >&2; exit 2; }
shift 3
lane=$file.$name
case $cmd in
start)
	[ $# -gt 0 ] || { echo "$0: start needs a command" >&2; exit 2; }
	rm -f "$lane" "$lane.rc" "$lane.log"
	# its own make: the jobserver's descriptors stay with the caller's
	(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$@" >"$lane.log" 2>&1 </dev/null
	 echo $? >"$lane.rc") &
	echo "$name: started beside the next stages, its output when it is joined ($lane.log)"
	;;
join)
	[ -e "$lane.log" ] || { echo "$name: never started ($lane.log missing)" >&2; exit 1; }
	t0=$(date +%s)
	last=$t0
	while [ ! -s "$lane.rc" ]; do
		now=$(date +%s)
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
*) echo "usage: $0 start FILE NAME CMD... | join FILE NAME" >&2; exit 2 ;;
esac
