#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tsan-run.sh DIR CMD...: runs CMD (an e2e script, with BUILD naming a build of
# make SAN=thread) and fails if any program it started under ThreadSanitizer reported.
# An e2e script sends its daemons' stderr to files it deletes and kills them without
# looking at their exit status, so each report goes to a file of DIR (log_path) instead,
# where it outlives them; they are printed at the end. Reports that scripts/tsan.supp
# names (the uninstrumented libraries' own locking) are not written.
# Programs that drop root must write there too: DIR is made writable for all.
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"
mkdir -p "$dir" && chmod 1777 "$dir" || exit 2
dir=$(cd "$dir" && pwd)
# history_size: the earlier access of a race is remembered further back (more memory),
# else its stack often reads "failed to restore".
TSAN_OPTIONS="suppressions=$here/tsan.supp log_path=$dir/tsan second_deadlock_stack=1 history_size=4 ${TSAN_EXTRA:-}"
export TSAN_OPTIONS
# the shadow memory beside the heap, and 5-15 times the CPU: an e2e script's memory bounds
# and deadlines (wait_for) allow this much more
export E2E_MEM_FACTOR=${E2E_MEM_FACTOR:-4} E2E_TIME_FACTOR=${E2E_TIME_FACTOR:-3}
"$@"
rc=$?
n=0
for f in "$dir"/tsan.*; do # a program writes its file only when it has something to say
	[ -e "$f" ] || continue
	n=$((n + 1))
	echo "==== $f"
	cat "$f"
done
if [ "$n" -gt 0 ]; then
	echo "tsan-run: $n programs reported under ThreadSanitizer (files in $dir)" >&2
	exit 1
fi
echo "tsan-run: no ThreadSanitizer report"
exit $rc
