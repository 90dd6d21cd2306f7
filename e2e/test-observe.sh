#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What users look at, from real servers, for a large job: trainscope-loadgen publishes a
# 1,024-rank job with one slow rank to NATS (Debian's 2.9).
# Traces: the analyzer exports OTLP over HTTPS to an OpenTelemetry Collector (tools.sh
# builds it: TLS, bearer-token auth) that forwards to Jaeger. The collector takes only
# requests carrying the token, so OTEL_EXPORTER_OTLP_HEADERS and _CERTIFICATE must work
# for any trace to arrive.
# Metrics: Prometheus (tools.sh builds it) scrapes the analyzer, a node agent, the
# webhook and a relay, and answers every query of the chart's Grafana dashboard with
# the slow rank in view. Alerts: it evaluates the chart's alert rules as helm renders
# them; the job alerts fire for the job with the slow rank and none for a healthy one, and
# the other six (JobHung, DataLost, WebhookNotInjecting, NodeDegraded, AnalyzerBehind,
# AnalyzerRefusingJobs) each on its own fault.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
RANKS=${RANKS:-1024}
STEPS=${STEPS:-260}
SLOW=${SLOW:-700}


TOOLS=$(bash e2e/k8s/tools.sh otelcol jaeger prometheus helm) ||
	die "the collector, Jaeger, Prometheus or helm could not be built"
export PATH="$TOOLS:$PATH"

# ---- TLS for the collector: a CA and a certificate for 127.0.0.1 --------------------------
pki="$WORK/pki"; mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 1 \
	-subj /CN=otlp-e2e-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$pki/tls.key" -out "$pki/tls.csr" -subj /CN=127.0.0.1 2>/dev/null
openssl x509 -req -in "$pki/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 1 \
	-extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$pki/tls.crt" 2>/dev/null

start_nats
start_jaeger
token="e2e-$(od -An -tx8 -N8 /dev/urandom | tr -d ' ')"
col_port=$(free_port)
cat >"$WORK/collector.yaml" <<EOF
extensions:
  bearertokenauth: {scheme: Bearer, token: "$token"}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$col_port
        tls: {cert_file: $pki/tls.crt, key_file: $pki/tls.key}
        auth: {authenticator: bearertokenauth}
exporters:
  otlphttp: {endpoint: "$JAEGER_OTLP", compression: none}
service:
  extensions: [bearertokenauth]
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], exporters: [otlphttp]}
EOF
otelcol-trainscope --config "$WORK/collector.yaml" >"$WORK/collector.log" 2>&1 &
PIDS="$PIDS $!"
col="https://127.0.0.1:$col_port"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" "$@" -X POST \
	-H 'Content-Type: application/x-protobuf' --data-binary '' "$col/v1/traces"; }
col_up() { [ "$(code)" != 000 ]; }
wait_for 30 col_up ||
	die "collector: $(tail -5 "$WORK/collector.log")"
expect "the collector refuses a request without the token (HTTP $(code))" [ "$(code)" = 401 ]
expect "... and takes one with it" [ "$(code -H "Authorization: Bearer $token")" = 200 ]

# ---- the analyzer exports through it, configured as OpenTelemetry SDKs are -------------
OTEL_EXPORTER_OTLP_ENDPOINT="$col" OTEL_EXPORTER_OTLP_CERTIFICATE="$pki/ca.crt" \
OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20$token" \
OTEL_RESOURCE_ATTRIBUTES="deployment.environment.name=e2e" \
TRAINSCOPE_ANALYZER_LIMITS_MAX_JOBS=16 \
	start_analyzer --quiet --node-health-s 1

# ---- every component with /metrics, and Prometheus scraping them ------------------------
start_agent
wh_port=$(free_port)
"$BIN/trainscope-webhook" --plain-http --addr 127.0.0.1 --port "$wh_port" --nats "$NATS_URL" \
	>"$WORK/webhook.log" 2>&1 &
PIDS="$PIDS $!"
relay_port=$(free_port)
# a healthy job beside the big one; its ranks leave the CPU mostly idle, as with a GPU
# doing the compute (a CPU-bound one slows for real while the big job is analysed:
# fail-slow, rightly, and no longer a job to stay silent for)
"$BIN/trainscope" run --nats "$NATS_URL" --job small --relay-metrics-port "$relay_port" -- \
	"$BIN/workload" --ranks 2 --steps 100000 --fault none $HOST_FAULT_OPTS >"$WORK/small.log" 2>&1 &
