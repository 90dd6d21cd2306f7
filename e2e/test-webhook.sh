#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trainscope-webhook over real HTTPS: a pod that opts in is patched, malformed and
# oversized requests are refused with an answer, and the counters say so; a rotated
# certificate is served without a restart, a broken one is refused.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 1 \
	-subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
# The pair as the kubelet mounts a Secret: tls.crt -> ..data/tls.crt, ..data -> a
# timestamped folder; an update writes a new folder and swaps ..data in one rename.
tls="$WORK/tls"
publish() { # FOLDER CERT KEY
	mkdir -p "$tls/$1" && cp "$2" "$tls/$1/tls.crt" && cp "$3" "$tls/$1/tls.key" &&
		ln -s "$1" "$tls/..data_tmp" && mv -T "$tls/..data_tmp" "$tls/..data"
}
publish ..v1 "$WORK/cert.pem" "$WORK/key.pem"
ln -s ..data/tls.crt "$tls/tls.crt"
ln -s ..data/tls.key "$tls/tls.key"
"$BIN/trainscope-webhook" --tls-cert "$tls/tls.crt" --tls-key "$tls/tls.key" --addr 127.0.0.1 \
	--port 0 --cert-check-s 1 --image trainscope:e2e --nats nats://nats:4222 2>"$WORK/webhook.log" &
PIDS="$PIDS $!"
wait_for 10 grep -q "serving HTTPS" "$WORK/webhook.log" || die "webhook: $(cat "$WORK/webhook.log")"
port=$(grep -o 'port [0-9]*' "$WORK/webhook.log" | head -1 | cut -d' ' -f2)
url="https://127.0.0.1:$port"
post() { curl -s --cacert "$WORK/cert.pem" -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/json' "$@"; }
expect_detail() { head -c 300 "$WORK/out"; } # what the webhook answered last

code=$(post --data-binary @"$here/../injector/webhook/tests/corpus/pod.json" "$url/mutate")
expect "an annotated pod is patched" eval '[ "$code" = 200 ] && grep -q "\"patchType\":\"JSONPatch\"" "$WORK/out"'
patch=$(python3 -c 'import json,sys,base64; print(base64.b64decode(json.load(open(sys.argv[1]))["response"]["patch"]).decode())' "$WORK/out")
expect "the patch appends LD_PRELOAD and adds the relay sidecar" \
	eval 'echo "$patch" | grep -qF "/opt/jemalloc.so:/trainscope/lib/\$PLATFORM/libtrainscope.so" && echo "$patch" | grep -q "\"restartPolicy\":\"Always\""'
code=$(post --data-binary '{"request": {' "$url/mutate")
expect "malformed JSON gets 400 and an AdmissionReview" eval '[ "$code" = 400 ] && grep -q "\"allowed\":false" "$WORK/out"'
head -c 2000000 /dev/zero | tr '\0' 'x' >"$WORK/big"
code=$(post --data-binary @"$WORK/big" "$url/mutate")
expect "a 2 MB request gets 413" eval '[ "$code" = 413 ]'
code=$(curl -s --cacert "$WORK/cert.pem" -o "$WORK/out" -w '%{http_code}' "$url/healthz")
expect "healthz" eval '[ "$code" = 200 ]'
python3 - "$here/../injector/webhook/tests/corpus/pod.json" "$WORK/asks.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["request"]["object"]["metadata"].setdefault("annotations", {})["trainscope.dev/container-names"] = "nosuch"
json.dump(r, open(sys.argv[2], "w"))
PY
code=$(post --data-binary @"$WORK/asks.json" "$url/mutate")
expect "a pod whose named container does not exist: allowed unchanged, with a warning" \
	eval '[ "$code" = 200 ] && ! grep -q "\"patch\"" "$WORK/out" && grep -q "left unchanged" "$WORK/out"'
curl -s --cacert "$WORK/cert.pem" "$url/metrics" >"$WORK/out"
served_as_declared "$BIN/trainscope-webhook" "$WORK/out"
expect "metrics count 1 patched, 1 skipped, 1 refused, 1 too large" \
	eval 'grep -q "^trainscope_webhook_patched_total 1$" "$WORK/out" && grep -q "^trainscope_webhook_skipped_total 1$" "$WORK/out" && grep -q "^trainscope_webhook_refused_total 1$" "$WORK/out" && grep -q "^trainscope_webhook_too_large_total 1$" "$WORK/out"'

# ---- certificate rotation: a pair from a second CA, then a broken pair ----------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/ca2.key" -out "$WORK/ca2.pem" -days 2 \
	-subj /CN=second-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$WORK/key2.pem" -out "$WORK/req2.pem" \
	-subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$WORK/san.ext"
openssl x509 -req -in "$WORK/req2.pem" -CA "$WORK/ca2.pem" -CAkey "$WORK/ca2.key" \
	-CAcreateserial -days 1 -extfile "$WORK/san.ext" -out "$WORK/cert2.pem" 2>/dev/null
publish ..v2 "$WORK/cert2.pem" "$WORK/key2.pem"
healthz() { curl -sf --cacert "$1" -o /dev/null "$url/healthz"; }
webhook_metric() { curl -sf --cacert "$WORK/ca2.pem" "$url/metrics" | grep "^trainscope_webhook_$1 " | cut -d' ' -f2; }
wait_for 15 healthz "$WORK/ca2.pem"
expect "the new pair (second CA) is served on the same port, the old one no longer" \
	eval 'healthz "$WORK/ca2.pem" && ! healthz "$WORK/cert.pem"'
expiry=$(date -d "$(openssl x509 -enddate -noout -in "$WORK/cert2.pem" | cut -d= -f2)" +%s)
expect "the reload is logged and counted, the new notAfter exported" \
	eval 'grep -q "reloaded certificate" "$WORK/webhook.log" && [ "$(webhook_metric cert_reloads_total)" = 1 ] &&
	[ "$(webhook_metric cert_expiry_seconds)" = "$expiry" ] && [ "$(webhook_metric cert_reload_failures_total)" = 0 ]'
publish ..v3 "$WORK/cert2.pem" "$WORK/key.pem" # the key of another certificate
cond_failures() { [ "$(webhook_metric cert_reload_failures_total)" = "$1" ]; }
wait_for 15 cond_failures 1
expect "a broken pair keeps the previous one served and counts 1 failure" \
	eval 'cond_failures 1 && healthz "$WORK/ca2.pem" && [ "$(webhook_metric cert_reloads_total)" = 1 ] &&
	[ "$(grep -c "do not load: the key does not match" "$WORK/webhook.log")" = 1 ]'

expect "the webhook is still up" kill -0 "$(pgrep -f "trainscope-webhook --tls-cert $WORK" | head -1)"

# ---- SIGTERM reaching a thread of libmicrohttpd's, not the main one: it stops, exit 0,
# also with nothing to reread (--cert-check-s 0: the main thread used to pause() for
# good) -------------------------------------------------------------------------------
"$BIN/trainscope-webhook" --plain-http --addr 127.0.0.1 --port 0 --cert-check-s 0 \
	2>"$WORK/webhook2.log" &
pid2=$!
PIDS="$PIDS $pid2"
wait_for 10 grep -q "serving HTTP" "$WORK/webhook2.log" || die "webhook: $(cat "$WORK/webhook2.log")"
expect "SIGTERM delivered to a webhook thread other than the main one: it stops, exit 0" \
	stops_on_thread_term "$pid2" 10
echo "webhook e2e: $passed passed, $fails failed"
[ "$fails" -eq 0 ]
