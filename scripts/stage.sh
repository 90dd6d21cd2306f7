#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make test's stages, timed: `stage.sh FILE NAME cmd args...` runs cmd and appends its
# name, seconds and exit status to FILE; `stage.sh FILE` prints the table of FILE. A
# stage that fails prints the table so far (the failing stage last) and exits with its
# status, so that a long run always ends by saying where its time went.
file=$1
shift
table() {
	[ -s "$file" ] || return 0
	echo "== make test, stage by stage"
	awk '{ t += $2; printf "  %-22s %7.1f s%s\n", $1, $2, $3 ? "  FAILED (" $3 ")" : "" }
	     END { printf "  %-22s %7.1f s (%.1f min)\n", "total", t, t / 60 }' "$file"
}
if [ $# -eq 0 ]; then
	table
	exit 0
fi
name=$1
shift
mkdir -p "$(dirname "$file")"
t0=$(date +%s.%N)
"$@"
rc=$?
echo "$name $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') $rc" >>"$file"
[ $rc -eq 0 ] || { table; exit $rc; }
