#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Authenticated NATS end to end, on real servers: nats-server (built from its Go module,
# the version tools.sh names: auth callout needs 2.10+) with TLS and auth callout,
# trainscope-natsauth answering it with TokenReviews by a real kube-apiserver, and
# clients holding real ServiceAccount tokens bound to pods (kubectl create token).
# Checked: the unauthenticated and the forged are refused; a relay of namespace A
# publishes A's job (analysed, report written) but not B's subjects, reads nothing and
# cannot touch the stream; only the analyzer manages its consumer; the agent and the
# CLI keep to their own rights; a batch whose payload names another namespace than its
# subject is refused and counted by the analyzer; a second connection with a token
# already reviewed makes no TokenReview (natsauth's cache; the API server's count too).
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/../lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

if ! TOOLS=$("$here/tools.sh" etcd kube_api nats); then
	echo "auth e2e: skipped: the tools could not be built (see above)"
	echo "auth e2e: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
export PATH="$TOOLS:$PATH"
. "$here/apiserver.sh"
serving_cert nats
kubectl create clusterrolebinding e2e-natsauth --clusterrole system:auth-delegator \
	--user trainscope-natsauth >/dev/null
kubeconfig trainscope-natsauth natsauth-token "$WORK/natsauth.kubeconfig"

# ---- identities: ServiceAccounts, a node, pods bound to it, tokens bound to the pods ---
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Namespace
metadata: {name: trainscope}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
EOF
for sa in trainscope/trainscope-analyzer trainscope/trainscope-agent trainscope/trainscope-cli \
	team-a/default team-b/default; do
	kubectl -n "${sa%/*}" create serviceaccount "${sa#*/}" >/dev/null
done
pod() { # NS NAME SA: a pod on node-1 (no kubelet runs it: its token is what counts)
	kubectl -n "$1" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $2}
spec:
  nodeName: node-1
  serviceAccountName: $3
  containers: [{name: c, image: trainscope:e2e}]
EOF
	kubectl -n "$1" get pod "$2" -o jsonpath='{.metadata.uid}'
}
token() { # NS SA [POD]: a token for trainscope's NATS, bound to the pod when named
	kubectl -n "$1" create token "$2" --audience trainscope-nats --duration 1h \
		${3:+--bound-object-kind Pod --bound-object-name "$3"} >"$WORK/token.$1.$2${3:+.$3}"
	echo "$WORK/token.$1.$2${3:+.$3}"
}
uid_a=$(pod team-a trainer-0 default)
uid_analyzer=$(pod trainscope analyzer-0 trainscope-analyzer)
uid_agent=$(pod trainscope agent-0 trainscope-agent)
tok_a=$(token team-a default trainer-0)
tok_a_unbound=$(token team-a default)
tok_analyzer=$(token trainscope trainscope-analyzer analyzer-0)
tok_agent=$(token trainscope trainscope-agent agent-0)
tok_cli=$(token trainscope trainscope-cli)
kubectl -n team-a create token default --audience someone-else >"$WORK/token.other-audience"

# ---- two routed nats-servers with TLS and auth callout; natsauth beside the first -------
# as the chart's NATS pods: each init container takes the issuer, the service's and the
# routes' passwords from one Secret (the first to come makes them; both come at once
# here) and writes the accounts, auth_callout and routes parts the configuration includes
kubectl -n trainscope create role nats-keys --verb get,update,create --resource secrets >/dev/null
kubectl -n trainscope create rolebinding nats-keys --role nats-keys --user trainscope-natsauth >/dev/null
nats_port=(); route_port=(); routes=""
for i in 0 1; do
	nats_port[i]=$(free_port); route_port[i]=$(free_port)
	routes="$routes${routes:+,}nats-route://localhost:${route_port[i]}"
done
# and, as the chart's tls init container, the routes' certificate from one Secret: here
# it names localhost, the host the routes dial (in the chart *.<release>-nats-cluster...)
for i in 0 1; do
	mkdir -p "$WORK/nats$i/auth" "$WORK/nats$i/tls"
	POD_NAMESPACE=trainscope "$BIN/trainscope-natsauth" --dir "$WORK/nats$i/auth" --init \
		--secret trainscope-nats-keys --routes "$routes" --kubeconfig "$WORK/natsauth.kubeconfig" \
		>"$WORK/nats$i/init.log" 2>&1 &
	init_pid[i]=$!
	POD_NAMESPACE=trainscope "$BIN/trainscope-webhook" --bootstrap-certs --secret trainscope-nats-tls \
		--service trainscope-nats --peer-names localhost --out-dir "$WORK/nats$i/tls" \
		--kubeconfig "$WORK/natsauth.kubeconfig" >"$WORK/nats$i/tls.log" 2>&1 &
	tls_pid[i]=$!
