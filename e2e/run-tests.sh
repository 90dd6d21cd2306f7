#!/bin/sh
# Runs each cmocka test binary; fails if any fails.
status=0
for t in "$@"; do
	echo "== $t"
	"$t" || { echo "FAILED: $t"; status=1; }
done
exit $status
