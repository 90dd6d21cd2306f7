#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every way a job is launched ends in the right rank and world size at the analyzer, no
# batch refused: real relay, NATS (Debian's 2.9) and analyzer; the processes are Python
# under the preload and the shim, over the test double of torch, started as torchrun,
# Lightning's launcher, torch.multiprocessing.spawn, Ray Train, mpirun and srun start
# theirs (e2e/launchers/launch.py says what each sets, and when). A job whose processes
# can have no rank gets a report that says so and what to set, and so does a rank whose
# loop's steps are not found.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
RANKS=3
STEPS=40


start_nats
start_analyzer
export PYTHONPATH="$PWD/injector/preload/tests/shim${PYTHONPATH:+:$PYTHONPATH}"
export TRAINSCOPE_SHIM="$PWD/injector/preload/python"

launch() { # launch HOW: the job launch-HOW under trainscope run
	"$BIN/trainscope" run --nats "$NATS_URL" --job "launch-$1" -- \
		python3 e2e/launchers/launch.py "$1" "$RANKS" --steps "$STEPS" \
		>"$WORK/launch-$1.out" 2>"$WORK/launch-$1.log"
}

echo "== each launcher's ranks at the analyzer ($RANKS ranks, $STEPS steps)"
for how in torchrun lightning fabric spawn ray mpi slurm; do
	before=$(metric trainscope_analyzer_steps_total)
	if ! launch "$how"; then
		expect "$how: the job ran" false
		tail -5 "$WORK/launch-$how.log" | sed 's/^/      /'
		continue
	fi
	"$BIN/trainscope" report --dir "$REPORTS" --job "launch-$how" --wait-step $((STEPS - 1)) \
		--timeout 60 --json >"$WORK/launch-$how.json" 2>/dev/null || true
	expect "$how: ranks 0-$((RANKS - 1)) of $RANKS, every step of every rank" \
		python3 e2e/check_launch.py "$WORK/launch-$how.json" ranked "$RANKS" $((STEPS - 1))
	took=$(( $(metric trainscope_analyzer_steps_total) - before ))
	expect "$how: the analyzer took $took rank-steps of $((RANKS * STEPS))" \
		test "$took" -eq $((RANKS * STEPS))
done
# the launchers that give no rank at the start: each ring ends under its rank (the relay
# met it unranked and learned it, or read it from the ring's header once told)
for how in lightning fabric spawn ray; do
	expect "$how: every rank's ring ended under its rank, none unranked" \
		test "$(grep -c 'finished (rank [0-9]' "$WORK/launch-$how.log")" -eq "$RANKS" -a \
		"$(grep -c 'steps with no rank' "$WORK/launch-$how.log")" -eq 0
done
expect "no batch refused (bad messages $(metric trainscope_analyzer_rejected_malformed_total))" \
	test "$(metric trainscope_analyzer_rejected_malformed_total)" = 0

echo "== a job whose processes can have no rank"
launch none || true
wait_unranked() {
	"$BIN/trainscope" report --dir "$REPORTS" --job launch-none --json >"$WORK/launch-none.json" \
		2>/dev/null && python3 e2e/check_launch.py "$WORK/launch-none.json" unranked "$RANKS" "$STEPS" \
		>/dev/null
}
wait_for 30 wait_unranked || true
expect "the report: RanksKnown False with the cure, $RANKS processes listed, $STEPS steps each" \
	python3 e2e/check_launch.py "$WORK/launch-none.json" unranked "$RANKS" "$STEPS"
expect "the text report says it" \
	sh -c "'$BIN/trainscope' report --dir '$REPORTS' --job launch-none | grep -q 'ranks: $RANKS processes made'"
expect "the relay said it once per process, with the cure" \
	test "$(grep -c 'steps with no rank: none of .* set RANK and WORLD_SIZE' "$WORK/launch-none.log")" -eq "$RANKS"
expect "the analyzer counted them ($(metric trainscope_analyzer_unranked_processes_total))" \
	test "$(metric trainscope_analyzer_unranked_processes_total)" = "$RANKS"
echo "== a rank whose loop's steps are not found (collectives, no step)"
RANK=0 WORLD_SIZE=1 "$BIN/trainscope" run --nats "$NATS_URL" --job nostep -- \
	python3 e2e/launchers/nostep.py 200 >"$WORK/nostep.out" 2>"$WORK/nostep.log" || true
nostep() {
	"$BIN/trainscope" report --dir "$REPORTS" --job nostep --json >"$WORK/nostep.json" \
		2>/dev/null && python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["status"]
c = {x["type"]: x for x in st["conditions"]}["StepsFound"]
s = st.get("stepless", [])
sys.exit(0 if c["status"] == "False" and "TRAINSCOPE_STEP_FUNC" in c["message"] and
         [(x["rank"], x["operations"]) for x in s] == [(0, 200)] else 1)' "$WORK/nostep.json"
}
expect "the report: StepsFound False naming TRAINSCOPE_STEP_FUNC, rank 0 with its 200 collectives" \
	wait_for 30 nostep
expect "the relay said it once, with the cure" \
	test "$(grep -c 'made no step: .*TRAINSCOPE_STEP_FUNC' "$WORK/nostep.log")" -eq 1
expect "every report fits the CRD" check_crd

echo "launchers e2e: $passed passed, $fails failed"
[ "$fails" = 0 ]
