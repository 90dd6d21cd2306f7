#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Faults done to the real binaries on loopback (nats-server 2.9 from Debian, the relay
# inside `trainscope run`, the analyzer), each checked against a control run:
#   - NATS frozen for 4 s, then killed and restarted on its store: every rank-step is
#     analysed once and the verdict is the control's; meanwhile /readyz says the analyzer
#     waits on the server and /healthz stays 200;
#   - the analyzer killed with SIGKILL mid-job and started again: its state restored from
#     the snapshot, the stream replayed after it, the report is the control's;
#   - the relay killed with SIGKILL mid-job and a new one started on its rings 3 s later:
#     the producers resume, the backlog is reordered, only what it held is missing, counted;
#   - the relay stopped until its rings overflow: the report says the verdict stands on
#     incomplete data; the report folder's disk full, then freed: said, counted, written after;
#   - a rank killed with SIGKILL: the report names it lost and the job ended abnormally;
#   - a job name run again: a new attempt whose report is its own;
#   - the analyzer's durable consumer deleted by another client: made again, nothing lost;
#   - a JetStream store too small for the stream: the analyzer says so;
#   - JetStream's store filled mid-job, then freed: /healthz and a metric say so, the
#     relay's and the analyzer's writes resume, and no rank-step is lost;
#   - a Kubernetes API server that never answers: analysis and /metrics go on;
#   - the consume loop stuck: /healthz says so (503), and ok again once it turns;
#   - NATS slow for an analyzer (e2e/slowproxy.py, every reply 2 s late): /healthz and
#     /readyz answer in under 100 ms, two jobs analysed whole, nothing lost;
#   - a step counter that jumps to 2^62, a world of a million ranks, 10,000 silent jobs
#     from one namespace of a hostile producer (e2e/faults/forge.c): refused and counted,
#     /healthz and /metrics still answer, memory stays bounded, and another namespace's
#     job gets its report at once; 10,000 jobs that end at once give way to new ones;
#   - SIGTERM delivered to an analyzer thread other than the main one (nats.c's): it
#     stops, exit 0 (and, under ThreadSanitizer, with no race on its stop flag).
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"