PIDS="$PIDS $!"
prom_port=$(free_port)
PROM="http://127.0.0.1:$prom_port"
target() { local u=${1#http://}; echo "${u%/metrics}"; }
# the chart's alert rules as a Prometheus without the operator takes them (the
# PrometheusRule's spec), every duration 1 s so that the test need not wait minutes
helm template trainscope helm/trainscope --kube-version 1.29.0 --show-only templates/alerts.yaml \
	--set metrics.alerts.enabled=true --set metrics.alerts.failSlowFor=1s \
	--set metrics.alerts.lostFor=1s --set metrics.alerts.hangFor=1s \
	--set metrics.alerts.nodeDegradedFor=1s --set metrics.alerts.behindFor=1s \
	>"$WORK/alerts.yaml" 2>&1 || die "helm template alerts: $(tail -3 "$WORK/alerts.yaml")"
python3 -c 'import sys, yaml
yaml.safe_dump(yaml.safe_load(open(sys.argv[1]))["spec"], open(sys.argv[2], "w"))' \
	"$WORK/alerts.yaml" "$WORK/rules.yml" || die "the rendered PrometheusRule has no spec"
# ... and with the chart's defaults, against promtool's unit tests of every alert
# (e2e/alerts_test.yml: each fires on its fault's series after its `for`, none on a
# healthy cluster's)
mkdir -p "$WORK/promtool"
cp e2e/alerts_test.yml "$WORK/promtool/"
helm template trainscope helm/trainscope --kube-version 1.29.0 --show-only templates/alerts.yaml \
	--set metrics.alerts.enabled=true | python3 -c 'import sys, yaml
yaml.safe_dump(yaml.safe_load(sys.stdin)["spec"], open(sys.argv[1], "w"))' "$WORK/promtool/rules.yml" ||
	die "helm template alerts with the defaults"
expect "promtool: the chart's 8 alert rules pass their unit tests (e2e/alerts_test.yml)" \
	sh -c "promtool test rules '$WORK/promtool/alerts_test.yml' >'$WORK/promtool.log' 2>&1 || { tail -20 '$WORK/promtool.log'; false; }"
cat >"$WORK/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$WORK/rules.yml"]
scrape_configs:
  - {job_name: analyzer, static_configs: [{targets: ["$(target "$ANALYZER_METRICS")"]}]}
  - {job_name: agent, static_configs: [{targets: ["$(target "$AGENT_METRICS")"]}]}
  - {job_name: webhook, static_configs: [{targets: ["127.0.0.1:$wh_port"]}]}
  - {job_name: relay, static_configs: [{targets: ["127.0.0.1:$relay_port"]}]}
EOF
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
	--web.listen-address="127.0.0.1:$prom_port" >"$WORK/prometheus.log" 2>&1 &
PIDS="$PIDS $!"
query() { curl -sf "$PROM/api/v1/query" --data-urlencode "query=$1"; }
value() { query "$1" | python3 -c 'import json,sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
all_up() { [ "$(value 'sum(up)')" = 4 ]; }
expect "Prometheus scrapes the analyzer, the agent, the webhook and the relay (up == 1 for 4)" wait_for 60 all_up
"$BIN/trainscope-loadgen" --nats "$NATS_URL" --ranks "$RANKS" --steps "$STEPS" --step-ms 100 \
	--slow "$SLOW:1.5:60" --namespace team --job big | tee "$WORK/loadgen.out"
report="$REPORTS/team_big.json"
named() { python3 -c "
import json, sys
st = json.load(open('$report'))['status']
sys.exit(0 if any(r['rank'] == $SLOW for r in st.get('slowRanks', [])) else 1)"; }
expect "rank $SLOW of $RANKS is named" wait_for 120 named
# alerts: every rule of the chart loaded and evaluated without error; the job alerts
# firing for team/big (routed by its namespace), none at all for the healthy job small,
# and no cluster alert (nothing lost, refused, behind or uninjected here)
alerts() { # CHECK: firing / quiet, on /api/v1/rules and /api/v1/alerts
	curl -sf "$PROM/api/v1/rules" >"$WORK/rules.json" && curl -sf "$PROM/api/v1/alerts" >"$WORK/alerts.json" &&
		python3 - "$1" "$WORK/rules.json" "$WORK/alerts.json" <<'PY'
import json, sys
check = sys.argv[1]
rules = [r for g in json.load(open(sys.argv[2]))["data"]["groups"] for r in g["rules"]]
alerts = json.load(open(sys.argv[3]))["data"]["alerts"]
firing = {(a["labels"]["alertname"], a["labels"].get("training_job", ""), a["labels"].get("namespace", ""))
          for a in alerts if a["state"] == "firing"}
if check == "loaded":
    bad = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
    print("      %d rules: %s" % (len(rules), ", ".join(r["name"] for r in rules)))
    sys.exit(0 if len(rules) == 8 and not bad else 1)
want = {("TrainscopeJobFailSlow", "big", "team"), ("TrainscopeJobLosingGPUTime", "big", "team")}
if check == "firing":
    sys.exit(0 if want <= firing else 1)
if check == "faults":
    more = {("TrainscopeJobHung", "lost", "ops"), ("TrainscopeDataLost", "", ""),
            ("TrainscopeWebhookNotInjecting", "", ""), ("TrainscopeAnalyzerRefusingJobs", "", "flood"),
            ("TrainscopeNodeDegraded", "", ""), ("TrainscopeAnalyzerBehind", "", "")}
    nodes = {(a["labels"].get("node"), a["labels"].get("cause")) for a in alerts
             if a["state"] == "firing" and a["labels"]["alertname"] == "TrainscopeNodeDegraded"}
    print("      firing: %s; degraded: %s" % (sorted(firing), sorted(nodes)))
    sys.exit(0 if more <= firing and nodes == {("node-0", "Compute")} else 1)
print("      firing: %s" % sorted(firing))
sys.exit(0 if firing == want else 1)
PY
}
expect "the chart's 8 alert rules load into Prometheus and evaluate without error" wait_for 30 alerts loaded
expect "TrainscopeJobFailSlow and TrainscopeJobLosingGPUTime fire for team/big (label namespace=team)" \
	wait_for 60 alerts firing
expect "no alert for the healthy job small, and no cluster alert" alerts quiet
# ---- the other alerts on their faults: a job whose relay stopped until its rings
# overflowed, then a rank killed (DataLost, JobHung for ops/lost); a malformed review
# (WebhookNotInjecting); three jobs slow on one node (NodeDegraded for node-0); a job's
# steps 13 minutes late (AnalyzerBehind); 10 jobs of one namespace where the analyzer
# follows 16 jobs and a namespace half of them (AnalyzerRefusingJobs for flood) -----------
lost_step() { "$BIN/trainscope" report --dir "$REPORTS" --job lost --namespace ops --json 2>/dev/null |
	python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["status"]["lastStep"] >= int(sys.argv[1]) else 1)' "$1"; }
TRAINSCOPE_RING_SLOTS=256 "$BIN/trainscope" run --nats "$NATS_URL" --namespace ops --job lost -- \
	"$BIN/workload" --ranks 2 --steps 100000 >"$WORK/lost.log" 2>&1 &
lost_job=$!
PIDS="$PIDS $lost_job"
wait_for 60 lost_step 50 || die "the job lost never started: $(tail -5 "$WORK/lost.log")"
relay=$(pgrep -P "$lost_job" -f trainscope-relay) || die "no relay under trainscope run"
kill -STOP "$relay"
sleep 3 # the fault: the relay stopped this long, 256-slot rings overflow
kill -CONT "$relay"
victim=$(rank_pid lost 1)
[ -n "$victim" ] || die "no process of rank 1 of the job lost"
kill -KILL "$victim"
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary '{"kind": 7}' \
	"http://127.0.0.1:$wh_port/mutate"
# three jobs whose rank 2 is slow on node-0, where the big job's rank 700 ran on node-87:
# node-0 degraded (three jobs' findings), node-87 not (one)
"$BIN/trainscope-loadgen" --nats "$NATS_URL" --ranks 8 --jobs 3 --steps 120 --step-ms 100 \
	--slow 2:2:40 --namespace nodes --job n >"$WORK/nodes.out" 2>&1 ||
	die "loadgen nodes: $(tail -3 "$WORK/nodes.out")"
# 13 minutes of a job's steps reach the analyzer only now, as after an analyzer down that
# long: verdicts minutes after the steps (AnalyzerBehind, at the chart's 120 s)
"$BIN/trainscope-loadgen" --nats "$NATS_URL" --ranks 2 --steps 4000 --step-ms 200 \
	--namespace late --job old >"$WORK/late.out" 2>&1 ||
	die "loadgen late: $(tail -3 "$WORK/late.out")"
"$BIN/trainscope-loadgen" --nats "$NATS_URL" --ranks 2 --jobs 10 --steps 30 --step-ms 100 \
	--namespace flood --job f >"$WORK/flood.out" 2>&1 || die "loadgen flood: $(tail -3 "$WORK/flood.out")"
expect "TrainscopeJobHung (ops/lost), TrainscopeDataLost, TrainscopeWebhookNotInjecting, TrainscopeNodeDegraded (node-0 alone), TrainscopeAnalyzerBehind and TrainscopeAnalyzerRefusingJobs (flood) fire on their faults" \
	wait_for 90 alerts faults
kill "$lost_job" 2>/dev/null || true
closed() { [ "$(metric trainscope_analyzer_otlp_traces_total)" -ge $(( (STEPS + 99) / 100 )) ] 2>/dev/null; }
delivered() { [ "$(metric trainscope_analyzer_otlp_spans_sent_total)" = "$(metric trainscope_analyzer_otlp_spans_queued_total)" ]; }
all_sent() { closed && delivered; }
expect "every window closed once the job ended, and every span delivered" wait_for 120 all_sent
curl -s "$ANALYZER_METRICS" | grep '^trainscope_analyzer_otlp' | sed 's/^/      /'
expect "no span dropped or refused on the way" [ "$(metric trainscope_analyzer_otlp_spans_dropped_total)" = 0 ]

# ---- what Jaeger holds ------------------------------------------------------------------
trace=$(python3 -c "import json; print(json.load(open('$report'))['status']['traceID'])")
traces() { curl -sf "$JAEGER_QUERY/api/traces?service=big&limit=100&lookback=2h" >"$WORK/traces.json" &&
	python3 -c "
import json, sys
d = json.load(open('$WORK/traces.json'))['data']
roots = sum(s['operationName'] == 'train.window' for t in d for s in t['spans'])
sys.exit(0 if len(d) >= $(( (STEPS + 99) / 100 )) and roots == len(d) else 1)"; }
expect "Jaeger lists the job's traces under service.name = the job, each with its root" wait_for 60 traces
curl -sf "$JAEGER_QUERY/api/services/big/operations" >"$WORK/operations.json" || true
expect "the checks on those traces hold" python3 - "$WORK/traces.json" "$WORK/operations.json" "$trace" \
	"$SLOW" "$RANKS" <<'PY'
import json, re, sys
traces = json.load(open(sys.argv[1]))["data"]
ops = json.load(open(sys.argv[2])).get("data", [])
report_trace, slow, ranks = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
TEMPO_LIMIT = 5 * 1000 * 1000
ok = True
def check(what, cond):
    global ok
    print("      %s %s" % ("ok  " if cond else "FAIL", what))
    ok = ok and cond
names = set()
for op in ops:
    names.add(op if isinstance(op, str) else op.get("name", ""))
fixed = re.compile(r"train\.window|train\.step|train\.phase\.[a-z]+|slow_rank")
check("%d operation names, all from the fixed set: %s" % (len(names), sorted(names)),
      names and all(fixed.fullmatch(n) for n in names) and len(names) <= 10)
roots, sizes, by_id = {}, {}, {}
for t in traces:
    size = len(json.dumps(t))  # Jaeger's JSON: larger than the protobuf Tempo counts
    sizes[t["traceID"]] = size
    by_id[t["traceID"]] = t
    for s in t["spans"]:
        if s["operationName"] == "train.window":
            roots[t["traceID"]] = s
check("every trace has its train.window root (%d traces)" % len(traces), len(roots) == len(traces))
check("largest trace %.2f MB as JSON, under Tempo's 5 MB" % (max(sizes.values()) / 1e6),
      max(sizes.values()) < TEMPO_LIMIT)
links = 0
for tid, r in roots.items():
    w = [t["value"] for t in r["tags"] if t["key"] == "trainscope.window"][0]
    refs = [x for x in r.get("references", []) if x["refType"] == "FOLLOWS_FROM" or x["traceID"] != tid]
    if w > 0:
        links += any(x["traceID"] in roots and roots[x["traceID"]]["spanID"] == x["spanID"] for x in refs)
check("each window after the first links the one before (%d links)" % links, links == len(roots) - 1)
def rank_of(t, s):
    for tag in t["processes"][s["processID"]]["tags"]:
        if tag["key"] == "trainscope.rank":
            return tag["value"]
    return None
rt = by_id.get(report_trace)
check("the report's trace %s is in Jaeger" % report_trace, rt is not None)
if rt:
    slow_spans = [s for s in rt["spans"] if s["operationName"] == "slow_rank"]
    err = lambda s: any(t["key"] == "otel.status_code" and t["value"] == "ERROR" for t in s["tags"])
    check("it holds the slow_rank span of rank %d, status ERROR" % slow,
          any(rank_of(rt, s) == slow and err(s) for s in slow_spans))
    kept = [s for s in rt["spans"] if s["operationName"] == "train.step"]
    kept_ranks = {rank_of(rt, s) for s in kept}
    check("it keeps %d of %d ranks' steps (sampled), rank %d's among them" % (len(kept_ranks), ranks, slow),
          slow in kept_ranks and len(kept_ranks) < ranks / 4)
proc = rt["processes"][rt["spans"][0]["processID"]] if rt else {"tags": []}
keys = {t["key"]: t["value"] for t in proc["tags"]}
check("resource attributes: service.name=big, k8s.namespace.name=team, deployment.environment.name=e2e, no k8s.job.name",
      proc.get("serviceName") == "big" and keys.get("k8s.namespace.name") == "team" and
      keys.get("deployment.environment.name") == "e2e" and "k8s.job.name" not in keys)
sys.exit(0 if ok else 1)
PY
# ---- the dashboard's queries, as Grafana would send them -------------------------------
expect "trainscope_build_info from all 4 components" [ "$(value 'count(trainscope_build_info == 1)')" = 4 ]
expect "every query of the Grafana dashboard answers, the slow rank in view" \
	python3 - helm/trainscope/dashboards/trainscope.json "$PROM" "$SLOW" <<'PY'
import json, sys, urllib.parse, urllib.request
dash, prom, slow = json.load(open(sys.argv[1])), sys.argv[2], str(sys.argv[3])
def q(expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.load(urllib.request.urlopen(url))["data"]["result"]
ok = True
def check(what, cond):
    global ok
    print("      %s %s" % ("ok  " if cond else "FAIL", what))
    ok = ok and bool(cond)
for v in dash["templating"]["list"]:
    if v["type"] == "query":
        sel = v["query"]["query"][len("label_values("):].rsplit(",", 1)[0].replace("$namespace", "team")
        check("variable %s: %s lists the job" % (v["name"], sel), q(sel) != [])
for p in dash["panels"]:
    for t in p["targets"]:
        expr = t["expr"].replace("$namespace", "team").replace("$job", "big").replace("$__rate_interval", "2m")
        res = q(expr)
        check("%s: %s (%d series)" % (p["title"], t.get("legendFormat") or t["refId"], len(res)), len(res) > 0)
top = q('topk(1, trainscope_rank_busy_seconds{k8s_namespace="team",training_job="big"})')
check("the slowest rank's series is rank %s" % slow, top and top[0]["metric"]["rank"] == slow)
hot = q('topk(1, trainscope_rank_excess_ratio{k8s_namespace="team",training_job="big"})')
check("the hottest row of the heatmap is rank %s, %s over the median rank" %
      (hot[0]["metric"]["rank"] if hot else "?", hot[0]["value"][1] if hot else "?"),
      hot and hot[0]["metric"]["rank"] == slow and float(hot[0]["value"][1]) > 0.3)
info = q('trainscope_slow_rank_info{k8s_namespace="team",training_job="big"}')
check("the named rank and its cause: %s" % [(s["metric"]["rank"], s["metric"]["cause"]) for s in info],
      any(s["metric"]["rank"] == slow and s["metric"]["cause"] == "Compute" for s in info))
n = q('count(trainscope_rank_busy_seconds{k8s_namespace="team",training_job="big"})')
check("per-rank series bounded: %s of 1024 ranks" % (n[0]["value"][1] if n else "?"), n and int(n[0]["value"][1]) <= 6)
clash = q('count({__name__=~"trainscope_.*", exported_namespace!=""}) or count({__name__=~"trainscope_.*", exported_job!=""})')
check("no series carries a namespace or job label of its own (Prometheus would rename it exported_*)", clash == [])
sys.exit(0 if ok else 1)
PY

echo "observe e2e: $passed passed, $fails failed"

[ "$fails" = 0 ]
