#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make fuzz, one target: scripts/fuzz.sh NAME DIR RUNS TIMEOUT SEEDS [libFuzzer flags...]
# Runs DIR/fuzz_NAME for RUNS runs over DIR/NAME/corpus (new inputs land there) and the
# committed SEEDS; its log is DIR/NAME/log, a failing input DIR/NAME/crash-... (or
# leak-, timeout-, oom-). Prints one line; exits non-zero when the fuzzer failed.
name=$1 dir=$2 runs=$3 timeout=$4 seeds=$5
shift 5
work=$dir/$name
mkdir -p "$work/corpus"
t0=$(date +%s.%N)
"$dir/fuzz_$name" -runs="$runs" -timeout="$timeout" -print_final_stats=1 \
	-artifact_prefix="$work/" "$@" "$work/corpus" "$seeds" >"$work/log" 2>&1
rc=$?
t1=$(date +%s.%N)
final_stat() { sed -n "s/^stat::$1: *//p" "$work/log" | tail -n 1; }
if [ "$rc" -eq 0 ]; then
	n=$(final_stat number_of_executed_units)
	printf 'fuzz: %-7s ok: %s runs in %s, %s inputs in the corpus, %s MB peak (%s)\n' \
		"$name" "$n" "$(awk "BEGIN { s = $t1 - $t0; printf \"%.0f s (%.0f/s)\", s, ${n:-0} / s }")" \
		"$(ls "$work/corpus" | wc -l)" "$(final_stat peak_rss_mb)" "$work/log"
else
	why=$(grep -m 1 "^SUMMARY" "$work/log" ||
		grep -m 1 -E "ERROR|runtime error|ALARM|Killed" "$work/log" || tail -n 1 "$work/log")
	input=$(sed -n 's/.*Test unit written to //p' "$work/log" | tail -n 1)
	printf 'fuzz: %-7s FAILED (exit %s): %s; input %s (%s)\n' "$name" "$rc" \
		"$why" "${input:-none}" "$work/log"
fi
exit "$rc"
