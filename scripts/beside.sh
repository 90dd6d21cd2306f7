#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two suites side by side, for make test: the fault suite and its ThreadSanitizer run,
# which each spend about two thirds of their five minutes waiting on jobs that outlast a
# fault (bench/results/make-test.md).
#   beside.sh LOG CMD2 [ARGS...] -- CMD1 [ARGS...]
# runs CMD2 in the background, its output into LOG, and CMD1 in the foreground; both run
# to their end. Then it prints LOG under a line naming CMD2 and its status, and exits
# with CMD1's status if CMD1 failed, else with CMD2's.
set -u
usage() { echo "usage: $0 LOG CMD2 [ARGS...] -- CMD1 [ARGS...]" >&2; exit 2; }
[ $# -ge 4 ] || usage
log=$1
shift
second=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	second+=("$1")
	shift
done
[ ${#second[@]} -gt 0 ] && [ $# -ge 2 ] || usage
shift
mkdir -p "$(dirname "$log")" || exit 1
"${second[@]}" >"$log" 2>&1 &
pid=$!
# interrupted: the background suite goes too (it starts its own servers and jobs)
trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
"$@"
first=$?
wait "$pid"
other=$?
trap - INT TERM
echo "== beside it: ${second[*]} (exit $other), its output:"
cat "$log"
[ "$first" -ne 0 ] && exit "$first"
exit "$other"
