#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench, 100,000-rank part: one job of RANKS ranks in pods of PER_POD (12,500 pods of
# 8), 1 step/s, through a 3-server NATS cluster (nats-server 2.12, stream on 3 replicas)
# on this machine, read by one analyzer (limits raised for a job this large). Runs:
#   pod:  trainscope-loadgen --live --wire pod, one Bundle per pod and step, as relays
#         send them; rank RANKS*9/16 1.5x slower from step 15;
#   rank: the same job on the per-rank wire (one message per rank and step), RANK_STEPS
#         steps, to compare;
#   kill: the pod run again; at step KILL_AT the analyzer is SIGKILLed and started again
#         on its durable: the time until it is back where it was reading when killed
#         (its snapshot restored and what came after it replayed), until it has read
#         every message stored before it restarted, then every step analysed,
#         DataComplete, nothing lost, the rank named.
# Each live run gives the lag from a step's end to its analysis, the messages/s into the
# stream, the storage per rank-step (one replica), the analyzer's CPU per 1,000
# rank-steps and whether the slow rank was named. OUT=FILE also writes the table; RUNS
# picks runs (default "pod kill rank").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
RANKS=${RANKS:-100000}
PER_POD=${PER_POD:-8}
STEPS=${STEPS:-60}
RANK_STEPS=${RANK_STEPS:-$STEPS}
KILL_AT=${KILL_AT:-30}
DEADLINE=${DEADLINE:-900} # s for a run's backlog to be analysed once the job ended
SLOW=$((RANKS * 9 / 16))

TOOLS=$(bash e2e/k8s/tools.sh nats) || die "nats-server 2.12 could not be built"
export PATH="$TOOLS:$PATH"
trap cleanup EXIT
start_nats_cluster 3
export TRAINSCOPE_STREAM_REPLICAS=3 TRAINSCOPE_STREAM_MAX_BYTES=6G
. bench/scale_lib.sh
# a job this large needs the limits raised (a refused job's report says which)
cat >"$WORK/big.yaml" <<EOF
limits: {max_world: 131072, memory_mb: 4096, namespace_share: 1}
EOF

# jsz WHAT [DURABLE]: from every server's /jsz (a consumer's state is kept by its replicas
# only): "last", the stream's last sequence; "delivered", the stream sequence DURABLE's
# consumer delivered up to
jsz() {
	python3 - "$1" "${2:-}" "${NATS_MON[@]}" <<'PY'
import json, sys, urllib.request
what, durable, best = sys.argv[1], sys.argv[2], 0
for port in sys.argv[3:]:
    try:
        doc = json.load(urllib.request.urlopen(
            "http://127.0.0.1:%s/jsz?consumers=true" % port, timeout=5))
    except OSError:
        continue
    for a in doc.get("account_details", []):
        for s in a.get("stream_detail", []):
            if what == "last":
                best = max(best, s["state"]["last_seq"])
            for c in s.get("consumer_detail") or []:
                if what == "delivered" and c["name"] == durable:
                    best = max(best, c["delivered"]["stream_seq"])
print(best)
PY
}
report_of() { echo "$WORK/$1/reports/$1_llm.json"; }
named_in() { # named_in REPORT: the slow ranks it names, comma-separated
	python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["status"]
print(",".join(str(r["rank"]) for r in st.get("slowRanks", [])) or "none")' "$1" 2>/dev/null || echo none
}
gen() { # gen NAME WIRE STEPS: the generator in the background, its pid in GEN
	"$BIN/trainscope-loadgen" --nats "$CLUSTER_URLS" --ranks "$RANKS" --steps "$3" \
		--ranks-per-node "$PER_POD" --wire "$2" --step-ms 1000 --live --slow "$SLOW:1.5:15" \
		--namespace "$1" --job llm >"$WORK/$1-gen.out" 2>"$WORK/$1-gen.log" &
	GEN=$!
	PIDS="$PIDS $GEN"
}

# live NAME WIRE STEPS: one run measured from the analyzer's start to the job's last
# step analysed; its figures appended to $WORK/live.txt
live() {
	local name=$1 wire=$2 steps=$3 b0 m0 b1 m1 c1 t0 tg t1
	read -r b0 m0 < <(stream_bytes)
	analyzer "$name" --filter "ts.v1.$name.>" --durable "$name" --snapshot-s 5 --config "$WORK/big.yaml"
	echo "100k bench: $name: $RANKS ranks x $steps steps at 1 step/s, --wire $wire, $PER_POD ranks a pod"
	t0=$(date +%s.%N)
	gen "$name" "$wire" "$steps"
	wait "$GEN" || die "loadgen: $(tail -3 "$WORK/$name-gen.log")"
	tg=$(date +%s.%N)
	sed 's/^/  /' "$WORK/$name-gen.out"
	wait_for "$DEADLINE" steps_at_least "$AMET" $((RANKS * steps)) ||
		die "$name: not all analysed $DEADLINE s after the job ended"
	t1=$(date +%s.%N) c1=$(cpu_s "$APID")
	read -r b1 m1 < <(stream_bytes)
	wait_for 30 test -s "$(report_of "$name")" || die "$name: no report"
	echo "$name $wire $steps $(lag_q "$AMET") $t0 $tg $t1 $c1 $b0 $m0 $b1 $m1 $(rss_mb "$APID")" \
		"$(named_in "$(report_of "$name")")" >>"$WORK/live.txt"
	kill -0 "$APID" 2>/dev/null || die "$name: the analyzer died: $(tail -3 "$WORK/$name/log")"
	kill "$APID"
}

