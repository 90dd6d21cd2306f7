#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each cmocka test binary; fails if any fails. A failed one's output is printed again
# at the end, with its name: a CI run often shows only a log's tail. With TS_TEST_QEMU set
# (make arm64-test) each runs under that emulator.
out=$(mktemp -d /tmp/trainscope-tests-XXXXXX) || exit 1
trap 'rm -rf "$out"' EXIT
failed=
for t in "$@"; do
	echo "== $t"
	log=$out/$(basename "$t").log
	# the status through a file: a pipe's is tee's
	{ ${TS_TEST_QEMU:+"$TS_TEST_QEMU"} "$t" 2>&1; echo $? >"$log.rc"; } | tee "$log"
	[ "$(cat "$log.rc")" = 0 ] || { echo "FAILED: $t"; failed="$failed $t"; }
done
[ -z "$failed" ] && exit 0
for t in $failed; do
	echo "== FAILED: $t (its output's last 40 lines again)"
	tail -40 "$out/$(basename "$t").log"
done
echo "== failed:$failed"
exit 1
