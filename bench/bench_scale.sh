#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench, scale part: the bus and the analyzer at 16,384 ranks. A 3-server NATS
# cluster (nats-server 2.12, tools.sh), the stream on 3 replicas in 2 partitions, two
# partitioned analyzers. Runs, measured side by side:
#   drain: a backlog of BACKLOG_STEPS steps of the job, stored first, then read by a
#          fresh analyzer as fast as it can: the rank-steps/s one replica sustains;
#   live:  trainscope-loadgen --live publishes the 16,384-rank job at 1 step/s (each
#          step when it ends) with rank 9216 1.5x slower from step 15: the lag from a
#          step's end to its analysis (the analyzer's own histogram), the analyzer's
#          CPU per 1,000 rank-steps/s and memory per 1,000 ranks, NATS's storage per
#          rank-step, and whether the slow rank is named;
#   killed: the RANKS job again, a NATS server and its analyzer SIGKILLed at step 15 (the
#          analyzer started again): every rank-step analysed, DataComplete, rank named;
#   live on one server: the RANKS run again on a single server, stream R1, to tell
#          what the 3 servers' replication costs this machine from what the analyzers do.
# RANKS, LIVE_STEPS, BACKLOG_STEPS override the sizes; OUT=FILE also writes the table;
# ANALYZER=PATH runs another build of the analyzer (a sanitizer build: build/san/bin/...);
# WIRE=rank publishes each rank's batches alone, as relays with --wire rank do (default
# pod: a Bundle per pod of 8 ranks and step).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
RANKS=${RANKS:-16384}
LIVE_STEPS=${LIVE_STEPS:-60}
BACKLOG_STEPS=${BACKLOG_STEPS:-30}
WIRE=${WIRE:-pod}


TOOLS=$(bash e2e/k8s/tools.sh nats) || die "nats-server 2.12 could not be built"
export PATH="$TOOLS:$PATH"
trap cleanup EXIT
start_nats_cluster 3
export TRAINSCOPE_STREAM_REPLICAS=3 TRAINSCOPE_STREAM_MAX_BYTES=4G
. bench/scale_lib.sh

# ---- drain: one analyzer reads a stored backlog as fast as it can -------------------------------
echo "scale bench: storing $BACKLOG_STEPS steps of a $RANKS-rank job (namespace drain)"
"$BIN/trainscope-loadgen" --nats "$CLUSTER_URLS" --ranks "$RANKS" --steps "$BACKLOG_STEPS" \
	--namespace drain --job backlog --wire "$WIRE" >"$WORK/drain-gen.out" 2>"$WORK/drain-gen.log" ||
	die "loadgen: $(tail -3 "$WORK/drain-gen.log")"
sed 's/^/  /' "$WORK/drain-gen.out"
read -r bytes0 msgs0 < <(stream_bytes)
t0=$(date +%s.%N)
analyzer drain --filter 'ts.v1.drain.>' --durable bench-drain --snapshot-s 0
c0=$(cpu_s "$APID")
wait_for 600 steps_at_least "$AMET" $((RANKS * BACKLOG_STEPS)) || die "the drain did not finish"
t1=$(date +%s.%N); c1=$(cpu_s "$APID")
drain_rss=$(rss_mb "$APID")
kill "$APID"

