#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's stages, timed: `stage.sh FILE NAME cmd args...` runs cmd and appends its
# name, seconds, exit status and CPU seconds (its children's user and system time) to
# FILE; `stage.sh FILE` prints the table of FILE, and the wall clock since FILE.t0 was
# written (make test writes it first: it holds the time the stages leave out, the
# background builds' start among it). A stage that fails prints the table so far (the failing stage last)
# and exits with its status, so that a long run always ends by saying where its time went
# (with STAGE_QUIET set it only exits: the caller prints the table once it has joined
# what ran beside). `stage.sh FILE --beside OTHER` adds OTHER's rows to FILE, marked
# "(beside)": the stages of suites that ran beside others (make test-lane).
file=$1
shift
if [ "${1:-}" = --beside ]; then
	[ ! -s "${2:-}" ] || awk '{ $1 = $1 "(beside)"; print }' "$2" >>"$file"
	exit 0
fi
table() {
	[ -s "$file" ] || return 0
	echo "== make test, stage by stage"
	wall=
	[ -s "$file.t0" ] && wall=$(awk -v b="$(date +%s.%N)" '{ printf "%.1f", b - $1 }' "$file.t0")
	awk -v wall="$wall" '{ t += $2; c += $4
		printf "  %-22s %7.1f s  cpu %6.1f s%s\n", $1, $2, $4, $3 ? "  FAILED (" $3 ")" : "" }
	     END { printf "  %-22s %7.1f s  cpu %6.1f s\n", "stages, added up", t, c
		   if (wall != "") printf "  %-22s %7.1f s (%.1f min)\n", "wall clock", wall, wall / 60 }' "$file"
}
# The CPU seconds of this shell's waited-for children so far (/proc/PID/stat's cutime and
# cstime, after the command's name, which may hold spaces).
cpu() { sed 's/.*) //' /proc/$$/stat | awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }'; }
if [ $# -eq 0 ]; then
	table
	exit 0
fi
name=$1
shift
mkdir -p "$(dirname "$file")"
t0=$(date +%s.%N)
c0=$(cpu)
"$@"
rc=$?
echo "$name $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') $rc $(awk -v a="$c0" -v b="$(cpu)" 'BEGIN { printf "%.1f", b - a }')" >>"$file"
[ $rc -eq 0 ] || { [ -n "${STAGE_QUIET:-}" ] || table; exit $rc; }
