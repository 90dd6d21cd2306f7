#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trainscope run --local end to end: one command starts its own nats-server and analyzer,
# runs the synthetic job with rank 5's compute slowed, prints the report naming rank 5,
# keeps the picture and timeline, passes the command's exit status through and leaves
# no server behind; the same after a Ctrl-C (SIGINT to the foreground process group);
# a missing nats-server is said with how to install it.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"

# the private folders go under $TMPDIR: a server or analyzer left behind still names it
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
# leftovers NAME: no process of ours left (their command lines name $TMPDIR), no folder
leftovers() {
	local left
	left=$(pgrep -af -- "$TMPDIR" || true)
	if [ -z "$left" ] && [ -z "$(ls -A "$TMPDIR")" ]; then
		pass "$1: no nats-server or analyzer left, private folder removed"
	else
		fail "$1: left behind: ${left:-(no process)} $(ls -A "$TMPDIR")"
	fi
}

# the job, then exit 7: the report names rank 5, the status is the command's
job=local-compute out="$WORK/out"
t0=$(date +%s)
rc=0
"$BIN/trainscope" run --local --job $job --out "$out" -- sh -c '"$0" "$@" && exit 7' \
	"$BIN/workload" --ranks 8 --steps 150 --fault compute --fault-rank 5 --fault-step 40 \
	>"$WORK/$job.out" 2>"$WORK/$job.err" || rc=$?
echo "      $job: $(($(date +%s) - t0)) s"
if [ "$rc" -eq 7 ]; then
	pass "the command's exit status passed through (7)"
else
	fail "exit status $rc, not 7: $(tail -5 "$WORK/$job.err")"
fi
if grep -q "slow rank 5  cause Compute" "$WORK/$job.out" &&
	python3 "$(dirname "$0")/check_report.py" "$out/default_$job.json" 5 Compute \
		>"$WORK/check.txt"; then
	pass "the printed report names rank 5 (Compute), kept as $out/default_$job.json"
else
	cat "$WORK/$job.out" "$WORK/check.txt"; fail "the report of $job"
fi
if [ -s "$out/heatmap.svg" ] && [ -s "$out/timeline.json" ] &&
	grep -q "wrote $out/heatmap.svg" "$WORK/$job.out" &&
	grep -q "wrote $out/timeline.json" "$WORK/$job.out"; then
	pass "picture and timeline written, their paths printed"
else
	ls -l "$out"; fail "picture and timeline of $job"
fi
if grep -q "^trainscope: default/$job step [0-9]*: FailSlow  slow: 5(Compute)" "$WORK/$job.err"; then
	pass "the verdict shown while the job ran (a line per change off a terminal)"
else
	grep "^trainscope:" "$WORK/$job.err"; fail "no live verdict naming rank 5"
fi
leftovers "$job"

# Ctrl-C once the verdict shows: the command stops, the report of what ran still comes.
# Started as a job of its own (set -m): a script's background commands otherwise ignore
# SIGINT, and so would everything they run.
job=local-interrupted
set -m
"$BIN/trainscope" run --local --job $job --out "$WORK/out2" -- "$BIN/workload" \
	--ranks 4 --steps 1000 >"$WORK/$job.out" 2>"$WORK/$job.err" &
pid=$!
set +m
PIDS="$PIDS $pid"
wait_for 30 grep -q "^trainscope: default/$job step [0-9]*: Healthy" "$WORK/$job.err" ||
	fail "$job: no verdict within 30 s: $(tail -5 "$WORK/$job.err")"
kill -INT -- -"$pid" || true # as a terminal does: the whole foreground process group
wait "$pid" || true
last=$(sed -n "s/^SlowNodeReport default\/$job: .*(world 4, step \([0-9]*\),.*/\1/p" "$WORK/$job.out")
if [ -n "$last" ] && [ "$last" -lt 900 ] && [ -s "$WORK/out2/heatmap.svg" ]; then
	pass "after Ctrl-C at step $last of 1000 the report and picture of the steps run"
else
	cat "$WORK/$job.out" "$WORK/$job.err"; fail "$job: no report after Ctrl-C"
fi
leftovers "$job"

# no nats-server: say how to get one, start nothing
rc=0
"$BIN/trainscope" run --local --nats-server "$WORK/none/nats-server" -- true \
	>/dev/null 2>"$WORK/missing.err" || rc=$?
if [ "$rc" -eq 1 ] && grep -q "apt-get install nats-server" "$WORK/missing.err" &&
	grep -q -- "--nats URL" "$WORK/missing.err"; then
	pass "a missing nats-server said with how to install it or to pass --nats URL"
else
	cat "$WORK/missing.err"; fail "missing nats-server: exit $rc"
fi
leftovers "missing nats-server"

total=9
echo "e2e local: $((total - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
