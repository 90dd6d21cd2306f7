#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A connect storm (bench/results/scale.md, "Connect storm"): CONNS relays connecting at
# once with TOKENS distinct ServiceAccount tokens (each bound to a pod, CONNS/TOKENS
# relays a pod) to nats-server 2.12 with auth callout, answered by trainscope-natsauth
# with TokenReviews by a real kube-apiserver (etcd beside it), all on loopback, as the
# auth e2e sets them up (e2e/k8s/apiserver.sh; plain TCP here, no TLS). Each natsauth
# configuration of CONFIGS ("label|flags[|natsauth binary]", one a line; OLD_NATSAUTH
# names the binary of a "before" line, skipped without it) gets a fresh natsauth, then
# bench/connstorm: the time until all CONNS connected, the refusals the clients retried
# (with the relays' backoff), natsauth's TokenReviews (its cache misses; the API server's
# own count beside it), cache hits, busy refusals and review errors. CONNS, TOKENS,
# CONFIGS, TIMEOUT override; OUT=FILE also writes the table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. e2e/lib.sh
CONNS=${CONNS:-2000}
TOKENS=${TOKENS:-250}
TIMEOUT=${TIMEOUT:-180}
CONFIGS=${CONFIGS:-"before (natsauth of main before these changes)||${OLD_NATSAUTH:-}
1 worker, uncached, no shedding|--review-workers 1 --review-cache-s 0 --review-queue 0
defaults: 8 workers, cache 300 s, shed over 512|"}

TOOLS=$(bash e2e/k8s/tools.sh) || die "the Kubernetes tools could not be built"
export PATH="$TOOLS:$PATH"
make --no-print-directory BUILD="$BUILD" connstorm >/dev/null
ulimit -n "$(ulimit -Hn)"
. e2e/k8s/apiserver.sh
kubectl create clusterrolebinding bench-natsauth --clusterrole system:auth-delegator \
	--user trainscope-natsauth >/dev/null
kubeconfig trainscope-natsauth natsauth-token "$WORK/natsauth.kubeconfig"

# ---- TOKENS pods on one node, a token bound to each -------------------------------------
kubectl create namespace storm >/dev/null
kubectl -n storm create serviceaccount relay >/dev/null
{
	echo "apiVersion: v1"; echo "kind: List"; echo "items:"
	for i in $(seq 0 $((TOKENS - 1))); do
		printf -- '- {apiVersion: v1, kind: Pod, metadata: {name: job-%d}, spec: {nodeName: node-1, serviceAccountName: relay, containers: [{name: c, image: x}]}}\n' "$i"
	done
} | kubectl -n storm apply -f - >/dev/null
mkdir -p "$WORK/tokens"
seq 0 $((TOKENS - 1)) | xargs -P 4 -I{} sh -c 'kubectl -n storm create token relay \
	--audience trainscope-nats --duration 1h --bound-object-kind Pod \
	--bound-object-name job-{} >"$0/tokens/{}"' "$WORK"
echo "connstorm: $TOKENS pods with a bound token each"

# ---- nats-server with auth callout ---------------------------------------------------------
mkdir -p "$WORK/auth"
"$BIN/trainscope-natsauth" --dir "$WORK/auth" --init >/dev/null 2>&1
nats_port=$(free_port)
printf 'listen: 127.0.0.1:%s\ninclude auth/auth.conf\n' "$nats_port" >"$WORK/nats.conf"
nats-server-auth -c "$WORK/nats.conf" >"$WORK/nats.log" 2>&1 &
PIDS="$PIDS $!"
wait_for 30 grep -q "Server is ready" "$WORK/nats.log" || die "nats-server: $(tail -5 "$WORK/nats.log")"

tokenreviews() {
	kubectl get --raw /metrics | awk '/^apiserver_request_total\{/ && /resource="tokenreviews"/ &&
		/verb="POST"/ { n += $NF } END { print n + 0 }'
}
metric() { curl -s "$natsauth_metrics" | awk -v m="$1" '$1 == m { v = $2 + 0; f = 1 } END { print f ? v : "-" }'; }
table="| natsauth | connected | time to all | p50 / p99 connect | refusals retried | TokenReviews | cache hits | shed busy | dropped expired | review errors |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
while IFS='|' read -r label flags natsauth; do
	[ -n "$label" ] || continue
	case "$label" in before*) [ -n "$natsauth" ] || continue ;; esac
	# shellcheck disable=SC2086 # the flags are words
	"${natsauth:-$BIN/trainscope-natsauth}" --dir "$WORK/auth" --nats "nats://127.0.0.1:$nats_port" \
		--kubeconfig "$WORK/natsauth.kubeconfig" --metrics-addr 127.0.0.1 --metrics-port 0 \
		$flags 2>"$WORK/natsauth.log" &
	natsauth_pid=$!
	wait_for 15 grep -q "answering" "$WORK/natsauth.log" || die "natsauth: $(cat "$WORK/natsauth.log")"
	natsauth_metrics=$(grep -o 'port [0-9]*' "$WORK/natsauth.log" | awk '{ print "http://127.0.0.1:" $2 "/metrics" }')
	reviews0=$(tokenreviews)
	out=$("$BUILD/bench/connstorm" --port "$nats_port" --conns "$CONNS" --timeout "$TIMEOUT" \
		"$WORK"/tokens/* || true)
	echo "$label: $out"
	connected=$(sed -n 's/.*: \([0-9]*\) of \([0-9]*\) clients.*/\1 of \2/p' <<<"$out")
	secs=$(sed -n 's/.*) in \([0-9.]*\) s;.*/\1/p' <<<"$out")
	refusals=$(sed -n 's/.* \([0-9]*\) refusals.*/\1/p' <<<"$out")
	p50=$(sed -n 's/.*p50 \([0-9.-]*\) s.*/\1/p' <<<"$out")
	p99=$(sed -n 's/.*p99 \([0-9.-]*\) s.*/\1/p' <<<"$out")
	sleep 1
	table="$table
| $label (\`${flags:-no flags}\`) | $connected | $secs s | $p50 s / $p99 s | $refusals | $(($(tokenreviews) - reviews0)) | $(metric trainscope_natsauth_cache_hits_total) | $(metric trainscope_natsauth_shed_total) | $(metric trainscope_natsauth_stale_total) | $(metric trainscope_natsauth_review_errors_total) |"
	grep -E "overloaded|refused" "$WORK/natsauth.log" | head -3 | sed 's/^/      natsauth: /' || true
	kill "$natsauth_pid"; wait "$natsauth_pid" 2>/dev/null || true
done <<<"$CONFIGS"
echo
echo "$CONNS relays, $TOKENS tokens ($((CONNS / TOKENS)) relays a pod), $(nproc) cores:"
echo "$table"
[ -z "${OUT:-}" ] || echo "$table" >"$OUT"