start_nats
NATS_PID=${PIDS##* }
cat >"$WORK/analyzer.yaml" <<'YAML'
failslow:
  rank_lost_s: 5
limits:
  job_ttl_s: 15
YAML
start_analyzer --quiet --config "$WORK/analyzer.yaml"
ANALYZER_PID=${PIDS##* }
HEALTHZ=${ANALYZER_METRICS%/metrics}/healthz
rss_mib() { awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$ANALYZER_PID/status"; }
# The memory growth the checks below allow, times E2E_MEM_FACTOR: a build under
# ThreadSanitizer keeps shadow memory beside all it touches (scripts/tsan-run.sh sets 4)
MEM_FACTOR=${E2E_MEM_FACTOR:-1}
steps_at_least() { [ "$(metric trainscope_analyzer_steps_total)" -ge "$1" ]; }
# started JOB N WHAT: waits until the analyzer took N rank-steps more than $before (JOB
# under way), else dies saying WHAT, with JOB's log and the analyzer's last lines
started() {
	wait_for 60 steps_at_least $((before + $2)) && return
	echo "e2e: $(metric trainscope_analyzer_steps_total) rank-steps analysed, $before before $1; its log, then the analyzer's:" >&2
	tail -5 "$WORK/$1.log" >&2
	tail -5 "$ANALYZER_LOG" >&2
	die "$3"
}
analysed() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"]["stepsAnalyzed"])' "$WORK/$1.json"; }

# ---- control: 4 ranks, rank 2 slowed 1.8x from step 40 -------------------------------
SLOW=(--fault-rank 2 --fault-step 40 --fault-factor 1.8)
before=$(metric trainscope_analyzer_steps_total)
run_job ctl 4 300 compute "${SLOW[@]}"
wait_report ctl 299
expect "control: $(analysed ctl) steps analysed, the verdict names rank 2 (Compute)" check_report ctl 2 Compute
ctl_steps=$(( $(metric trainscope_analyzer_steps_total) - before ))

# ---- NATS frozen 4 s, then killed and restarted on its store ----------------------------
restart_nats() {
	local port=${NATS_URL##*:}
	nats-server -a 127.0.0.1 -p "$port" -js -sd "$WORK/nats/js" --ports_file_dir "$WORK/nats" \
		>>"$WORK/nats/log" 2>&1 &
	NATS_PID=$!
	PIDS="$PIDS $NATS_PID"
	wait_for 15 test -s "$WORK/nats/nats-server_$NATS_PID.ports" || die "nats-server did not restart"
}
before=$(metric trainscope_analyzer_steps_total)
"$BIN/trainscope" run --nats "$NATS_URL" --job frz -- "$BIN/workload" --ranks 4 --steps 300 \
	--fault compute "${SLOW[@]}" 2>"$WORK/frz.log" &
job=$!
started frz 300 "the frozen run never started"
READYZ=${ANALYZER_METRICS%/metrics}/readyz
readyz() { # CODE TEXT: /readyz answers CODE with a line starting TEXT
	[ "$(curl -s -m 2 -o "$WORK/readyz" -w '%{http_code}' "$READYZ")" = "$1" ] &&
		grep -q "^$2" "$WORK/readyz"
}
expect "/readyz: ready, consuming" readyz 200 "ready: consuming"
kill -STOP "$NATS_PID"
sleep 4 # the fault: NATS frozen this long
kill -KILL "$NATS_PID"
wait "$NATS_PID" 2>/dev/null || true
expect "NATS down: /readyz 503 'waiting: NATS server ... not connected', /healthz 200" \
	eval 'wait_for 10 readyz 503 "waiting: NATS server" && curl -sf -m 2 "$HEALTHZ" >/dev/null'
restart_nats
expect "... ready again once it reconnects" wait_for 30 readyz 200 "ready: consuming"
wait "$job" || die "job frz failed: $(tail -5 "$WORK/frz.log")"
wait_report frz 299
frz_steps=$(( $(metric trainscope_analyzer_steps_total) - before ))
echo "      after the restart: $(metric trainscope_analyzer_late_steps_total) late steps," \
	"$(metric trainscope_analyzer_reordered_batches_total) reordered, $(metric trainscope_analyzer_duplicate_batches_total) duplicate and" \
	"$(metric trainscope_analyzer_lost_batches_total) lost batches"
verdict() { # JOB: state and slow ranks with causes
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["status"]; print(s["state"], sorted((r["rank"], r["cause"]) for r in s["slowRanks"]))' "$WORK/$1.json"
}
same_verdict() { # a passing alarm on another rank (the restart's CPU burst on 2 cores) may come and go
	echo "      control: $(verdict ctl); frozen: $(verdict frz)"
	[ "$(verdict frz)" = "$(verdict ctl)" ]
}
expect "NATS frozen then restarted: the verdict is the control's" same_verdict
expect "NATS frozen then restarted: $frz_steps rank-steps taken of $ctl_steps, $(analysed frz) steps analysed of $(analysed ctl)" \
	test "$frz_steps" -eq "$ctl_steps" -a "$(analysed frz)" -eq "$(analysed ctl)"

# ---- the analyzer killed (SIGKILL) mid-job and started again: it restores its last state
# snapshot and replays the stream after it, so the report is the control's ---------------
snapshots_past() { [ "$(metric trainscope_analyzer_snapshots_total)" -gt "$1" ]; }
before=$(metric trainscope_analyzer_steps_total)
snaps=$(metric trainscope_analyzer_snapshots_total)
"$BIN/trainscope" run --nats "$NATS_URL" --job akill -- "$BIN/workload" --ranks 4 --steps 300 \
	--fault compute "${SLOW[@]}" 2>"$WORK/akill.log" &
job=$!
started akill 480 "the job under a killed analyzer never started"
wait_for 20 snapshots_past "$snaps" || die "no state snapshot stored"
kill -KILL "$ANALYZER_PID"
wait "$ANALYZER_PID" 2>/dev/null || true
start_analyzer --quiet --config "$WORK/analyzer.yaml"
ANALYZER_PID=${PIDS##* }
HEALTHZ=${ANALYZER_METRICS%/metrics}/healthz
wait "$job" || die "job akill failed: $(tail -5 "$WORK/akill.log")"
wait_report akill 299
echo "      $(grep -m1 'restored' "$ANALYZER_LOG" | sed 's/.*analyzer: //')"
same_report() { # JOB: the verdict, the steps analysed and the rank-steps of the control
	python3 - "$WORK/ctl.json" "$WORK/$1.json" <<'PY'
import json, sys
def facts(path):
    s = json.load(open(path))["status"]
    d = s.get("data", {})
    return (s["state"], sorted((r["rank"], r["cause"]) for r in s["slowRanks"]), s["stepsAnalyzed"],
            d.get("rankStepsExpected"), d.get("rankStepsMissing"), d.get("rankStepsLate"))
ctl, got = facts(sys.argv[1]), facts(sys.argv[2])
print("      control: %s\n      this run: %s" % (ctl, got))
sys.exit(0 if ctl == got else 1)
PY
}
expect "the analyzer killed and started again: restored from its snapshot, the report is the control's" \
	same_report akill

# ---- the relay killed (SIGKILL) mid-job, a new one started on its ring folder 3 s later: the
# same producers go on (their .relay files), the backlog is drained rank by rank and
# reordered by the analyzer; only what the killed relay held is missing, and it is counted -
before=$(metric trainscope_analyzer_steps_total)
"$BIN/trainscope" run --nats "$NATS_URL" --job rkill -- "$BIN/workload" --ranks 4 --steps 300 \
	--fault compute "${SLOW[@]}" 2>"$WORK/rkill.log" &
job=$!
started rkill 320 "the job under a killed relay never started"
relay=$(pgrep -P "$job" -f trainscope-relay) || die "no relay under trainscope run"
ring_dir=$(tr '\0' '\n' <"/proc/$relay/cmdline" | sed -n '/^--ring-dir$/{n;p}')
kill -KILL "$relay"
sleep 3 # the fault: no relay this long, the rings fill
"$BIN/trainscope-relay" --ring-dir "$ring_dir" --nats "$NATS_URL" --metrics-port 0 \
	2>"$WORK/relay2.log" &
relay2=$!
PIDS="$PIDS $relay2"
wait "$job" || die "job rkill failed: $(tail -5 "$WORK/rkill.log")"
rings_gone() { ! ls "$ring_dir"/*.ring >/dev/null 2>&1; }
wait_for 60 rings_gone || die "the new relay never drained the rings: $(tail -5 "$WORK/relay2.log")"
served_as_declared "$BIN/trainscope-relay" "$(grep -o 'http://[0-9.:]*/metrics' "$WORK/relay2.log")"
kill -TERM "$relay2"
wait "$relay2" || true
wait_report rkill 299
echo "      $(grep -c 'resumed after seq' "$WORK/relay2.log") of 4 producers resumed by the new relay"
relay_restarted() {
	python3 - "$WORK/ctl.json" "$WORK/rkill.json" <<'PY'
import json, sys
ctl, got = (json.load(open(p))["status"] for p in sys.argv[1:3])
verdict = lambda s: (s["state"], sorted((r["rank"], r["cause"]) for r in s["slowRanks"]))
d = got["data"]
print("      control: %s; after the relay's restart: %s, %d steps analysed, %s" %
      (verdict(ctl), verdict(got), got["stepsAnalyzed"], d))
# a step whose every rank was in the lost batches has no data at all: not analysed
sys.exit(0 if verdict(got) == verdict(ctl) and d["rankStepsLate"] == 0 and
         ctl["stepsAnalyzed"] - d["batchesLost"] <= got["stepsAnalyzed"] <= ctl["stepsAnalyzed"] and
         (d["rankStepsMissing"] == 0 and got["stepsAnalyzed"] == ctl["stepsAnalyzed"] or
          d["batchesLost"] > 0) else 1)
PY
}
expect "the relay killed and started again: the control's verdict, nothing late, what it lost counted" \
	relay_restarted
resumed_all() { [ "$(grep -c 'resumed after seq' "$WORK/relay2.log")" -eq 4 ]; }
expect "the relay killed and started again: all 4 producers resumed their ids and sequences" resumed_all

# ---- the relay stopped (SIGSTOP) until small rings overflow, then let go: the report says
# the verdict stands on incomplete data, and how much is missing ----------------------------
before=$(metric trainscope_analyzer_steps_total)
TRAINSCOPE_RING_SLOTS=256 "$BIN/trainscope" run --nats "$NATS_URL" --job rstop -- "$BIN/workload" \
	--ranks 4 --steps 300 2>"$WORK/rstop.log" &
job=$!
started rstop 160 "the job under a stopped relay never started"
relay=$(pgrep -P "$job" -f trainscope-relay) || die "no relay under trainscope run"
kill -STOP "$relay"
sleep 3 # the fault: the relay stopped this long, 256-slot rings overflow
kill -CONT "$relay"
wait "$job" || die "job rstop failed: $(tail -5 "$WORK/rstop.log")"
incomplete_said() {
	"$BIN/trainscope" report --dir "$REPORTS" --job rstop --namespace default --json >"$WORK/rstop.json" &&
		python3 - "$WORK/rstop.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["status"]
c = {c["type"]: c for c in s["conditions"]}["DataComplete"]
print("      %s: %s (%s)" % (c["status"], c["message"], s["data"]))
sys.exit(0 if c["status"] == "False" and s["data"]["droppedInRings"] > 0 and
         "incomplete data" in c["message"] else 1)
PY
}
expect "the relay stopped until the rings overflowed: the report says its verdict stands on incomplete data" \
	wait_for 30 incomplete_said

# ---- the report folder's disk full (a 1 MiB tmpfs, filled), then space returns: said once,
# with its real cause, a metric, and the report written once there is room. The analyzer
# runs in a folder on another tmpfs: a temporary file made there could not be renamed
# into the report folder (EXDEV) ------------------------------------------------------------
disk_full() {
	local dir="$WORK/disk" wd="$WORK/wd" log pid m fm d
	mkdir -p "$dir" "$wd"
	for d in "$dir" "$wd"; do
		mount -t tmpfs -o size=1m trainscope-faults "$d" 2>/dev/null ||
			{ echo "      cannot mount a tmpfs (not root?): not tried"; return 0; }
		MOUNTS="$MOUNTS $d"
	done
	log="$WORK/disk-analyzer.log"
	(bin=$(realpath "$BIN") && cd "$wd" && exec "$bin/trainscope-analyzer" --nats "$NATS_URL" \
		--durable diskfull --report-dir "$dir/r" --metrics-port 0 --quiet 2>"$log") &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for 15 grep -q "consuming" "$log" || return 1
	m=$(grep -o 'http://[0-9.:]*/metrics' "$log" | head -1)
	fm() { curl -sf -m 2 "$m" | awk -v n="$1" '$1 == n { print $2 }'; }
	failing() { [ "$(fm trainscope_analyzer_report_dir_failing)" = "$1" ]; }
	reports_there() { [ -n "$(ls "$dir/r" 2>/dev/null)" ]; }
	wait_for 60 reports_there || return 1 # those of the jobs so far (the stream replayed)
	dd if=/dev/zero of="$dir/fill" bs=4k 2>/dev/null || true
	run_job dfull 4 60 none || return 1
	wait_for 30 failing 1 || { echo "      report_dir_failing never 1"; return 1; }
	rm -f "$dir/fill"
	wait_for 30 failing 0 || { echo "      report_dir_failing never back to 0"; return 1; }
	"$BIN/trainscope" report --dir "$dir/r" --job dfull --namespace default --wait-step 59 \
		--timeout 30 --json >/dev/null || return 1
	echo "      $(grep -c 'cannot write' "$log") warning(s): $(grep -m1 'cannot write' "$log" | sed 's/.*analyzer: //')"
	[ "$(grep -c 'cannot write' "$log")" -le 2 ] && ! ls "$dir"/r/*.tmp >/dev/null 2>&1 &&
		grep -q "cannot write.*No space left on device" "$log" && [ -z "$(ls -A "$wd")" ]
}
expect "the report folder's disk full, then freed: said once, a metric, the report written after" disk_full

# ---- a rank killed (SIGKILL): the report says it was lost and the job ended abnormally ----
before=$(metric trainscope_analyzer_steps_total)
"$BIN/trainscope" run --nats "$NATS_URL" --job killed -- "$BIN/workload" --ranks 4 --steps 600 \
	2>"$WORK/killed.log" &
job=$!
started killed 400 "the job to kill never started"
victim=$(rank_pid killed 2)
[ -n "$victim" ] || die "no process of rank 2"
kill -KILL $victim
wait "$job" || true
lost_named() {
	"$BIN/trainscope" report --dir "$REPORTS" --job killed --namespace default --json >"$WORK/killed.json" &&
		python3 - "$WORK/killed.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["status"]
lost = [r["rank"] for r in s.get("lostRanks", [])]
cond = {c["type"]: c for c in s["conditions"]}
print("      state %s, lost %s, last step %s: %s; %s" % (s["state"], lost, s["lastStep"],
      cond["Hang"]["message"], cond["DataComplete"]["message"]))
# the launcher may take other ranks down with it: they are lost too, rank 2 among them
sys.exit(0 if s["state"] == "Hang" and 2 in lost and "ended abnormally" in cond["Hang"]["message"]
         else 1)
PY
}
lost_reported() { wait_for 30 lost_named >/dev/null && lost_named; }
expect "a rank killed (SIGKILL): the report names it lost and says the job ended abnormally" lost_reported

# ---- a job name run again: a new attempt with a fresh report, not the first run's ------
attempts_at_least() { [ "$(metric trainscope_analyzer_job_attempts_total)" -ge "$1" ]; }
run_twice() {
	local before
	before=$(metric trainscope_analyzer_job_attempts_total)
	run_job twice 4 120 compute "${SLOW[@]}" && wait_report twice 119 && check_report twice 2 Compute &&
		run_job twice 4 120 none && wait_for 30 attempts_at_least $((before + 1)) &&
		wait_report twice 119 && check_report twice healthy
}
expect "a job name run again (rank 2 slow, then healthy): the second report is the second run's" run_twice

# ---- the analyzer's durable consumer deleted by another client: made again, nothing lost ----
recreated() { [ "$(metric trainscope_analyzer_consumer_recreated_total)" -ge 1 ]; }
consumer_back() {
	"$BIN/forge" --nats "$NATS_URL" --delete-consumer trainscope-analyzer || return 1
	run_job gone 4 60 none # published while the consumer is gone
	wait_for 30 recreated && wait_report gone 59 && check_report gone healthy
}
expect "the durable consumer deleted: made again from where it was, the next job still reported" consumer_back

# ---- a JetStream store too small for the stream: the cause is said, not only at debug ----
store_nats() { # DIR SIZE: a nats-server of its own, its JetStream store SIZE; sets url
	mkdir -p "$1"
	printf 'listen: 127.0.0.1:-1\njetstream { store_dir: "%s/js", max_file_store: %s }\n' "$1" "$2" >"$1/n.conf"
	nats-server -c "$1/n.conf" --ports_file_dir "$1" >"$1/log" 2>&1 &
	local pid=$!
	PIDS="$PIDS $pid"
	wait_for 15 test -s "$1/nats-server_$pid.ports" || return 1
	url=$(grep -o 'nats://127.0.0.1:[0-9]*' "$1/nats-server_$pid.ports" | head -1)
}
small_store() {
	local dir="$WORK/small" url
	store_nats "$dir" 1MB || return 1
	"$BIN/trainscope-analyzer" --nats "$url" --metrics-port -1 --report-dir "$dir/r" 2>"$dir/analyzer.log" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "insufficient storage" "$dir/analyzer.log" || return 1
	grep -m1 "insufficient storage" "$dir/analyzer.log" | sed 's/^/      /'
}
expect "a JetStream store too small: the analyzer says why it waits" small_store

# ---- JetStream's store filled by another tenant mid-job, then freed: the relay's refused
# batches are resent, the analyzer's snapshots fail (/healthz 503 and a metric say so) and
# are stored again, and the report has every rank-step -------------------------------------
code_is() { [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1")" = "$2" ]; }
store_full() {
	local dir="$WORK/full" url log m fm
	store_nats "$dir" 64MB || return 1
	log="$dir/analyzer.log"
	TRAINSCOPE_STREAM_MAX_BYTES=32M "$BIN/trainscope-analyzer" --nats "$url" --snapshot-s 1 \
		--stall-s 3 --metrics-port 0 --report-dir "$dir/r" --quiet 2>"$log" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "consuming" "$log" || return 1
	m=$(grep -o 'http://[0-9.:]*/metrics' "$log" | head -1)
	fm() { curl -sf -m 2 "$m" | awk -v n="$1" '$1 == n { print $2 }'; }
	full_steps() { [ "$(fm trainscope_analyzer_steps_total)" -ge "$1" ]; }
	# 1,500 steps of about 18 ms: the job still runs for some 20 s after the faults below
	# (done 6 s after its first 100 steps here), not the 60 s of 45 ms steps
	TRAINSCOPE_STREAM_MAX_BYTES=32M "$BIN/trainscope" run --nats "$url" --job full -- \
		"$BIN/workload" --ranks 4 --steps 1500 --dataloader-ms 15 2>"$dir/job.log" &
	local job=$!
	wait_for 60 full_steps 400 || return 1
	"$BIN/forge" --nats "$url" --fill-store $((64 << 20)) 2>&1 | sed 's/^/      /'
	# the job still runs: its batches, refused now, are what the analyzer cannot store
	kill -0 "$job" 2>/dev/null || { echo "      the job ended before the store was full"; return 1; }
	wait_for 30 code_is "${m%/metrics}/healthz" 503 || { echo "      /healthz never failed"; return 1; }
	echo "      store full: /healthz $(curl -s -m 2 "${m%/metrics}/healthz")"
	[ "$(fm trainscope_analyzer_snapshot_failing)" = 1 ] || return 1
	stored_is() { # the report's condition Stored
		python3 - "$dir/r/default_full.json" "$1" <<'PY'
import json, sys
c = {c["type"]: c for c in json.load(open(sys.argv[1]))["status"]["conditions"]}["Stored"]
sys.exit(0 if c["status"] == sys.argv[2] else 1)
PY
	}
	wait_for 10 stored_is False || { echo "      the report never said Stored=False"; return 1; }
	"$BIN/forge" --nats "$url" --free-store || return 1
	wait_for 30 code_is "${m%/metrics}/healthz" 200 || { echo "      /healthz never recovered"; return 1; }
	[ "$(fm trainscope_analyzer_snapshot_failing)" = 0 ] || return 1
	wait_for 10 stored_is True || { echo "      the report never said Stored=True again"; return 1; }
	wait "$job" || { echo "      the job failed: $(tail -3 "$dir/job.log")"; return 1; }
	"$BIN/trainscope" report --dir "$dir/r" --job full --namespace default --wait-step 1499 \
		--timeout 60 --json >"$dir/full.json" || return 1
	python3 - "$dir/full.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["status"]
d = s["data"]
print("      after the store was freed: %s, %d steps analysed, %s" % (s["state"], s["stepsAnalyzed"], d))
sys.exit(0 if s["stepsAnalyzed"] == 1500 and d["rankStepsExpected"] == 6000 and
         d["rankStepsMissing"] == 0 and d["batchesLost"] == 0 else 1)
PY
}
expect "JetStream's store full mid-job then freed: /healthz and the report say so, writes resume, no rank-step lost" store_full

# ---- a Kubernetes API server that never answers: analysis, report files and /metrics go on ----
blackhole_api() {
	local dir="$WORK/blackhole" port log pid m="" t0
	mkdir -p "$dir"
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(128)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])  # accepted, never answered' >"$dir/port" &
	PIDS="$PIDS $!"
	wait_for 10 test -s "$dir/port" || return 1
	port=$(cat "$dir/port")
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 1 \
		-subj /CN=blackhole 2>/dev/null
	write_kubeconfig "https://127.0.0.1:$port" "$dir/ca.crt" nobody token "$dir/kubeconfig"
	log="$dir/analyzer.log"
	"$BIN/trainscope-analyzer" --nats "$NATS_URL" --durable blackhole --report-dir "$dir/reports" \
		--metrics-port 0 --kubeconfig "$dir/kubeconfig" --k8s-stop-s 2 --quiet 2>"$log" &
	pid=$!
	PIDS="$PIDS $pid"
	wait_for 15 grep -q "metrics on" "$log" || return 1
	m=$(grep -o 'http://[0-9.:]*/metrics' "$log" | head -1)
	t0=$(date +%s)
	run_job api-a 4 60 none && run_job api-b 4 60 none && run_job api-c 4 60 none || return 1
	for j in api-a api-b api-c; do
		"$BIN/trainscope" report --dir "$dir/reports" --job $j --namespace default --wait-step 59 \
			--timeout 30 --json >/dev/null || return 1
	done
	echo "      3 jobs analysed in $(($(date +%s) - t0)) s; $(curl -sf -m 2 "$m" | grep '^trainscope_analyzer_k8s_queued ')"
	curl -sf -m 2 "${m%/metrics}/healthz" >/dev/null && curl -sf -m 2 "$m" >/dev/null || return 1
	# it stops within --k8s-stop-s: the request under way is cut off
	t0=$(date +%s.%N)
	kill -TERM "$pid"
	wait_for 10 sh -c "! kill -0 $pid 2>/dev/null" || { echo "      the analyzer did not stop in 10 s"; return 1; }
	echo "      stopped $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-4) s after SIGTERM (--k8s-stop-s 2)"
	grep -m1 "statuses not written\|could not write" "$log" | sed 's/^/      /'
	return 0
}
expect "a Kubernetes API server that never answers: jobs still analysed, /metrics answers, the analyzer stops" blackhole_api

# ---- /healthz tells a stalled consume loop: NATS frozen blocks the consumer check 5 s --
stall_code() { curl -s -o /dev/null -m 2 -w '%{http_code}' "$STALL_HEALTHZ"; }
stall_ok() { [ "$(stall_code)" = 200 ]; }
stall_bad() { [ "$(stall_code)" = 503 ]; }
stall_health() {
	local dir="$WORK/stall" npid url seen
	mkdir -p "$dir"
	nats-server -a 127.0.0.1 -p -1 -js -sd "$dir/js" --ports_file_dir "$dir" >"$dir/log" 2>&1 &
	npid=$!
	PIDS="$PIDS $npid"
	wait_for 15 test -s "$dir/nats-server_$npid.ports" || return 1
	url=$(grep -o 'nats://127.0.0.1:[0-9]*' "$dir/nats-server_$npid.ports" | head -1)
	"$BIN/trainscope-analyzer" --nats "$url" --metrics-port 0 --stall-s 2 --quiet \
		--report-dir "$dir/r" 2>"$dir/analyzer.log" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "consuming" "$dir/analyzer.log" || return 1
	STALL_HEALTHZ=$(grep -o 'http://[0-9.:]*/metrics' "$dir/analyzer.log" | head -1)
	STALL_HEALTHZ=${STALL_HEALTHZ%/metrics}/healthz
	stall_ok || return 1
	kill -STOP "$npid"
	wait_for 20 stall_bad
	seen=$?
	echo "      frozen NATS: /healthz $(curl -s -m 2 "$STALL_HEALTHZ")"
	kill -CONT "$npid"
	[ "$seen" -eq 0 ] && wait_for 20 stall_ok
}
expect "/healthz fails while the consume loop is stuck (--stall-s 2, NATS frozen) and recovers" stall_health

# ---- NATS slow for one analyzer: every reply 2 s late (e2e/slowproxy.py between them) --
# /healthz and /readyz answer in under 100 ms throughout, the jobs are analysed whole
slow_nats() {
	local dir="$WORK/slow" ppid url m worst job jobs="" direct
	# a server of its own: the analyzer's durable reads the stream from its start, and on
	# the suite's server that is every job before (some 40 s of 2 s replies)
	store_nats "$dir/nats" 4GB || return 1 # room for the stream's reservation (1G)
	direct=$url
	python3 e2e/slowproxy.py --listen 0 --to "${direct#nats://}" --delay 2 \
		--ports-file "$dir/port" 2>"$dir/proxy.log" &
	ppid=$!
	PIDS="$PIDS $ppid"
	wait_for 10 test -s "$dir/port" || return 1
	url="nats://127.0.0.1:$(cat "$dir/port")"
	"$BIN/trainscope-analyzer" --nats "$url" --durable slow-analyzer --metrics-port 0 \
		--report-dir "$dir/r" --quiet 2>"$dir/analyzer.log" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "consuming" "$dir/analyzer.log" || return 1
	m=$(grep -o 'http://[0-9.:]*/metrics' "$dir/analyzer.log" | head -1)
	kill -USR1 "$ppid" # the server turns slow
	for job in slow1 slow2; do
		"$BIN/trainscope" run --nats "$direct" --job "$job" -- "$BIN/workload" --ranks 4 \
			--steps 150 --fault none 2>"$WORK/$job.log" &
		jobs="$jobs $!"
	done
	# the probes' time while the jobs run and the analyzer works through the slow server
	worst=$(python3 - "${m%/metrics}" "$dir/r" <<'PY'
import json, os, sys, time, urllib.request
base, reports = sys.argv[1], sys.argv[2]
def whole(job):
    try:
        return json.load(open(os.path.join(reports, "default_%s.json" % job)))["status"]["lastStep"] >= 149
    except (OSError, ValueError, KeyError):
        return False
worst, end = 0.0, time.time() + 150
while time.time() < end and not (whole("slow1") and whole("slow2")):
    for path in ("/healthz", "/readyz"):
        t = time.monotonic()
        try:
            urllib.request.urlopen(base + path, timeout=2).read()
        except Exception:
            pass # a 503 is an answer; a timeout counts as 2 s
        worst = max(worst, time.monotonic() - t)
    time.sleep(0.2)
print("%.3f %s" % (worst, whole("slow1") and whole("slow2")))
PY
)
	for job in $jobs; do wait "$job" || return 1; done
	# the two jobs' own reports: every step analysed, no rank-step missing or late, no
	# batch lost
	local data
	data=$(python3 - "$dir/r" <<'PY'
import json, os, sys
out = []
for job in ("slow1", "slow2"):
    s = json.load(open(os.path.join(sys.argv[1], "default_%s.json" % job)))["status"]
    d = s["data"]
    out.append("%s %d %d %d %d %d" % (job, s["stepsAnalyzed"], d["rankStepsExpected"],
                                      d["rankStepsMissing"], d["rankStepsLate"], d["batchesLost"]))
print(", ".join(out))
PY
) || return 1
	# the delay took: the analyzer's verdicts came more than 2 s after the steps
	local lag
	lag=$(curl -sf -m 2 "$m" | awk '$1 == "trainscope_analyzer_verdict_lag_max_seconds" { print $2 }')
	echo "      replies 2 s late: verdicts up to ${lag} s after the steps; slowest /healthz or /readyz" \
		"${worst% *} s; both reports whole: ${worst#* }; job steps analysed, rank-steps expected," \
		"missing, late, batches lost: $data"
	kill -USR2 "$ppid"
	python3 -c "import sys; sys.exit(float(sys.argv[1]) < 2)" "$lag" && [ "${worst#* }" = True ] && python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 0.1)" "${worst% *}" &&
		[ "$data" = "slow1 150 600 0 0 0, slow2 150 600 0 0 0" ]
}
expect "NATS slow (every reply 2 s late): /healthz and /readyz under 100 ms throughout, two jobs analysed whole, nothing lost" slow_nats

# ---- hostile producers -------------------------------------------------------------------
answers() { curl -sf -m 2 "$HEALTHZ" >/dev/null && curl -sf -m 2 "$ANALYZER_METRICS" >/dev/null; }
refused() { metric "trainscope_analyzer_refused_over_limit_total{limit=\"$1\"}"; }
"$BIN/forge" --nats "$NATS_URL" --job jumpy --world 2 --producer 77 --seq 1 --steps 8
"$BIN/forge" --nats "$NATS_URL" --job jumpy --world 2 --producer 77 --seq 2 --step $((1 << 62))
jumped() { [ "$(refused step_jump)" -ge 1 ]; }
jump_refused() { wait_for 20 jumped && answers; }
expect "a step of 2^62: refused and counted; /healthz and /metrics answer" jump_refused
rss0=$(rss_mib)
"$BIN/forge" --nats "$NATS_URL" --job wide --world 1000000 --rank 999999 --steps 4
wide() { [ "$(refused world)" -ge 1 ]; }
wide_refused() {
	wait_for 20 wide || return 1
	echo "      memory $rss0 -> $(rss_mib) MiB"
	[ "$(rss_mib)" -lt $((rss0 + 16 * MEM_FACTOR)) ]
}
expect "a world of a million ranks: refused and counted, memory bounded" wide_refused
# 10,000 silent jobs from one namespace hold its share of the table (limits.namespace_share:
# 512 of 1,024), refused past it in that namespace only; another namespace's real job gets
# its report as soon as ever, not after the flood's ttl. E2E_FLOOD_JOBS: fewer under
# ThreadSanitizer (make tsan), whose analyzer takes 10,000 new jobs in minutes
FLOOD=${E2E_FLOOD_JOBS:-10000}
"$BIN/forge" --nats "$NATS_URL" --ns flood --job many --jobs "$FLOOD" --world 2 --steps 2
refused_in() { metric "trainscope_analyzer_jobs_refused_total{k8s_namespace=\"$1\"}"; }
flooded() { [ "$(metric trainscope_analyzer_messages_total)" -ge "$FLOOD" ] && [ "$(refused_in flood)" -ge $((FLOOD - 512)) ]; }
flood_bounded() { # memory: growth, as sanitizer builds start (and keep freed memory) higher
	local rss1
	wait_for 60 flooded || true
	rss1=$(rss_mib)
	echo "      $(metric trainscope_analyzer_jobs) jobs followed (limit 1024), $(refused_in flood) refused" \
		"in namespace flood, memory $rss0 -> $rss1 MiB, job state" \
		"$(($(metric trainscope_analyzer_job_state_bytes) >> 20)) MiB"
	[ "$(metric trainscope_analyzer_jobs)" -le 1024 ] && [ "$(refused_in flood)" -ge $((FLOOD - 512)) ] &&
		[ "$rss1" -lt $((rss0 + 128 * MEM_FACTOR)) ] && answers
}
expect "$FLOOD silent jobs from one namespace: its share followed, the rest refused and counted there, memory bounded" \
	flood_bounded
report_within() { # SECONDS JOB: the job (4 ranks, 80 steps) run now, its report whole in SECONDS after it ends
	local t0
	run_job "$2" 4 80 none
	t0=$(date +%s.%N)
	"$BIN/trainscope" report --dir "$REPORTS" --job "$2" --wait-step 79 --timeout "$1" --json \
		>"$WORK/$2.json" || { echo "      no whole report for $2 in $1 s"; return 1; }
	echo "      $2: report whole $(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0") s after the job ended"
	check_report "$2" healthy
}
expect "another namespace's job during that flood gets its report at once" report_within 20 amid
# 10,000 jobs that end at once (one rank each, its last batch): the finished give way
"$BIN/forge" --nats "$NATS_URL" --ns ended --job short --jobs "$FLOOD" --world 1 --steps 2 --final
given_up() { [ "$(metric trainscope_analyzer_jobs_given_up_total)" -ge $((FLOOD - 512)) ]; }
ended_flood() {
	wait_for 60 given_up || { echo "      $(metric trainscope_analyzer_jobs_given_up_total) given up"; return 1; }
	echo "      $(metric trainscope_analyzer_jobs_given_up_total) finished jobs given up," \
		"$(refused_in ended) refused in namespace ended"
	[ "$(refused_in ended)" = "" ] && report_within 20 after-ended
}
expect "$FLOOD finished jobs: given up for new ones, none refused; a real job gets its report at once" ended_flood
# the silent flood is forgotten after limits.job_ttl_s: its own namespace takes jobs again
room() { [ "$(metric trainscope_analyzer_jobs)" -lt 100 ]; }
after_flood() {
	wait_for 60 room || return 1
	TRAINSCOPE_NAMESPACE=flood run_job after 4 80 none && wait_report after 79 flood &&
		check_report after healthy
}
expect "the flood's silent jobs are forgotten after limits.job_ttl_s; its namespace's next job gets its report" \
	after_flood

expect "every report (hangs, lost ranks, floods) fits the CRD: nothing pruned, all described" check_crd
served_as_declared "$BIN/trainscope-analyzer" "$ANALYZER_METRICS"

# nats.c's threads take SIGTERM, and a process's signal may land on any of them. The
# handler runs there while the main loop reads the stop flag on its own thread; under
# ThreadSanitizer (make faults-tsan) a flag shared without synchronisation is reported
# (session 34: a volatile sig_atomic_t was).
expect "SIGTERM delivered to an analyzer thread other than the main one (the first to take it, nats.c's): it stops, exit 0" \
	stops_on_thread_term "$ANALYZER_PID" 30

echo "faults: $passed passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passed" -eq 29 ]
