#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes surface end to end, on real servers: etcd + kube-apiserver (RBAC, a
# mutating webhook served by a local trainscope-webhook), helm installing the chart,
# an annotated pod mutated, the analyzer in Kubernetes mode under the chart's own
# least-privilege role, then `kubectl get slownodereports`, the SlowRank Events, a job
# with no rank (RanksKnown False, a RankUnknown Event), the
# job's trace in Jaeger, and the webhook's --bootstrap-certs (the chart's Job) run twice.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# "whenever the tools can be built": without Go or the module proxy this says so and
# skips; with them a failure to start any server is a failure of the test.
if ! TOOLS=$("$here/tools.sh" etcd kube_api helm jaeger); then
	echo "k8s e2e: skipped: the Kubernetes tools could not be built (see above)"
	echo "k8s e2e: 0 passed, 0 failed, 30 skipped"
	exit 0
fi
export PATH="$TOOLS:$PATH"

. "$here/apiserver.sh"
serving_cert webhook

# ---- helm install, with the webhook served from here ------------------------------------
webhook_port=$(free_port)
start_nats
expect "helm lint" sh -c "helm lint '$root/helm/trainscope' >/dev/null"
expect "chart CRDs match crds/" sh -c "cmp -s '$root/crds/slownodereports.trainscope.dev.yaml' \
	'$root/helm/trainscope/crds/slownodereports.trainscope.dev.yaml' &&
	cmp -s '$root/crds/slownodes.trainscope.dev.yaml' '$root/helm/trainscope/crds/slownodes.trainscope.dev.yaml'"
expect "deploy/ is rendered from the chart" sh -c "'$root/scripts/render-deploy.sh' --check >/dev/null"
helm install trainscope "$root/helm/trainscope" --namespace trainscope --create-namespace \
	--set webhook.external.url="https://127.0.0.1:$webhook_port" \
	--set webhook.external.caBundle="$(base64 -w0 "$pki/ca.crt")" \
	--set nats.enabled=false --set nats.external.url="$NATS_URL" >"$WORK/helm.log" 2>&1 ||
	die "helm install: $(cat "$WORK/helm.log")"
wait_for 30 kubectl get crd slownodereports.trainscope.dev -o name >/dev/null
# the analyzer's identity gets exactly the chart's role
kubectl create clusterrolebinding e2e-analyzer --clusterrole trainscope-analyzer \
	--user trainscope-analyzer >/dev/null
# and the webhook's, the chart's Events role
kubectl create clusterrolebinding e2e-webhook --clusterrole trainscope-webhook-events \
	--user trainscope-webhook >/dev/null
kubeconfig trainscope-webhook webhook-token "$WORK/webhook.kubeconfig"
kubectl create namespace team >/dev/null
pod() { # NAME ANNOTATION [NAMESPACE]
	cat <<POD
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: ${3:-team}
  labels: {training.kubeflow.org/job-name: llm}
  annotations: {trainscope.dev/inject: "$2"}
spec:
  containers:
    - name: trainer
      image: pytorch
      env: [{name: LD_PRELOAD, value: /opt/jemalloc.so}]
POD
}