# killed NAME: the pod run with the analyzer SIGKILLed at step KILL_AT and started again
killed() {
	local name=$1 at was last tr tc tw tu rep
	analyzer "$name" --filter "ts.v1.$name.>" --durable "$name" --snapshot-s 5 --config "$WORK/big.yaml"
	gen "$name" pod "$STEPS"
	wait_for 300 steps_at_least "$AMET" $((RANKS * KILL_AT)) || die "$name: step $KILL_AT not reached"
	at=$(metric "$AMET" trainscope_analyzer_steps_total)
	kill -9 "$APID"
	wait "$APID" 2>/dev/null || true
	was=$(jsz delivered "$name") last=$(jsz last)
	tr=$(date +%s.%N)
	echo "100k bench: $name: analyzer SIGKILLed at $at rank-steps, stream at seq $last; started again"
	analyzer "$name" --filter "ts.v1.$name.>" --durable "$name" --snapshot-s 5 --config "$WORK/big.yaml"
	tc=$(date +%s.%N)
	wait_for 600 eval '[ "$(jsz delivered "$name")" -ge "$was" ]' ||
		die "$name: the restarted analyzer did not reach seq $was"
	tw=$(date +%s.%N)
	wait_for 600 eval '[ "$(jsz delivered "$name")" -ge "$last" ]' ||
		die "$name: the restarted analyzer did not reach seq $last"
	tu=$(date +%s.%N)
	wait "$GEN" || die "loadgen: $(tail -3 "$WORK/$name-gen.log")"
	rep=$(report_of "$name")
	wait_for "$DEADLINE" python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["status"]
c = {x["type"]: x["status"] for x in st["conditions"]}
sys.exit(0 if st["stepsAnalyzed"] == int(sys.argv[2]) and c.get("DataComplete") == "True" else 1)' \
		"$rep" "$STEPS" || die "$name: the job was not analysed whole after the restart"
	python3 - "$rep" "$at" "$last" "$tr" "$tc" "$tu" "$tw" "$was" "$(metric "$AMET" trainscope_analyzer_lost_batches_total)" \
		"$(named_in "$rep")" >>"$WORK/killed.txt" <<'PY'
import json, sys
a = sys.argv
st = json.load(open(a[1]))["status"]
c = {x["type"]: x for x in st["conditions"]}
print(a[2], a[3], "%.2f" % (float(a[5]) - float(a[4])), "%.2f" % (float(a[6]) - float(a[4])),
      st["stepsAnalyzed"], a[9], a[10], c["DataComplete"]["message"].replace(" ", "_"),
      "%.2f" % (float(a[7]) - float(a[4])), a[8])
PY
	kill "$APID"
}

for run in ${RUNS:-pod kill rank}; do
	case $run in
	pod) live pod pod "$STEPS" ;;
	kill) killed kill ;;
	rank) live rank rank "$RANK_STEPS" ;;
	*) die "RUNS: $run is not pod, kill or rank" ;;
	esac
done
touch "$WORK/live.txt" "$WORK/killed.txt"

python3 - "$WORK/live.txt" "$WORK/killed.txt" "$RANKS" "$PER_POD" "$STEPS" "$SLOW" "${OUT:-}" <<'PY'
import sys
sys.path.insert(0, "bench")
from scale_table import finish
a = sys.argv
ranks, per_pod, steps, slow, out = int(a[3]), int(a[4]), int(a[5]), a[6], a[7]
rows, ok = [], True
for line in open(a[1]):
    f = line.split()
    name, wire, n = f[0], f[1], int(f[2])
    p50, p99, mx = map(float, f[3:6])
    t0, tg, t1, c1, b0, m0, b1, m1, rss = map(float, f[6:15])
    named = f[15]
    rs = ranks * n
    label = "one Bundle per pod of %d" % per_pod if wire == "pod" else "one message per rank"
    rows += [
        ("%s wire (%s), %d ranks x %d steps: job ran / analysed" % (wire, label, ranks, n),
         "%.0f s / %.0f s after the analyzer started" % (tg - t0, t1 - t0), "1 step/s: %d s" % n),
        ("  lag step end -> analysis, p50 / p99 / max", "%.1f / %.1f / %.1f s" % (p50, p99, mx), "budget <= 2 s"),
        ("  messages into the stream", "%.0f /s (%d in all)" % ((m1 - m0) / (tg - t0), m1 - m0), ""),
        ("  storage per rank-step, one replica", "%.0f bytes" % ((b1 - b0) / rs), "x3 on disk"),
        ("  analyzer CPU per 1,000 rank-steps", "%.4f core-s (%.0f s for %d)" % (c1 / (rs / 1000), c1, rs), ""),
        ("  analyzer peak memory", "%.0f MiB" % rss, ""),
        ("  slow rank %s named" % slow, named, "must be " + slow),
    ]
    ok &= named == slow
for line in open(a[2]):
    at, last, restart, resume, done, lost, named, why, back, was = line.split()
    rows += [
        ("pod wire, analyzer SIGKILLed at step %s and started again" % (int(at) // ranks),
         "at rank-step %s, stream seq %s" % (at, last), ""),
        ("  restart to consuming (the old lease aged, the snapshot restored)", "%s s" % restart, ""),
        ("  restart to back where it was reading (seq %s)" % was, "%s s" % back, "within seconds"),
        ("  restart to every message stored before it read (seq %s)" % last, "%s s" % resume, ""),
        ("  steps analysed, DataComplete", "%s of %d: %s" % (done, steps, why.replace("_", " ")[:58]), "must be all"),
        ("  batches counted lost", lost, "must be 0"),
        ("  slow rank %s named" % slow, named, "must be " + slow),
    ]
    ok &= int(done) == steps and lost == "0" and named == slow
finish("100k bench (3 NATS servers, one analyzer and the generator, all on this machine):", rows, ok, out, 44)
PY