# ---- live: a job at 1 step/s, two partitioned analyzers of their own ------------------------------
# start_live NAME RANKS: two partitioned analyzers (P0 P1, metrics M0 M1, idle RSS IDLE) and
# the generator (GEN) publishing the job at 1 step/s; OWNER names the analyzer that took
# the job, K its partition, PID and MET its pid and metrics, SLOW the slowed rank
start_live() {
	local name=$1 ranks=$2 k
	SLOW=$((ranks * 9 / 16))
	for k in 0 1; do
		# its own job only: the stream also holds the earlier runs' jobs of that partition
		analyzer "$name$k" --partitions 2 --partition "$k" --snapshot-s 5 --durable "$name-p$k" \
			--filter "ts.v1.$name.*.*.*.$k"
		eval "P${k}=$APID M${k}=$AMET"
	done
	IDLE=$(rss_mb "$P0")
	echo "scale bench: live, $ranks ranks x $LIVE_STEPS steps at 1 step/s, rank $SLOW 1.5x slower from step 15"
	"$BIN/trainscope-loadgen" --nats "$CLUSTER_URLS" --ranks "$ranks" --steps "$LIVE_STEPS" \
		--step-ms 1000 --live --slow "$SLOW:1.5:15" --namespace "$name" --job llm --wire "$WIRE" \
		>"$WORK/$name-gen.out" 2>"$WORK/$name-gen.log" &
	GEN=$!
	PIDS="$PIDS $GEN"
	wait_for 60 grep -q "new job $name/llm" "$WORK/${name}0/log" "$WORK/${name}1/log" ||
		die "no analyzer took the job"
	OWNER=$(grep -l "new job $name/llm" "$WORK/${name}0/log" "$WORK/${name}1/log" | head -1)
	OWNER=$(basename "$(dirname "$OWNER")")
	K=${OWNER#"$name"}
	eval "PID=\$P$K MET=\$M$K"
}
live() { # live NAME RANKS: its figures appended to $WORK/live.txt
	local name=$1 ranks=$2 pid met owner slow idle gen
	start_live "$name" "$ranks"
	pid=$PID met=$MET owner=$OWNER slow=$SLOW idle=$IDLE gen=$GEN
	# measured from step 10 to the end
	wait_for 60 steps_at_least "$met" $((ranks * 10)) || die "the live job did not start"
	local c0 t0 s0 c1 t1 s1 b0 m0 b1 m1
	c0=$(cpu_s "$pid"); t0=$(date +%s.%N); s0=$(metric "$met" trainscope_analyzer_steps_total)
	read -r b0 m0 < <(stream_bytes)
	wait "$gen" || die "loadgen: $(tail -3 "$WORK/$name-gen.log")"
	wait_for 120 steps_at_least "$met" $((ranks * LIVE_STEPS)) || die "the live job was not all analysed"
	c1=$(cpu_s "$pid"); t1=$(date +%s.%N); s1=$(metric "$met" trainscope_analyzer_steps_total)
	read -r b1 m1 < <(stream_bytes)
	sed 's/^/  /' "$WORK/$name-gen.out"
	local named
	named=$(python3 -c "
import json
st = json.load(open('$WORK/$owner/reports/${name}_llm.json'))['status']
print(','.join(str(r['rank']) for r in st.get('slowRanks', [])) or 'none')")
	echo "$ranks $(lag_q "$met") $c0 $c1 $t0 $t1 $s0 $s1 $(rss_mb "$pid") $idle $b0 $m0 $b1 $m1 $slow $named" \
		"$SERVERS $TRAINSCOPE_STREAM_REPLICAS" >>"$WORK/live.txt"
	# an analyzer that died meanwhile fails the bench (its partition had no reader)
	for k in 0 1; do
		eval "pid=\$P$k"
		kill -0 "$pid" 2>/dev/null || die "analyzer $name$k died during the run: $(tail -3 "$WORK/$name$k/log")"
	done
	kill "$P0" "$P1"
}
# killed NAME RANKS: the job again; at step 15 a NATS server and the job's analyzer are
# SIGKILLed, the analyzer started again on its partition: every rank-step must still be
# analysed, on complete data, the slow rank named (appended to $WORK/killed.txt)
killed() {
	local name=$1 ranks=$2 at
	start_live "$name" "$ranks"
	wait_for 120 steps_at_least "$MET" $((ranks * 15)) || die "the job did not reach step 15"
	at=$(metric "$MET" trainscope_analyzer_steps_total)
	kill -9 "${NATS_PID[2]}" "$PID"
	echo "scale bench: killed nats-server n2 and analyzer $OWNER at $at rank-steps; $OWNER started again"
	analyzer "$OWNER" --partitions 2 --partition "$K" --snapshot-s 5 --durable "$name-p$K" \
		--filter "ts.v1.$name.*.*.*.$K"
	wait "$GEN" || die "loadgen: $(tail -3 "$WORK/$name-gen.log")"
	sed 's/^/  /' "$WORK/$name-gen.out"
	# -c, not a heredoc: wait_for runs it again and a heredoc is read only once
	wait_for 300 python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))["status"]
c = {x["type"]: x["status"] for x in st["conditions"]}
sys.exit(0 if st["stepsAnalyzed"] == int(sys.argv[2]) and c.get("DataComplete") == "True" else 1)' \
		"$WORK/$OWNER/reports/${name}_llm.json" "$LIVE_STEPS" ||
		die "the job was not analysed whole after the kills"
	python3 - "$WORK/$OWNER/reports/${name}_llm.json" "$ranks" "$SLOW" "$at" \
		"$(metric "$AMET" trainscope_analyzer_lost_batches_total)" >>"$WORK/killed.txt" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))["status"]