# ---- pods created while the webhook is down: the API server admits them unchanged
# (failurePolicy: Ignore); the webhook, once up, finds those that asked and tells them ---
kubectl create namespace labelled >/dev/null
kubectl label namespace labelled trainscope.dev/inject=enabled >/dev/null
pod missed-0 true | kubectl apply -f - >/dev/null
pod quiet-0 x labelled | sed '/annotations:/d' | kubectl apply -f - >/dev/null
pod optout-0 false labelled | kubectl apply -f - >/dev/null
kubectl create namespace skipped >/dev/null # --exclude-namespaces names it
pod skip-0 true skipped | kubectl apply -f - >/dev/null
start_webhook() { # LOG
	"$BIN/trainscope-webhook" --tls-cert "$pki/webhook.crt" --tls-key "$pki/webhook.key" \
		--addr 127.0.0.1 --port "$webhook_port" --image trainscope:e2e --nats "$NATS_URL" \
		--events --missed-check-s 1 --missed-page 2 --exclude-namespaces "trainscope, skipped" \
		--kubeconfig "$WORK/webhook.kubeconfig" 2>"$1" &
	webhook_pid=$!
	PIDS="$PIDS $webhook_pid"
	wait_for 10 grep -q "serving HTTPS" "$1" || die "webhook did not start: $(tail -3 "$1")"
}
start_webhook "$WORK/webhook.log"
missed_events() { # the missed pods' Events, "namespace/pod event-name pod-uid" a line
	kubectl get events -A --field-selector reason=TrainscopeNotInjected -o jsonpath='{range .items[*]}{.involvedObject.namespace}/{.involvedObject.name} {.metadata.name} {.involvedObject.uid} {.message}{"\n"}{end}' |
		grep 'could not reach' | cut -d' ' -f1-3 | sort
}
told_missed() {
	[ "$(missed_events | cut -d' ' -f1 | tr '\n' ' ')" = "labelled/quiet-0 team/missed-0 " ]
}
expect "pods admitted while the webhook was down, that asked (annotation, labelled namespace, not excluded), each get an Event" \
	wait_for 20 told_missed
webhook_metric() { curl -sf --cacert "$pki/ca.crt" "https://127.0.0.1:$webhook_port/metrics" |
	awk '$1 == "trainscope_webhook_'"$1"'" { print $2 }'; }

