#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Scale-out on the bus: a 3-server NATS cluster (nats-server 2.12, built by tools.sh: the
# stream's subject transform needs 2.10 or later; Debian's 2.9 has none) holds the
# TRAINSCOPE stream on 3 replicas, partitioned by job into 2; two analyzers each own one
# partition through their own durable consumer. trainscope-loadgen publishes 4 jobs;
# mid-run one NATS server is killed (SIGKILL, not restarted) and one analyzer is killed
# and started again, as a StatefulSet would. Each job must be analysed by exactly one
# analyzer, every rank-step taken, nothing lost, every slow rank still named.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
RANKS=${RANKS:-32}
STEPS=${STEPS:-400}
JOBS=4
SLOW=${SLOW:-11}


TOOLS=$(bash e2e/k8s/tools.sh nats) || die "nats-server 2.12 could not be built"
export PATH="$TOOLS:$PATH"
trap cleanup EXIT
start_nats_cluster 3
echo "scale e2e: 3 NATS servers ($(nats-server-auth --version)), JetStream meta leader elected"

# ---- two analyzers, partition 0 and 1 of 2; the stream on 3 replicas ---------------------
export TRAINSCOPE_STREAM_REPLICAS=3 TRAINSCOPE_STREAM_MAX_BYTES=512M
start_replica() { # start_replica K: analyzer of partition K (its reports, log and metrics)
	local k=$1
	mkdir -p "$WORK/a$k"
	"$BIN/trainscope-analyzer" --nats "$CLUSTER_URLS" --partitions 2 --partition "$k" \
		--report-dir "$WORK/a$k/reports" --metrics-port 0 --snapshot-s 1 --quiet \
		>>"$WORK/a$k/out" 2>>"$WORK/a$k/log" &
	PIDS="$PIDS $!"
	eval "APID_$k=$!"
}
metrics_of() { grep -o 'http://[0-9.:]*/metrics' "$WORK/a$1/log" | tail -1; }
replica_metric() { # K NAME: the metric NAME of analyzer K
	curl -sf -m 2 "$(metrics_of "$1")" | awk -v m="$2" '$1 == m { print $2 }'
}
consuming() { [ "$(grep -c "consuming" "$WORK/a$1/log")" -ge "$2" ]; }
for k in 0 1; do
	start_replica "$k"
	wait_for 60 consuming "$k" 1 || die "analyzer $k did not start: $(tail -5 "$WORK/a$k/log")"
done
grep -h "consuming" "$WORK"/a?/log | sed 's/^/      /'

# ---- a second analyzer on partition 0's durable: it waits, says why, and takes no part ----
mkdir -p "$WORK/adup"
"$BIN/trainscope-analyzer" --nats "$CLUSTER_URLS" --partitions 2 --partition 0 \
	--report-dir "$WORK/adup/reports" --metrics-port 0 --snapshot-s 1 --quiet \
	>>"$WORK/adup/out" 2>>"$WORK/adup/log" &
dup=$!
PIDS="$PIDS $dup"
standby() { grep -q "standby: durable consumer trainscope-analyzer-p0 is held" "$WORK/adup/log"; }
dup_health() { curl -sf -m 2 "$(metrics_of dup | sed 's/metrics$/healthz/')" | grep -q standby; }
expect "a second analyzer on one durable waits and says why" wait_for 30 standby
grep -h "standby:" "$WORK/adup/log" | head -1 | cut -c1-160 | sed 's/^/      /'
# readiness apart from liveness: alive (200) while it waits, not ready (503, saying why)
dup_ready() { [ "$(curl -s -m 2 -o "$WORK/adup/readyz" -w '%{http_code}' \
	"$(metrics_of dup | sed 's/metrics$/readyz/')")" = 503 ] && grep -q "^waiting: standby" "$WORK/adup/readyz"; }
expect "  ... its /healthz says standby (200), /readyz 503 'waiting: standby', and it consumes nothing" \
	eval 'wait_for 10 dup_health && dup_ready && ! grep -q consuming "$WORK/adup/log"'
kill "$dup"
wait "$dup" 2>/dev/null || true
stream_cfg() {
	curl -sf "http://127.0.0.1:${NATS_MON[1]}/jsz?streams=true&config=true" | python3 -c '
import json, sys
for a in json.load(sys.stdin)["account_details"]:
    for s in a.get("stream_detail", []):
        if s["name"] == "TRAINSCOPE":
            c = s["config"]
            print(c["num_replicas"], c.get("subject_transform", {}).get("dest", "-"))'
}
cfg=$(stream_cfg)
echo "      stream TRAINSCOPE: $cfg"
expect "the analyzers made the stream: 3 replicas, subjects partitioned by namespace and job" \
	[ "$cfg" = "3 ts.v1.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{wildcard(4)}}.{{partition(2,1,2)}}" ]

# ---- the load, and the faults mid-run ------------------------------------------------------
"$BIN/trainscope-loadgen" --nats "$CLUSTER_URLS" --ranks "$RANKS" --jobs "$JOBS" \
	--steps "$STEPS" --step-ms 100 --rate 20 --slow "$SLOW:1.6:100" --namespace scale \
	--job llm >"$WORK/loadgen.out" 2>"$WORK/loadgen.log" &
