# SPDX-License-Identifier: Apache-2.0
# Shared by the e2e scripts: start real servers on loopback, clean up on exit.
# Needs BUILD (the build folder). Sets NATS_URL, WORK, ANALYZER_LOG, REPORTS.

BIN="$BUILD/bin"
# The ranks of these jobs share the machine's cores: a rank's sleep or CPU time really
# drifts by a few percent for tens of steps, and the change points name what lasts. The
# demo and the e2e tests inject slowdowns of 30 % and more of a phase, so their analyzers
# name only excesses of 10 % of a phase (the default, 0, names 3-5 % slowdowns:
# bench/results/detect.md).
export TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS=${TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS:-0.1}
# A burst of the machine (the whole job 25 % slower for about 15 steps, one rank's compute
# +23 % for 7 of them) passed the default sum of 15 once in a CI run: a sum of 45 (15
# steps at least) names only what lasts longer; the injected faults last 100 steps.
export TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD=${TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD:-45}
# Their one communicator is a ring over loopback TCP whose ~1 ms transfer is the
# scheduler's doing (8 ranks, 2 cores): a communicator is named only at twice its
# baseline (the network fault injected adds 20 times it).
export TRAINSCOPE_ANALYZER_NETWORK_DRIFT=${TRAINSCOPE_ANALYZER_NETWORK_DRIFT:-1}
# The synthetic workload's faults are 10-30 % of one phase on 2-core machines, under the
# floors the analyzer learnt from healthy real jobs (verdict.*: a rank is named when the
# job slowed a quarter waiting for it; bench/data, make real-bench): these suites judge
# the statistics alone.
export TRAINSCOPE_ANALYZER_VERDICT_WAIT_FLOOR=${TRAINSCOPE_ANALYZER_VERDICT_WAIT_FLOOR:-0}
WORK=$(mktemp -d /tmp/trainscope-e2e-XXXXXX)
REPORTS="$WORK/reports"
PIDS=""