done
for i in 0 1; do
	wait "${init_pid[i]}" || die "natsauth --init: $(tail -3 "$WORK/nats$i/init.log")"
	wait "${tls_pid[i]}" || die "--bootstrap-certs: $(tail -3 "$WORK/nats$i/tls.log")"
done
same_keys() {
	local f
	for f in issuer.seed password route.password; do
		cmp -s "$WORK/nats0/auth/$f" "$WORK/nats1/auth/$f" || return 1
		[ "$(kubectl -n trainscope get secret trainscope-nats-keys -o "jsonpath={.data.${f//./\\.}}" |
			base64 -d)" = "$(cat "$WORK/nats0/auth/$f")" ] || return 1
	done
	[ "$(grep -c "nats-route://route:" "$WORK/nats0/auth/routes.conf")" = 2 ] &&
		cmp -s "$WORK/nats0/tls/tls.crt" "$WORK/nats1/tls/tls.crt"
}
expect "two NATS pods' init at once: one Secret each, the same keys and certificate in both" same_keys
for i in 0 1; do
	cat >"$WORK/nats$i/nats.conf" <<EOF
server_name: e2e-$i
listen: 127.0.0.1:${nats_port[i]}
tls { cert_file: "$pki/nats.crt", key_file: "$pki/nats.key" }
jetstream { store_dir: "$WORK/nats$i/js" }
include auth/auth.conf
cluster {
  name: e2e, listen: 127.0.0.1:${route_port[i]}, include auth/routes.conf
  tls { cert_file: "$WORK/nats$i/tls/tls.crt", key_file: "$WORK/nats$i/tls/tls.key", ca_file: "$WORK/nats$i/tls/ca.crt", timeout: 5 }
}
EOF
	nats-server-auth -c "$WORK/nats$i/nats.conf" >"$WORK/nats$i/log" 2>&1 &
	PIDS="$PIDS $!"
done
for i in 0 1; do
	wait_for 30 grep -q "Server is ready" "$WORK/nats$i/log" ||
		die "nats-server $i did not start: $(tail -5 "$WORK/nats$i/log")"
done
echo "auth e2e: two $(nats-server-auth --version) with TLS, auth callout and authenticated TLS routes"
export NATS_URL="tls://127.0.0.1:${nats_port[0]}" TRAINSCOPE_NATS_CA="$pki/ca.crt"
NATS_URL2="tls://127.0.0.1:${nats_port[1]}" # $nats_port below: the first's
"$BIN/trainscope-natsauth" --dir "$WORK/nats0/auth" \
	--nats "$NATS_URL" --kubeconfig "$WORK/natsauth.kubeconfig" \
	--cli trainscope:trainscope-cli --analyzer-partitions 2 --metrics-addr 127.0.0.1 --metrics-port 0 \
	2>"$WORK/natsauth.log" &
PIDS="$PIDS $!"
wait_for 15 grep -q "answering" "$WORK/natsauth.log" || die "natsauth did not start: $(cat "$WORK/natsauth.log")"
natsauth_metrics=$(grep -o 'port [0-9]*' "$WORK/natsauth.log" | awk '{ print "http://127.0.0.1:" $2 "/metrics" }')

# try TOKEN_FILE POD_UID OP:SUBJECT: what the server does with that operation
try() {
	TRAINSCOPE_POD_UID=$2 "$BIN/forge" --nats "$NATS_URL" ${1:+--nats-token-file "$1"} \
		--try "$3" >"$WORK/try.out" 2>&1
	local rc=$?
	echo "      $3: $(head -c 300 "$WORK/try.out")"
	return $rc
}
no_connection() { local rc=0; try "$@" || rc=$?; [ "$rc" = 4 ]; }
denied() { local rc=0; try "$@" || rc=$?; [ "$rc" = 3 ]; }

# ---- who may connect ---------------------------------------------------------------------
expect "no token: connection refused" no_connection "" "" pub:ts.v1.team-a.j.rank.0
echo "not-a-token" >"$WORK/token.junk"
expect "a junk token: connection refused" no_connection "$WORK/token.junk" "" pub:ts.v1.team-a.j.rank.0
expect "a token for another audience: refused" no_connection "$WORK/token.other-audience" "" \
	pub:ts.v1.team-a.j.rank.0
expect "a relay token not bound to a pod: refused" no_connection "$tok_a_unbound" "" \
	pub:ts.v1.team-a.j.rank.0
expect "plain TCP to the TLS port: refused" sh -c \
	"! TRAINSCOPE_NATS_CA= '$BIN/forge' --nats nats://127.0.0.1:$nats_port --nats-token-file '$tok_a' \
		--try pub:x >/dev/null 2>&1"

routed() { # a relay on the second server, whose callout answer comes over the route
	TRAINSCOPE_POD_UID=$uid_a "$BIN/forge" --nats "$NATS_URL2" --nats-token-file "$tok_a" \
		--try pub:ts.v1.team-a.j.rank.0 >"$WORK/try2.out" 2>&1
}
expect "the second server (no callout of its own) admits a relay: the first's answer, one issuer" \
	wait_for 30 routed
# rogue CREDS SAYS CLUSTER_BLOCK_LINES: a third server dialling the first's route port
# with CREDS ("user:password@" or none) and those lines, refused: SAYS is the refusal
rogue() {
	local what=$1 says=$2 pid rc=0; shift 2
	printf 'listen: 127.0.0.1:%s\ncluster {\n  name: e2e, listen: 127.0.0.1:%s\n  routes: ["nats-route://%slocalhost:%s"]\n%s\n}\n' \
		"$(free_port)" "$(free_port)" "$what" "${route_port[0]}" "$*" >"$WORK/rogue.conf"
	local before
	before=$(grep -c "$says" "$WORK/nats0/log" || true)
	nats-server-auth -c "$WORK/rogue.conf" >"$WORK/rogue.log" 2>&1 &
	pid=$!
	# said by the first server, or to the rogue by it (-ERR)
	wait_for 20 sh -c "grep -q '$says' '$WORK/rogue.log' ||
		[ \$(grep -c '$says' '$WORK/nats0/log') -gt $before ]" || rc=1
	kill "$pid"; wait "$pid" 2>/dev/null || true
	[ "$rc" = 0 ] || echo "      the first server's log: $(tail -2 "$WORK/nats0/log"); the rogue's: $(tail -2 "$WORK/rogue.log")"
	return $rc
}
route_pw=$(cat "$WORK/nats0/auth/route.password")
t0=$WORK/nats0/tls
tls_ok="tls { cert_file: \"$t0/tls.crt\", key_file: \"$t0/tls.key\", ca_file: \"$t0/ca.crt\" }"
expect "a route with the right certificate, without the routes' password: refused" \
	rogue "" "Authorization Violation" "$tls_ok"
expect "a route with the routes' password, without TLS: refused" \
	rogue "route:$route_pw@" "TLS route handshake error"
expect "a route with the routes' password and a certificate of another CA: refused" \
	rogue "route:$route_pw@" "TLS route handshake error" \
	"tls { cert_file: \"$pki/nats.crt\", key_file: \"$pki/nats.key\", ca_file: \"$t0/ca.crt\" }"

# ---- the analyzer, with its own token, makes the stream and its consumer --------------
TRAINSCOPE_NATS_TOKEN_FILE=$tok_analyzer TRAINSCOPE_POD_UID=$uid_analyzer start_analyzer --quiet

# ---- a relay of team-a: its job goes through; nothing else --------------------------------
TRAINSCOPE_NATS_TOKEN_FILE=$tok_a TRAINSCOPE_POD_UID=$uid_a TRAINSCOPE_NODE=node-1 \
	TRAINSCOPE_NAMESPACE=team-a run_job authjob 8 120 compute --fault-rank 5 --fault-step 30
wait_report authjob 119 team-a
expect "team-a's job analysed through the authenticated relay" check_report authjob 5 Compute
expect "relay A: publish to B's subjects denied" denied "$tok_a" "$uid_a" pub:ts.v1.team-b.j.rank.0
expect "relay A: a Bundle on B's pod subjects denied" denied "$tok_a" "$uid_a" pub:ts.v1.team-b.j.pod.p
expect "relay A: a Bundle on its own namespace's pod subjects allowed" try "$tok_a" "$uid_a" \
	pub:ts.v1.team-a.j.pod.trainer-0
expect "relay A: announce to another node denied" denied "$tok_a" "$uid_a" pub:ts.v1.team-a.j.ctl.node-2
expect "relay A: publish host samples denied" denied "$tok_a" "$uid_a" pub:ts.v1.team-a.j.host.node-1
expect "relay A: read its own namespace's subjects denied" denied "$tok_a" "$uid_a" "sub:ts.v1.team-a.>"
expect "relay A: read another pod's inbox denied" denied "$tok_a" "$uid_a" "sub:_INBOX.$uid_analyzer.>"
expect "relay A: stream info denied" denied "$tok_a" "$uid_a" 'req:$JS.API.STREAM.INFO.TRAINSCOPE'
for who in "relay:$tok_a:$uid_a" "agent:$tok_agent:$uid_agent" "cli:$tok_cli:"; do
	IFS=: read -r role file uid <<<"$who"
	expect "$role: delete the analyzer's consumer denied" denied "$file" "$uid" \
		'req:$JS.API.CONSUMER.DELETE.TRAINSCOPE.trainscope-analyzer'
done
expect "cli: delete a partition's consumer denied (--analyzer-partitions 2)" denied "$tok_cli" "" \
	'req:$JS.API.CONSUMER.DELETE.TRAINSCOPE.trainscope-analyzer-p1'
expect "the analyzer's consumer is still there (its own token may read it)" try "$tok_analyzer" \
	"$uid_analyzer" 'req:$JS.API.CONSUMER.INFO.TRAINSCOPE.trainscope-analyzer'
grep -q '"name":"trainscope-analyzer"' "$WORK/try.out" || fail "consumer info"

# ---- the agent and the CLI ----------------------------------------------------------------
expect "agent: its node's announcements readable" try "$tok_agent" "$uid_agent" "sub:ts.v1.*.*.ctl.node-1"
expect "agent: another node's announcements denied" denied "$tok_agent" "$uid_agent" "sub:ts.v1.*.*.ctl.node-2"
expect "agent: samples as another node denied" denied "$tok_agent" "$uid_agent" pub:ts.v1.team-a.j.host.node-2
expect "agent: rank batches denied" denied "$tok_agent" "$uid_agent" pub:ts.v1.team-a.j.rank.0
expect "agent: Bundles denied" denied "$tok_agent" "$uid_agent" pub:ts.v1.team-a.j.pod.p
expect "cli: the stream readable" try "$tok_cli" "" 'req:$JS.API.STREAM.INFO.TRAINSCOPE'
expect "cli: timeline through a consumer of its own" sh -c "TRAINSCOPE_NATS_TOKEN_FILE='$tok_cli' \
	'$BIN/trainscope' timeline --nats '$NATS_URL' --namespace team-a --job authjob \
	--out '$WORK/timeline.json' >'$WORK/timeline.log' 2>&1 && test -s '$WORK/timeline.json'"

# ---- forged and mismatched batches ----------------------------------------------------------
mismatch() { # a batch on team-a's subject whose payload says team-b
	TRAINSCOPE_POD_UID=$uid_a "$BIN/forge" --nats "$NATS_URL" --nats-token-file "$tok_a" \
		--ns team-a --payload-ns team-b --job authjob --step 100 >/dev/null 2>&1 &&
	wait_for 20 sh -c "curl -s '$ANALYZER_METRICS' | grep -q '^trainscope_analyzer_mismatched_batches_total [1-9]'"
}
expect "a batch whose payload names another namespace is refused and counted" mismatch
expect "no report for team-b" test ! -e "$REPORTS/team-b_authjob.json"
# ---- connect storms: a token reviewed once is remembered ------------------------------------
natsauth_metric() { curl -s "$natsauth_metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# the API server's own count of TokenReviews made (every code)
tokenreviews() {
	kubectl get --raw /metrics | awk '/^apiserver_request_total\{/ && /resource="tokenreviews"/ &&
		/verb="POST"/ { n += $NF } END { print n + 0 }'
}
same_token_again() {
	local misses hits reviews
	# the first connection with this token (its review remembered), then a second
	try "$tok_a" "$uid_a" pub:ts.v1.team-a.j.rank.0 >/dev/null || return 1
	misses=$(natsauth_metric trainscope_natsauth_cache_misses_total)
	hits=$(natsauth_metric trainscope_natsauth_cache_hits_total)
	reviews=$(tokenreviews)
	try "$tok_a" "$uid_a" pub:ts.v1.team-a.j.rank.0 || return 1
	echo "      natsauth's reviews $misses -> $(natsauth_metric trainscope_natsauth_cache_misses_total)," \
		"cache hits $hits -> $(natsauth_metric trainscope_natsauth_cache_hits_total);" \
		"the API server's TokenReviews $reviews -> $(tokenreviews)"
	[ "$(natsauth_metric trainscope_natsauth_cache_misses_total)" = "$misses" ] &&
		[ "$(natsauth_metric trainscope_natsauth_cache_hits_total)" -gt "$hits" ] &&
		[ "$(tokenreviews)" = "$reviews" ] && [ "$reviews" -gt 0 ]
}
expect "a second connection with the same token: no new TokenReview (natsauth's cache)" same_token_again
expect "natsauth counts grants and refusals" sh -c "curl -s '$natsauth_metrics' |
	grep -q 'trainscope_natsauth_granted_total{role=\"relay\"} [1-9]' &&
	curl -s '$natsauth_metrics' | grep -q '^trainscope_natsauth_refused_total [1-9]'"
served_as_declared "$BIN/trainscope-natsauth" "$natsauth_metrics"

echo "auth e2e: $passed passed, $fails failed, 0 skipped"
[ "$fails" = 0 ]