c = {x["type"]: x for x in st["conditions"]}
named = ",".join(str(r["rank"]) for r in st.get("slowRanks", [])) or "none"
print("%s %s %s %s %s %s" % (sys.argv[2], sys.argv[4], st["stepsAnalyzed"], named, sys.argv[5],
                             c["DataComplete"]["message"].replace(" ", "_")))
PY
	kill "$APID" "$P0" "$P1" 2>/dev/null || true
}
SERVERS=3
live small $((RANKS / 4))
live big "$RANKS"
killed kill "$RANKS"
# the same job on one server of its own, stream R1
for i in 1 3; do kill "${NATS_PID[i]}"; done
for i in 1 2 3; do wait "${NATS_PID[i]}" 2>/dev/null || true; done
NATS_SET=solo start_nats_cluster 1
SERVERS=1 TRAINSCOPE_STREAM_REPLICAS=1
live solo "$RANKS"

python3 - "$WORK/live.txt" "$RANKS" "$BACKLOG_STEPS" "$t0" "$t1" "$c0" "$c1" "${OUT:-}" \
	"$WORK/killed.txt" "$LIVE_STEPS" "$WIRE" <<'PY'
import sys
sys.path.insert(0, "bench")
from scale_table import finish
a = sys.argv
ranks, bsteps = int(a[2]), int(a[3])
t0, t1, c0, c1 = map(float, a[4:8])
out, killed, lsteps, wire = a[8], a[9], int(a[10]), a[11]
rows = [("one analyzer draining a stored backlog (%d ranks)" % ranks,
         "%.0f rank-steps/s, %.3f core-s per 1,000" % (ranks * bsteps / (t1 - t0),
                                                       (c1 - c0) / (ranks * bsteps / 1000)),
         "budget >= 20,000 rank-steps/s")]
ok = True
for line in open(a[1]):
    f = line.split()
    n = int(f[0]); p50, p99, mx = map(float, f[1:4])
    lc0, lc1, lt0, lt1, ls0, ls1, rss, idle, b0, m0, b1, m1 = map(float, f[4:16])
    slow, named, servers, r = f[16], f[17], f[18], f[19]
    rate = (ls1 - ls0) / (lt1 - lt0)
    rows += [
        ("live %d ranks x 1 step/s, %s server%s, R%s: rank-steps/s analysed" % (
            n, servers, "s" if servers != "1" else "", r), "%.0f" % rate, ""),
        ("  lag step end -> analysis, p50 / p99 / max", "%.2f / %.2f / %.2f s" % (p50, p99, mx),
         "budget <= 2 s"),
        ("  analyzer CPU per 1,000 rank-steps/s", "%.3f cores" % ((lc1 - lc0) / (lt1 - lt0) / (rate / 1000)), ""),
        ("  analyzer memory per 1,000 ranks", "%.1f MiB (peak RSS %.0f, idle %.0f MiB)" % ((rss - idle) / (n / 1000), rss, idle), ""),
        ("  NATS messages per second, per rank-step", "%.0f, %.3f" % (
            (m1 - m0) / (lt1 - lt0), (m1 - m0) / max(ls1 - ls0, 1)), "--wire " + wire),
        ("  NATS storage per rank-step, one replica", "%.0f bytes" % ((b1 - b0) / max(ls1 - ls0, 1)),
         "x%s on disk" % r),
        ("  slow rank %s named" % slow, named, "must be " + slow),
    ]
    ok &= named == slow
for line in open(killed):
    n, at, done, named, lost, why = line.split()
    slow = str(int(n) * 9 // 16)
    rows += [
        ("live %s ranks, 3 servers, R3: n2 and the job's analyzer SIGKILLed" % n,
         "at rank-step %s; the analyzer started again" % at, ""),
        ("  steps analysed, DataComplete", "%s of %d: %s" % (done, lsteps, why.replace("_", " ")[:60]),
         "must be all"),
        ("  batches counted lost by the restarted analyzer", lost, "must be 0"),
        ("  slow rank %s named" % slow, named, "must be " + slow),
    ]
    ok &= int(done) == lsteps and lost == "0" and named == slow
finish("scale bench (NATS servers, 2 partitioned analyzers and the generator, all on this machine):", rows, ok, out, 42)
PY
