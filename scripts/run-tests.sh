#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each cmocka test binary; fails if any fails. With TS_TEST_QEMU set (make
# arm64-test) each runs under that emulator.
status=0
for t in "$@"; do
	echo "== $t"
	${TS_TEST_QEMU:+"$TS_TEST_QEMU"} "$t" || { echo "FAILED: $t"; status=1; }
done
exit $status