servers_gone() {
	local p
	for p in $PIDS; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
# PIDS stopped: 5 s to stop (a kube-apiserver drains its watches for minutes), then killed
stop_servers() {
	local p
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	wait_for 5 servers_gone || for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
}
cleanup() {
	local rc=$?
	stop_servers
	for m in ${MOUNTS:-}; do umount -l "$m" 2>/dev/null || true; done
	[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT INT TERM

die() { echo "e2e: $*" >&2; exit 1; }

# A test's checks: pass MESSAGE and fail MESSAGE print "ok    MESSAGE" or
# "FAIL  MESSAGE" and count it in passed or fails; expect NAME CMD... runs CMD (a
# command, a function, or eval 'CONDITION') and passes or fails NAME by its exit status.
# A failure says more where the script defines expect_detail: "FAIL  NAME: <its output>".
# Each line ends with the seconds since the check before it (or the script's start): where
# a suite's time goes.
passed=0
fails=0
check_t0=${EPOCHREALTIME/[,.]/}
since_check() { # check_took="(S.s s)" since the last check; restarts the count
	local now=${EPOCHREALTIME/[,.]/}
	printf -v check_took '(%d.%d s)' $(((now - check_t0) / 1000000)) \
		$(((now - check_t0) / 100000 % 10))
	check_t0=$now
}
pass() { since_check; echo "ok    $* $check_took"; passed=$((passed + 1)); }
fail() { since_check; echo "FAIL  $* $check_took"; fails=$((fails + 1)); }
expect_detail() { :; }
expect() { # NAME CMD... (E2E_ONLY=TEXT: only the cases whose name holds TEXT run)
	local name=$1 detail
	shift
	case $name in *"${E2E_ONLY:-}"*) ;; *) return 0 ;; esac
	if "$@"; then
		pass "$name"
	else
		detail=$(expect_detail)
		fail "$name${detail:+: $detail}"
	fi
}

# served_as_declared PROGRAM URL|FILE: expects that PROGRAM's /metrics (at URL, or as
# scraped into FILE) serves its families as its table declares them (--print-metrics;
# scripts/metrics-check.py says what differs).
served_as_declared() {
	expect "$(basename "$1"): /metrics serves its families as declared" \
		python3 "$(dirname "${BASH_SOURCE[0]}")/../scripts/metrics-check.py" "$1" "$2"
}

# metric NAME[{labels}]: the value of one of the analyzer's metrics now (start_analyzer),
# empty when it has none or does not answer.
metric() { curl -sf -m 2 "$ANALYZER_METRICS" | awk -v n="$1" '$1 == n { print $2 }'; }

# free_port: a loopback TCP port free now, below the kernel's ephemeral range: a port the
# kernel hands out would be every outbound connection's to take meanwhile (a CI run's
# kube-apiserver lost its port to one of its own connections to etcd: "bind: address
# already in use").
free_port() {
	python3 -c 'import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randrange(10000, max(low, 10001))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("free_port: no free port below %d" % low)'
}

# descends PID: true when PID is this suite's (a descendant of its shell): suites share
# job names (both fault suites have a "killed"), so one run beside another must not take
# the other's ranks.
descends() {
	local p=$1
	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		[ "$p" = $$ ] && return 0
		p=$(awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$p/stat" 2>/dev/null)
	done
	return 1
}

# rank_pid JOB RANK: the workload process of that rank of the job trainscope run started
# (its TRAINSCOPE_JOB and RANK) in this suite, empty when none.
rank_pid() {
	local p env
	for p in $(pgrep -f workload); do # ranks exec /proc/self/exe: matched by their arguments
		env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
		grep -qx "TRAINSCOPE_JOB=$1" <<<"$env" && grep -qx "RANK=$2" <<<"$env" &&
			descends "$p" && echo "$p"
	done
	return 0
}

# start_jaeger: Jaeger all-in-one (tools.sh) on free loopback ports, traces in memory.
# Sets JAEGER_OTLP (its OTLP/HTTP base URL) and JAEGER_QUERY (its query API).
# The agent's UDP ports (unused here) are the system's to pick: free_port probes TCP, and
# a UDP port it called free was once taken ("bind: address already in use").
start_jaeger() {
	local otlp_port query_port
	otlp_port=$(free_port); query_port=$(free_port)
	jaeger-all-in-one --collector.otlp.enabled=true \
		--collector.otlp.http.host-port "127.0.0.1:$otlp_port" \
		--collector.otlp.grpc.host-port "127.0.0.1:$(free_port)" \
		--collector.http-server.host-port "127.0.0.1:$(free_port)" \
		--collector.grpc-server.host-port "127.0.0.1:$(free_port)" \
		--query.http-server.host-port "127.0.0.1:$query_port" \
		--query.grpc-server.host-port "127.0.0.1:$(free_port)" \
		--admin.http.host-port "127.0.0.1:$(free_port)" \
		--processor.jaeger-binary.server-host-port 127.0.0.1:0 \
		--processor.jaeger-compact.server-host-port 127.0.0.1:0 \
		--processor.zipkin-compact.server-host-port 127.0.0.1:0 \
		--http-server.host-port "127.0.0.1:$(free_port)" >"$WORK/jaeger.log" 2>&1 &
	PIDS="$PIDS $!"
	JAEGER_OTLP="http://127.0.0.1:$otlp_port"
	JAEGER_QUERY="http://127.0.0.1:$query_port"
	wait_for 30 curl -sf "$JAEGER_QUERY/api/services" >/dev/null || die "jaeger: $(tail -5 "$WORK/jaeger.log")"
}

# term_other_thread PID: SIGTERM sent (tgkill) to one thread of PID other than its main
# one that takes it (not in its blocked set): a process's signal may land on any such
# thread, and the program must stop as on a plain SIGTERM. Prints the thread's id;
# fails, saying why, when PID has no such thread or the call fails.
term_other_thread() {
	local pid=$1 t mask
	for t in /proc/"$pid"/task/*; do
		t=${t##*/}
		[ "$t" != "$pid" ] || continue
		mask=$(awk '/^SigBlk/ { print $2 }' "/proc/$pid/task/$t/status" 2>/dev/null) || continue
		[ -n "$mask" ] && (((16#$mask >> 14) & 1)) && continue # SIGTERM, 15: bit 14
		python3 - "$pid" "$t" <<'PY' || return 1
import ctypes, os, platform, signal, sys
nr = {"x86_64": 234, "aarch64": 131}[platform.machine()]  # tgkill
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(nr, int(sys.argv[1]), int(sys.argv[2]), int(signal.SIGTERM)) != 0:
    sys.exit("tgkill: " + os.strerror(ctypes.get_errno()))
PY
		echo "$t"
		return 0
	done
	echo "no thread of $pid but its main one takes SIGTERM" >&2
	return 1
}

# stops_on_thread_term PID SECONDS: PID, a child of this shell, stops within SECONDS of a
# SIGTERM sent to one of its threads other than the main one (term_other_thread), with
# exit status 0, as on a plain SIGTERM; says what it saw when not.
stops_on_thread_term() {
	local pid=$1 tid rc=0
	tid=$(term_other_thread "$pid") || return 1
	wait_for "$2" eval "! kill -0 $pid 2>/dev/null" ||
		{ echo "still running $2 s after SIGTERM to thread $tid"; return 1; }
	wait "$pid" 2>/dev/null || rc=$?
	[ "$rc" -eq 0 ] || echo "exit status $rc after SIGTERM to thread $tid"
	[ "$rc" -eq 0 ]
}

# wait_for SECONDS CMD...: polls CMD every 0.1 s until it succeeds, SECONDS times
# E2E_TIME_FACTOR (1): a build under ThreadSanitizer runs several times slower
# (scripts/tsan-run.sh sets 3).
wait_for() {
	local deadline=$(( $(date +%s) + $1 * ${E2E_TIME_FACTOR:-1} )); shift
	until "$@" 2>/dev/null; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# write_kubeconfig SERVER CA USER TOKEN FILE: a kubeconfig with a bearer token.
write_kubeconfig() {
	cat >"$5" <<KC
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$1", certificate-authority: "$2"}}]
users: [{name: $3, user: {token: $4}}]
contexts: [{name: e2e, context: {cluster: e2e, user: $3}}]
current-context: e2e
KC
	chmod 600 "$5"
}

start_nats() {
	command -v nats-server >/dev/null || die "nats-server not found (make deps)"
	mkdir -p "$WORK/nats"
	nats-server -a 127.0.0.1 -p -1 -js -sd "$WORK/nats/js" --ports_file_dir "$WORK/nats" \
		>"$WORK/nats/log" 2>&1 &
	PIDS="$PIDS $!"
	local pid=$!
	wait_for 15 test -s "$WORK/nats/nats-server_$pid.ports" || die "nats-server did not start"
	NATS_URL=$(grep -o 'nats://127.0.0.1:[0-9]*' "$WORK/nats/nats-server_$pid.ports" | head -1)
	[ -n "$NATS_URL" ] || die "no client port in the ports file"
}

# start_nats_cluster N: N nats-servers (nats-server-auth, which tools.sh builds: stream
# subject transforms need 2.10 or later) routed to each other on loopback, routes
# authenticated, each with its own JetStream store; waits until each sees a JetStream
# meta leader. Sets CLUSTER_URLS (the client URLs, comma-separated) and the arrays
# NATS_PID, NATS_MON (monitoring ports), indexed 1..N. NATS_SET names the servers'
# folders under $WORK (default nats: nats1..natsN), for a second cluster beside one.
start_nats_cluster() {
	local n=$1 i routes="" pass
	pass=$(od -An -tx8 -N8 /dev/urandom | tr -d ' ')
	CLUSTER_URLS="" NATS_CPORT=() NATS_RPORT=() NATS_MON=() NATS_PID=()
	for i in $(seq 1 "$n"); do
		NATS_CPORT[i]=$(free_port) NATS_RPORT[i]=$(free_port) NATS_MON[i]=$(free_port)
		routes="$routes${routes:+, }nats-route://route:$pass@127.0.0.1:${NATS_RPORT[i]}"
		CLUSTER_URLS="$CLUSTER_URLS${CLUSTER_URLS:+,}nats://127.0.0.1:${NATS_CPORT[i]}"
	done
	for i in $(seq 1 "$n"); do
		mkdir -p "$WORK/${NATS_SET:-nats}$i"
		cat >"$WORK/${NATS_SET:-nats}$i/nats.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:${NATS_CPORT[i]}
http: 127.0.0.1:${NATS_MON[i]}
jetstream { store_dir: "$WORK/${NATS_SET:-nats}$i/js", max_file_store: 8G, max_memory_store: 64M }
EOF
		# one server alone has no routes (a cluster block would wait for peers)
		[ "$n" -gt 1 ] && cat >>"$WORK/${NATS_SET:-nats}$i/nats.conf" <<EOF
cluster {
  name: trainscope
  listen: 127.0.0.1:${NATS_RPORT[i]}
  authorization { user: route, password: "$pass" }
  routes: [$routes]
}
EOF
		start_cluster_node "$i"
	done
	for i in $(seq 1 "$n"); do
		wait_for 60 cluster_meta "$i" ||
			die "nats cluster: n$i sees no JetStream leader: $(tail -3 "$WORK/${NATS_SET:-nats}$i/log")"
	done
}
cluster_meta() { # a server alone: its JetStream up
	curl -sf "http://127.0.0.1:${NATS_MON[$1]}/jsz" | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if j.get("meta_cluster", {}).get("leader") or (sys.argv[1] == "1" and "config" in j) else 1)' \
		"${#NATS_PID[@]}"
}
# start_cluster_node I: (re)starts node I of start_nats_cluster on its store.
start_cluster_node() {
	nats-server-auth -c "$WORK/${NATS_SET:-nats}$1/nats.conf" >>"$WORK/${NATS_SET:-nats}$1/log" 2>&1 &
	PIDS="$PIDS $!"
	NATS_PID[$1]=$!
}

start_analyzer() {
	ANALYZER_LOG="$WORK/analyzer.log"
	"$BIN/trainscope-analyzer" --nats "$NATS_URL" --report-dir "$REPORTS" --metrics-port 0 \
		"$@" >"$WORK/analyzer.out" 2>"$ANALYZER_LOG" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "consuming" "$ANALYZER_LOG" || die "analyzer did not start: $(cat "$ANALYZER_LOG")"
	ANALYZER_METRICS=$(grep -o 'http://[0-9.:]*/metrics' "$ANALYZER_LOG" | head -1)
}

# run_job JOB RANKS STEPS FAULT [workload options...]
run_job() {
	local job=$1 ranks=$2 steps=$3 fault=$4; shift 4
	"$BIN/trainscope" run --nats "$NATS_URL" --job "$job" -- \
		"$BIN/workload" --ranks "$ranks" --steps "$steps" --fault "$fault" "$@" \
		2>"$WORK/$job.log" || die "job $job failed: $(tail -5 "$WORK/$job.log")"
}

# wait_report JOB LAST_STEP [NAMESPACE]: waits until the job's last step is analysed (60 s
# at most, times E2E_TIME_FACTOR).
wait_report() {
	"$BIN/trainscope" report --dir "$REPORTS" --job "$1" --namespace "${3:-default}" \
		--wait-step "$2" --timeout $((60 * ${E2E_TIME_FACTOR:-1})) --json >"$WORK/$1.json" || die "no complete report for $1"
}

# start_agent: the node agent (needs root or BPF capabilities, and kernel BTF).
start_agent() {
	AGENT_LOG="$WORK/agent.log"
	"$BIN/trainscope-agent" --nats "$NATS_URL" --metrics-port 0 "$@" \
		>"$WORK/agent.out" 2>"$AGENT_LOG" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "metrics on" "$AGENT_LOG" || die "agent did not start: $(cat "$AGENT_LOG")"
	AGENT_METRICS=$(grep -o 'http://[0-9.:]*/metrics' "$AGENT_LOG" | head -1)
}

# The host fault needs ranks that leave the CPU mostly idle (as with a GPU doing the
# compute), so that the hog on one core slows only the rank pinned there.
HOST_FAULT_OPTS="--matrix 48 --compute-iters 4"

# check_crd: every report written so far against the SlowNodeReport CRD: nothing in a
# status that the API server would prune, every field described.
check_crd() {
	local here
	here=$(dirname "${BASH_SOURCE[0]}")
	python3 "$here/check_crd.py" "$here/../crds/slownodereports.trainscope.dev.yaml" \
		"$REPORTS"/*.json >"$WORK/check_crd.txt" 2>&1
	local rc=$?
	tail -6 "$WORK/check_crd.txt" | sed 's/^/      /'
	return $rc
}

# check_report JOB EXPECT...: the report's verdict; on a miss, the analyzer's alarm trail.
check_report() {
	local job=$1; shift
	python3 "$(dirname "${BASH_SOURCE[0]}")/check_report.py" "$WORK/$job.json" "$@" && return 0
	grep "/$job: .*alarm" "$ANALYZER_LOG" | grep -v collective | sed 's/^/      /'
	return 1
}