gen=$!
PIDS="$PIDS $gen"
steps_in() { [ "$(( $(replica_metric 0 trainscope_analyzer_steps_total) + $(replica_metric 1 trainscope_analyzer_steps_total) ))" -ge "$1" ]; }
total=$((RANKS * JOBS * STEPS))
wait_for 120 steps_in $((total / 4)) || die "the analyzers took under a quarter of the load"
kill -9 "${NATS_PID[2]}"
wait "${NATS_PID[2]}" 2>/dev/null || true
echo "      n2 killed (SIGKILL) at $(( $(replica_metric 0 trainscope_analyzer_steps_total) + $(replica_metric 1 trainscope_analyzer_steps_total) )) of $total rank-steps"
wait_for 120 steps_in $((total / 2)) || die "the analyzers stalled after n2 died"
kill -9 "$APID_1"
wait "$APID_1" 2>/dev/null || true
echo "      analyzer 1 killed (SIGKILL); started again"
start_replica 1
# its /metrics read back to back while it restores its snapshot, as a scraper may: the
# restore fills the job table that a scrape walks (make scale-tsan: they take turns)
scraped_restore() {
	local deadline=$(( $(date +%s) + 60 * ${E2E_TIME_FACTOR:-1} )) n=0
	until consuming 1 2; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		[ "$(grep -c 'metrics on' "$WORK/a1/log")" -ge 2 ] || continue
		curl -sf -m 2 "$(metrics_of 1)" >/dev/null && n=$((n + 1))
	done
	echo "      its /metrics read $n times while it started"
}
scraped_restore || die "analyzer 1 did not come back: $(tail -5 "$WORK/a1/log")"
# (killed before its first snapshot, as under ASan on a loaded host, it restores nothing:
# the stream's replay alone must then give the same reports)
{ grep -h "restored" "$WORK/a1/log" || echo "no snapshot written before the kill: nothing restored"; } |
	tail -1 | sed 's/^/      /'
expect "the load generator's every batch was stored by the cluster (2 of 3 servers for most)" wait "$gen"
sed 's/^/      /' "$WORK/loadgen.out"

# ---- what the analyzers made of it -----------------------------------------------------------
done_all() {
	local k f n=0
	for k in 0 1; do
		for f in "$WORK/a$k/reports"/*.json; do
			[ -e "$f" ] || continue
			python3 -c "import json,sys; s=json.load(open('$f'))['status']; sys.exit(0 if s['lastStep'] == $STEPS - 1 else 1)" || return 1
			n=$((n + 1))
		done
	done
	[ "$n" = "$JOBS" ]
}
expect "every job's last step analysed" wait_for 120 done_all
python3 - "$WORK" "$JOBS" "$STEPS" "$RANKS" "$SLOW" <<'PY' && passed=$((passed + 1)) || fails=$((fails + 1))
import glob, json, os, sys
work, jobs, steps, ranks, slow = sys.argv[1], *map(int, sys.argv[2:])

def part(ns, job, n):  # NATS's {{partition(n,1,2)}}: FNV-1a 32 of the two tokens
    h = 2166136261
    for c in (ns + job).encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h % n

owners, ok = {}, True
for k in (0, 1):
    for f in glob.glob(os.path.join(work, "a%d" % k, "reports", "*.json")):
        owners.setdefault(os.path.basename(f), []).append(k)
for i in range(jobs):
    name = "scale_llm-%d.json" % i
    st = json.load(open(os.path.join(work, "a%d" % owners.get(name, [0])[0], "reports", name)))["status"]
    cond = {c["type"]: c for c in st["conditions"]}
    named = [r["rank"] for r in st.get("slowRanks", [])]
    good = (owners.get(name) == [part("scale", "llm-%d" % i, 2)] and st["stepsAnalyzed"] == steps
            and cond["DataComplete"]["status"] == "True" and named == [slow])
    ok &= good
    print("      %s: analyser %s (NATS's partition %d), %s, named %s, %d steps; %s" % (
        name, owners.get(name), part("scale", "llm-%d" % i, 2), st["state"], named,
        st["stepsAnalyzed"], cond["DataComplete"]["message"]))
print("  %s  each job analysed by exactly one analyzer, its partition's: every rank-step, "
      "rank %d named" % ("ok  " if ok else "FAIL", slow))
sys.exit(0 if ok else 1)
PY
for k in 0 1; do
	echo "      analyzer $k: $(curl -sf -m 2 "$(metrics_of "$k")" | awk '$1 ~ /^trainscope_analyzer_(lost_batches|duplicate_batches|other_partition|consumer_recreated)_total$|^trainscope_analyzer_snapshot_restored_jobs$/ { sub("trainscope_analyzer_", "", $1); printf "%s %s  ", $1, $2 }')"
done
nothing_lost() {
	local k
	for k in 0 1; do
		[ "$(replica_metric "$k" trainscope_analyzer_lost_batches_total)" = 0 ] || return 1
		[ "$(replica_metric "$k" trainscope_analyzer_other_partition_total)" = 0 ] || return 1
		[ "$(replica_metric "$k" trainscope_analyzer_mismatched_batches_total)" = 0 ] || return 1
	done
}
expect "no batch lost or misplaced by either analyzer, the restarted one included" nothing_lost

echo "scale e2e: $passed passed, $fails failed"
[ "$fails" = 0 ]