# ---- an annotated pod is mutated, a plain one is not ------------------------------------
pod trainer-0 true | kubectl apply -f - >/dev/null
pod plain-0 false | kubectl apply -f - >/dev/null
kubectl get pod trainer-0 -n team -o json >"$WORK/trainer-0.json"
kubectl get pod plain-0 -n team -o json >"$WORK/plain-0.json"
expect "the annotated pod has the relay as a native sidecar and the preload" python3 - "$WORK/trainer-0.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
init = {c["name"]: c for c in p["spec"].get("initContainers", [])}
env = {e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
ok = init.get("trainscope-relay", {}).get("restartPolicy") == "Always" and "trainscope-init" in init \
    and env["LD_PRELOAD"] == "/opt/jemalloc.so:/trainscope/lib/$PLATFORM/libtrainscope.so" \
    and env["TRAINSCOPE_JOB"] == "llm" and p["metadata"]["annotations"]["trainscope.dev/injected"] == "true"
sys.exit(0 if ok else 1)
PY
expect "a pod that does not opt in is untouched" python3 -c '
import json, sys; p = json.load(open(sys.argv[1])); sys.exit(1 if p["spec"].get("initContainers") else 0)' "$WORK/plain-0.json"
# a pod that asks but names no container it has: admitted unchanged, and told so
pod odd-0 true | sed 's|annotations: {|annotations: {trainscope.dev/container-names: nosuch, |' |
	kubectl apply -f - >/dev/null 2>"$WORK/odd-0.warn"
not_injected_event() {
	kubectl -n team get events --field-selector involvedObject.name=odd-0,reason=TrainscopeNotInjected \
		-o jsonpath='{.items[0].message}' | grep -q nosuch
}
odd_told() { grep -q 'left unchanged' "$WORK/odd-0.warn" && wait_for 20 not_injected_event; }
expect "a pod left unchanged gets a Warning Event (and kubectl the review's warning)" odd_told
more_looks() { [ "$(webhook_metric missed_scans_total)" -ge $((scans_then + 2)) ]; }
scans_then=$(webhook_metric missed_scans_total)
missed_once() {
	more_looks || return 1
	local uid
	uid=$(kubectl get pod missed-0 -n team -o jsonpath='{.metadata.uid}')
	missed_events | grep -qx "team/missed-0 missed-0.trainscope-$uid $uid" &&
		[ "$(missed_events | wc -l)" = 2 ] && [ "$(webhook_metric missed_pods)" = 2 ] &&
		[ "$(webhook_metric missed_scan_failures_total)" = 0 ]
}
missed_first() { wait_for 20 missed_once && [ "$(webhook_metric events_already_total)" = 0 ]; }
expect "two looks later (pages of 2 pods): the same two Events, each once, on the pod's uid; none on a pod injected, not asking, opting out or left unchanged; the gauge says 2" \
	missed_first
kill "$webhook_pid"
wait "$webhook_pid" 2>/dev/null || true
PIDS=${PIDS/ $webhook_pid/}
start_webhook "$WORK/webhook2.log"
scans_then=0
said_again() { [ "$(webhook_metric events_already_total)" = 2 ] && missed_once; }
expect "a webhook started again says nothing new: the API server answers 409 for both Events" \
	wait_for 20 said_again

# ---- the job's controller: a batch/v1 Job owns the trainer's pod (no controller runs
# here, so it makes no pods of its own) --------------------------------------------------
kubectl create job llm -n team --image=trainscope:e2e >/dev/null
job_uid=$(kubectl get job llm -n team -o jsonpath='{.metadata.uid}')
kubectl patch pod trainer-0 -n team --type merge -p "{\"metadata\": {\"ownerReferences\": [{
	\"apiVersion\": \"batch/v1\", \"kind\": \"Job\", \"name\": \"llm\", \"uid\": \"$job_uid\",
	\"controller\": true}]}}" >/dev/null

# ---- the job: analyzer in Kubernetes mode, traces to Jaeger -----------------------------
start_jaeger
start_analyzer --quiet --kubeconfig "$WORK/analyzer.kubeconfig" \
	--otlp-endpoint "$JAEGER_OTLP" --k8s-interval-s 2
analyzer_pid=$!
TRAINSCOPE_NAMESPACE=team TRAINSCOPE_POD=trainer-0 TRAINSCOPE_NODE=node-e2e \
	run_job llm 8 150 compute --fault-rank 5 --fault-step 40
wait_report llm 149 team
named=0
wait_for 30 sh -c 'kubectl get snr llm -n team -o jsonpath="{.status.summary}" | grep -q "5(Compute)"' && named=1
kubectl get slownodereports -n team >"$WORK/snr.txt"
sed 's/^/      /' "$WORK/snr.txt"
expect "kubectl get slownodereports names rank 5, Compute" sh -c "[ $named = 1 ] &&
	grep -E '^llm +FailSlow +8 +5\(Compute\) +Compute' '$WORK/snr.txt'"
expect "the SlowNodeReport ends at the job's last step (149), not at the last rate-limited write" \
	wait_for 30 sh -c 'kubectl get snr llm -n team -o jsonpath="{.status.lastStep}" | grep -qx 149'
expect "kubectl trainscope report (the CLI as a kubectl plugin) reads it from the cluster" sh -c \
	"PATH='$BIN:$PATH' kubectl trainscope report -n team --job llm | grep -q 'slow rank 5  cause Compute'"
expect "trainscope report --kube --all-namespaces lists it" sh -c \
	"'$BIN/trainscope' report --kube --all-namespaces | grep -q '^SlowNodeReport team/llm'"
expect "... and says so when a job has no report (exit 1)" sh -c \
	"! '$BIN/trainscope' report --kube -n team --job nosuch 2>'$WORK/nosuch.err' &&
	 grep -q 'no SlowNodeReport team/nosuch' '$WORK/nosuch.err'"
expect "the report is owned by the pod's controller, Job llm (deleted with it)" sh -c \
	"kubectl get snr llm -n team -o jsonpath='{.metadata.ownerReferences[*].kind}/{.metadata.ownerReferences[*].name}/{.metadata.ownerReferences[*].uid}' | grep -qx 'Job/llm/$job_uid'"
kubectl get snr llm -n team -o wide >"$WORK/snr-wide.txt"
sed 's/^/      /' "$WORK/snr-wide.txt"
expect "-o wide: the slow rank's pod, node, method and onset step; DEGRADATION in percent, LOST a share" \
	grep -qE '^llm +FailSlow +8 +5\(Compute\) +Compute +\+[0-9]+\.[0-9]% +([0-9.]+|<none>) +trainer-0 +node-e2e +[A-Z+]+ +[0-9]+ ' \
	"$WORK/snr-wide.txt"
kubectl get snr llm -n team -o json >"$WORK/snr-llm.json"
"$BIN/trainscope" report --dir "$REPORTS" --job llm --namespace team --json >"$WORK/llm-now.json"
expect "the API server kept every status field the analyzer wrote (the CRD declares them all)" \
	python3 - "$WORK/llm-now.json" "$WORK/snr-llm.json" <<'PY'
import json, sys
def keys(v, path=""):
    if isinstance(v, dict):
        return {path + "." + k for k in v} | set().union(*[keys(x, path + "." + k) for k, x in v.items()])
    if isinstance(v, list):
        return set().union(*[keys(x, path + "[]") for x in v]) if v else set()
    return set()
local = keys(json.load(open(sys.argv[1]))["status"])
kept = keys(json.load(open(sys.argv[2]))["status"])
print("      %d status fields written, %d kept; pruned: %s" % (len(local), len(kept & local), sorted(local - kept)[:5]))
sys.exit(0 if local <= kept else 1)
PY
kubectl get events -n team --field-selector reason=SlowRank -o json >"$WORK/events.json"
expect "a SlowRank Event on the rank's pod" python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["items"]
sys.exit(0 if any(e["involvedObject"]["name"] == "trainer-0" and "rank 5 is slow" in e["message"] for e in ev) else 1)' "$WORK/events.json"
# ---- a job whose processes never learn a rank (the launcher sets none, no process group):
# its report says what to set, and the pod gets a Warning Event ----------------------------
TRAINSCOPE_NAMESPACE=team TRAINSCOPE_POD=trainer-0 TRAINSCOPE_NODE=node-e2e \
	TRAINSCOPE_SHIM="$root/injector/preload/python" \
	PYTHONPATH="$root/injector/preload/tests/shim${PYTHONPATH:+:$PYTHONPATH}" \
	"$BIN/trainscope" run --nats "$NATS_URL" --job norank -- \
	python3 "$root/e2e/launchers/launch.py" none 2 --steps 30 >"$WORK/norank.log" 2>&1 || true
expect "a job with no rank: its SlowNodeReport has RanksKnown False, the cure in its message" \
	wait_for 30 sh -c 'kubectl get snr norank -n team -o jsonpath="{.status.conditions[?(@.type==\"RanksKnown\")].status} {.status.conditions[?(@.type==\"RanksKnown\")].message}" | grep -q "^False .*Set RANK and WORLD_SIZE"'
expect "... and a RankUnknown Warning Event on its pod" \
	wait_for 30 sh -c "kubectl get events -n team --field-selector reason=RankUnknown -o jsonpath='{.items[*].involvedObject.name} {.items[*].type}' | grep -q 'trainer-0.*Warning'"
# ---- a job named "../x": its report's name is one Kubernetes accepts (a dot beside a dash
# was refused with 422, and the job had no report) --------------------------------------
TRAINSCOPE_NAMESPACE=team TRAINSCOPE_POD=trainer-0 TRAINSCOPE_NODE=node-e2e \
	"$BIN/trainscope" run --nats "$NATS_URL" --job "../x" -- \
	"$BIN/workload" --ranks 2 --steps 30 --fault none >"$WORK/dotdot.log" 2>&1 || true
dotdot() {
	kubectl get snr -n team -o json | python3 -c '
import json, sys
names = [r["metadata"]["name"] for r in json.load(sys.stdin)["items"] if r["spec"]["job"] == "../x"]
sys.exit(0 if names and names[0].startswith("x--x-") else 1)'
}
expect "a job named ../x gets its SlowNodeReport (x--x-<hash>)" wait_for 30 dotdot
trace=$(kubectl get snr llm -n team -o jsonpath='{.status.traceID}')
wait_for 30 sh -c "curl -sf '$JAEGER_QUERY/api/traces/$trace' >'$WORK/trace.json'"
expect "Jaeger has the report's trace ($trace): step spans of all 8 ranks, names from the fixed set" \
	python3 - "$WORK/trace.json" <<'PY'
import json, re, sys
data = json.load(open(sys.argv[1]))["data"][0]
ranks = set()
for p in data["processes"].values():
    for t in p["tags"]:
        if t["key"] == "trainscope.rank":
            ranks.add(int(t["value"]))
names = {s["operationName"] for s in data["spans"]}
odd = {n for n in names if not re.fullmatch(r"train\.window|train\.step|train\.phase\.[a-z]+|slow_rank", n)}
steps = [s for s in data["spans"] if s["operationName"] == "train.step"]
print("      %d spans, %d step spans, ranks %s, names %s" % (len(data["spans"]), len(steps), sorted(ranks), sorted(names)))
sys.exit(0 if ranks == set(range(8)) and len(steps) >= 8 * 40 and not odd else 1)
PY
# ---- node health: jobs that name one node's rank three times give a SlowNode; with the
# policy on, the node's condition, a Warning Event and a taint, never on more than the set
# share of the GPU nodes; a restarted analyzer resumes it; a dry run changes nothing; a
# clean node loses them. Ten GPU nodes registered on the API server (no kubelet: the
# taint's effect on scheduling is the node e2e's) ------------------------------------------
helm upgrade trainscope "$root/helm/trainscope" --namespace trainscope --reuse-values \
	--set analyzer.nodeHealth.remediation.enabled=true \
	--set analyzer.nodeHealth.remediation.taint=true >>"$WORK/helm.log" 2>&1 ||
	die "helm upgrade: $(tail -5 "$WORK/helm.log")"
for i in 0 1 2 3 4 5 6 7 8 9; do
	printf 'apiVersion: v1\nkind: Node\nmetadata: {name: gpu-%s}\n' "$i" | kubectl apply -f - >/dev/null
	kubectl patch node "gpu-$i" --subresource=status --type merge \
		-p '{"status": {"allocatable": {"nvidia.com/gpu": "8"}, "capacity": {"nvidia.com/gpu": "8"}}}' >/dev/null
done
kill "$analyzer_pid" && wait "$analyzer_pid" 2>/dev/null || true
ours() { # NODE: our taint on it, as value:effect ("" when none)
	kubectl get node "$1" -o jsonpath='{.spec.taints[?(@.key=="trainscope.dev/degraded")].value}:{.spec.taints[?(@.key=="trainscope.dev/degraded")].effect}' |
		grep -v '^:$' || true
}
node_analyzer() { # the analyzer under the chart's role with remediation on; its options
	[ -f "$WORK/analyzer.log" ] && mv "$WORK/analyzer.log" "$WORK/analyzer.$analyzer_pid.log"
	start_analyzer --quiet --kubeconfig "$WORK/analyzer.kubeconfig" --k8s-interval-s 2 \
		--node-health-s 1 --node-taint --node-taint-causes Compute,Device "$@"
	analyzer_pid=$!
}
node_analyzer --node-taint-max-share 0.1
for node in 1 2; do # three jobs name gpu-1's rank 1, then three gpu-2's
	for n in 1 2 3; do
		TRAINSCOPE_NAMESPACE=team TRAINSCOPE_POD=trainer-0 TRAINSCOPE_NODE=gpu-$node \
			run_job "nh$node-$n" 4 80 compute --fault-rank 1 --fault-step 10
	done
	# gpu-1 degraded (and tainted) before gpu-2's jobs run: the guard then holds gpu-2
	if [ "$node" = 1 ]; then
		wait_for 30 sh -c "kubectl get slownode gpu-1 -o jsonpath='{.status.degraded}' | grep -qx true" || true
	fi
done
wait_for 30 sh -c "kubectl get slownode gpu-2 -o jsonpath='{.status.jobsAffected}' | grep -qx 3" || true
kubectl get slownodes -o wide >"$WORK/sn.txt" 2>&1 || true
sed 's/^/      /' "$WORK/sn.txt"
expect "gpu-1 has the TrainscopeDegraded condition (reason Compute) and a Warning Event" \
	wait_for 30 sh -c "kubectl get node gpu-1 -o jsonpath='{.status.conditions[?(@.type==\"TrainscopeDegraded\")].status}/{.status.conditions[?(@.type==\"TrainscopeDegraded\")].reason}' | grep -qx True/Compute &&
		kubectl get events -n default --field-selector involvedObject.kind=Node,involvedObject.name=gpu-1,reason=TrainscopeDegraded -o name | grep -q ."
tainted() { [ "$(ours gpu-1)" = Compute:PreferNoSchedule ]; }
expect "gpu-1 is tainted trainscope.dev/degraded=Compute:PreferNoSchedule" wait_for 30 tainted
held_back() {
	kubectl get slownode gpu-2 -o jsonpath='{.status.degraded}/{.status.action}' |
		grep -q '^true/held back: 1 of 10 nodes' && [ -z "$(ours gpu-2)" ]
}
expect "the guard: gpu-2 is degraded too but held back (1 of 10 nodes, at most 10 %), untainted" \
	wait_for 30 held_back
expect "the analyzer's /metrics count it" sh -c "curl -sf '$ANALYZER_METRICS' |
	grep -qE '^trainscope_analyzer_node_taints_held_back_total [1-9]'"
# restarted in dry run with no share limit: it resumes gpu-1 and gpu-2 from JetStream and
# says it would taint gpu-2, and changes nothing
kill "$analyzer_pid" && wait "$analyzer_pid" 2>/dev/null || true
node_analyzer --node-taint-max-share 1 --node-taint-dry-run
dry_run() {
	kubectl get slownode gpu-2 -o jsonpath='{.status.jobsAffected}/{.status.action}' |
		grep -q '^3/would taint trainscope.dev/degraded=Compute:PreferNoSchedule (dry run)' &&
		[ -z "$(ours gpu-2)" ] && grep -q 'dry run: would taint node gpu-2' "$WORK/analyzer.log"
}
expect "restarted in dry run: node health resumed, gpu-2 'would taint ... (dry run)', still untainted" \
	wait_for 30 dry_run
# clean: findings that expire at once (nodes.window_s 1): SlowNodes, condition, taint go
kill "$analyzer_pid" && wait "$analyzer_pid" 2>/dev/null || true
printf 'nodes: {window_s: 1}\n' >"$WORK/clean.yaml"
node_analyzer --node-taint-max-share 1 --config "$WORK/clean.yaml"
clean() {
	[ -z "$(kubectl get slownodes -o name)" ] && [ -z "$(ours gpu-1)" ] &&
		kubectl get node gpu-1 -o jsonpath='{.status.conditions[?(@.type=="TrainscopeDegraded")].status}' | grep -qx False
}
expect "clean again: the SlowNodes gone, gpu-1's taint removed, its condition False" wait_for 30 clean
# ---- a replaced analyzer: the lease on its durable names its pod; while that pod lives
# another analyzer waits, and once the API server shows it gone (a StatefulSet's pod made
# anew: same name, new uid) its successor takes the lease at once -----------------------
analyzer_pod() { # NAME: the Pod object made anew (no kubelet runs it); prints its uid
	kubectl delete pod "$1" -n trainscope --grace-period=0 --force >/dev/null 2>&1 || true
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: trainscope}\nspec: {containers: [{name: a, image: trainscope:e2e}]}\n' \
		"$1" | kubectl apply -f - >/dev/null && kubectl get pod "$1" -n trainscope -o jsonpath='{.metadata.uid}'
}
lease_analyzer() { # POD UID LOG: an analyzer as that pod, on durable lease-e2e; LEASE_PID
	POD_NAMESPACE=trainscope POD_NAME=$1 POD_UID=$2 "$BIN/trainscope-analyzer" --nats "$NATS_URL" \
		--kubeconfig "$WORK/analyzer.kubeconfig" --durable lease-e2e --report-dir "$WORK/lease-r" \
		--metrics-port 0 --quiet 2>"$3" &
	LEASE_PID=$!
	PIDS="$PIDS $LEASE_PID"
}
lease_takeover() {
	local uid0 uid1 first t0 took
	uid0=$(analyzer_pod analyzer-0) && uid1=$(analyzer_pod analyzer-1) || return 1
	lease_analyzer analyzer-0 "$uid0" "$WORK/lease-a.log"
	first=$LEASE_PID
	wait_for 15 grep -q consuming "$WORK/lease-a.log" || return 1
	lease_analyzer analyzer-1 "$uid1" "$WORK/lease-b.log" # its holder's pod lives: it waits
	wait_for 15 grep -q "standby: durable consumer lease-e2e is held" "$WORK/lease-b.log" || return 1
	sleep 2 # a standby that took over would say so within this
	grep -q consuming "$WORK/lease-b.log" && { echo "      took a live holder's lease"; return 1; }
	kill "$LEASE_PID" && wait "$LEASE_PID" 2>/dev/null
	kill -KILL "$first" && wait "$first" 2>/dev/null
	uid0=$(analyzer_pod analyzer-0) || return 1 # the StatefulSet's replacement
	t0=$(date +%s.%N)
	lease_analyzer analyzer-0 "$uid0" "$WORK/lease-c.log"
	wait_for 15 grep -q consuming "$WORK/lease-c.log" || return 1
	took=$(python3 -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
	echo "      $(grep -o 'the holder of durable.*' "$WORK/lease-c.log" | cut -c1-150)"
	echo "      the replacement consumes ${took} s after its start (the lease lasts 10 s)"
	kill "$LEASE_PID" && wait "$LEASE_PID" 2>/dev/null
	grep -q "taking over at once" "$WORK/lease-c.log" &&
		python3 -c "import sys; sys.exit(float(sys.argv[1]) >= 5)" "$took"
}
expect "a killed analyzer's pod made anew: its successor takes the lease at once; a live holder's is kept" \
	lease_takeover
kubectl delete pod analyzer-0 analyzer-1 -n trainscope --grace-period=0 --force >/dev/null 2>&1 || true
# ---- trainscope-webhook --bootstrap-certs (the chart's Job), twice: the second keeps all -----
bootstrap() { # prints the Secret's resourceVersion once its pair verifies and both webhooks trust its CA
	POD_NAMESPACE=trainscope "$BIN/trainscope-webhook" --bootstrap-certs --kubeconfig "$KUBECONFIG" --secret e2e-certs \
		--service trainscope-webhook --webhook-config trainscope-webhook >>"$WORK/bootstrap.log" 2>&1 || return 1
	local ca; ca=$(kubectl get secret -n trainscope e2e-certs -o jsonpath='{.data.ca\.crt}')
	[ "$(kubectl get mutatingwebhookconfiguration trainscope-webhook -o jsonpath='{.webhooks[*].clientConfig.caBundle}')" = "$ca $ca" ] &&
		kubectl get secret -n trainscope e2e-certs -o jsonpath='{.data.tls\.crt}' | base64 -d | openssl verify -purpose sslserver \
			-verify_hostname trainscope-webhook.trainscope.svc -CAfile <(echo "$ca" | base64 -d) >/dev/null &&
		kubectl get secret -n trainscope e2e-certs -o jsonpath='{.metadata.resourceVersion}'
}
first=$(bootstrap) && second=$(bootstrap) || true
expect "--bootstrap-certs: a verified pair in a Secret, its CA in both webhooks; run again, nothing changes" \
	sh -c "[ -n '$first' ] && [ '$first' = '$second' ] && grep -q 'kept its CA' '$WORK/bootstrap.log'"
echo "k8s e2e: $passed passed, $fails failed"
[ "$fails" -eq 0 ]
