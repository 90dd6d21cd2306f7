#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench, webhook part: what the webhook's look for pods admitted without it
# (--missed-check-s) costs as a cluster grows. A real etcd and kube-apiserver (no
# node) hold SIZES pods shaped as training pods are (env, volumes, labels, the
# server's managedFields); one in ten asks for trainscope, and of those one in ten has
# no mark (missed). For each size: the look's wall time (the webhook's own gauge), its
# peak resident memory and CPU per look, and the API server's and etcd's CPU per look
# (over LOOKS looks a second apart, less their idle CPU: the lower of two windows of
# IDLE_S seconds, before the looks and after).
set -e
BUILD=${BUILD:-build}
SIZES=${SIZES:-1000 5000}
LOOKS=${LOOKS:-10}
IDLE_S=${IDLE_S:-5}
. "$(dirname "$0")/../e2e/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
if ! TOOLS=$("$here/../e2e/k8s/tools.sh" etcd kube_api); then
	echo "missed-pods bench: skipped: the Kubernetes tools could not be built"
	exit 0
fi
export PATH="$TOOLS:$PATH"
. "$here/../e2e/k8s/apiserver.sh"
api_pid=$(pgrep -f "kube-apiserver --etcd-servers http://127.0.0.1:$etcd_port" | head -1)
etcd_pid=$(pgrep -f "etcd --data-dir $WORK/etcd" | head -1)
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%d\n", s }'; }

# pods FROM TO: a List of training-shaped pods; every 10th asks, and every 10th of those
# (every 100th pod) has no mark of an injected pod
pods() {
	python3 - "$1" "$2" <<'PY'
import json, sys
items = []
for i in range(int(sys.argv[1]), int(sys.argv[2])):
    ann = {"example.com/owner": "team-%d" % (i % 7)}
    if i % 10 == 0:
        ann["trainscope.dev/inject"] = "true"
        if i % 100:
            ann["trainscope.dev/injected"] = "true"
    env = [{"name": "VAR_%d" % k, "value": "value-%d-%d" % (i, k)} for k in range(30)]
    items.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "w-%d" % i, "namespace": "bench", "annotations": ann,
        "labels": {"training.kubeflow.org/job-name": "job-%d" % (i // 64),
                   "training.kubeflow.org/replica-index": str(i % 64)}},
        "spec": {"containers": [{"name": "trainer", "image": "pytorch:2.11", "env": env,
                 "resources": {"limits": {"nvidia.com/gpu": "8"}},
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                 "volumes": [{"name": "data", "emptyDir": {}}]}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
}
metric() { # NAME: the webhook's
	curl -sf "http://127.0.0.1:$webhook_port/metrics" | awk -v k="trainscope_webhook_$1" '$1 == k { print $2 }'
}
looks_done() { [ "$(metric missed_scans_total)" -ge "$1" ] 2>/dev/null; }

kubectl create namespace bench >/dev/null
have=0
printf '%-8s %-8s %-10s %-12s %-18s %-22s\n' pods missed "look (ms)" "webhook MiB" "webhook CPU ms/look" \
	"API server + etcd CPU ms/look"
for size in $SIZES; do
	pods "$have" "$size" >"$WORK/pods.json"
	kubectl create -f "$WORK/pods.json" >/dev/null
	have=$size
	# the servers' idle CPU: a measuring window, not a wait for anything
	a0=$(cpu_ns "$api_pid"); e0=$(cpu_ns "$etcd_pid"); t0=$(date +%s%N)
	sleep "$IDLE_S"
	a1=$(cpu_ns "$api_pid"); e1=$(cpu_ns "$etcd_pid"); t1=$(date +%s%N)
	webhook_port=$(free_port)
	"$BIN/trainscope-webhook" --plain-http --addr 127.0.0.1 --port "$webhook_port" --events \
		--missed-check-s 1 --kubeconfig "$KUBECONFIG" 2>"$WORK/webhook.log" &
	pid=$!
	wait_for 10 looks_done 1 || die "the webhook made no look: $(tail -3 "$WORK/webhook.log")"
	a2=$(cpu_ns "$api_pid"); e2=$(cpu_ns "$etcd_pid"); t2=$(date +%s%N); w2=$(cpu_ns "$pid")
	wait_for $((LOOKS * 3)) looks_done $((LOOKS + 1)) || die "fewer than $LOOKS looks"
	a3=$(cpu_ns "$api_pid"); e3=$(cpu_ns "$etcd_pid"); t3=$(date +%s%N); w3=$(cpu_ns "$pid")
	look=$(metric missed_scan_seconds)
	missed=$(metric missed_pods)
	hwm=$(awk '/^VmHWM/ { print $2 }' /proc/"$pid"/status)
	kill "$pid"; wait "$pid" 2>/dev/null || true
	a4=$(cpu_ns "$api_pid"); e4=$(cpu_ns "$etcd_pid"); t4=$(date +%s%N)
	sleep "$IDLE_S"
	a5=$(cpu_ns "$api_pid"); e5=$(cpu_ns "$etcd_pid"); t5=$(date +%s%N)
	python3 - "$size" "$missed" "$look" "$hwm" "$LOOKS" "$((w3 - w2))" \
		"$a0" "$a1" "$a2" "$a3" "$a4" "$a5" "$e0" "$e1" "$e2" "$e3" "$e4" "$e5" \
		"$t0" "$t1" "$t2" "$t3" "$t4" "$t5" <<'PY'
import sys
size, missed, look, hwm = sys.argv[1:5]
n, webhook_ns = int(sys.argv[5]), int(sys.argv[6])
a, e, t = (list(map(int, sys.argv[i:i + 6])) for i in (7, 13, 19))
def rate(i):  # the servers' CPU ns per ns over window i..i+1
    return ((a[i + 1] - a[i]) + (e[i + 1] - e[i])) / (t[i + 1] - t[i])
idle = min(rate(0), rate(4))
busy = (a[3] - a[2]) + (e[3] - e[2]) - idle * (t[3] - t[2])
print("%-8s %-8s %-10.0f %-12.1f %-18.1f %-22.1f" % (size, missed, float(look) * 1e3,
      int(hwm) / 1024, webhook_ns / n / 1e6, busy / n / 1e6))
PY
done
