#!/bin/bash
# trainscope-webhook over real HTTPS: a pod that opts in is patched, malformed and
# oversized requests are refused with an answer, and the counters say so.
set -e
BUILD=${BUILD:-build}
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 1 \
	-subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
"$BIN/trainscope-webhook" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" --addr 127.0.0.1 \
	--port 0 --image trainscope:e2e --nats nats://nats:4222 2>"$WORK/webhook.log" &
PIDS="$PIDS $!"
wait_for 10 grep -q "serving HTTPS" "$WORK/webhook.log" || die "webhook: $(cat "$WORK/webhook.log")"
port=$(grep -o 'port [0-9]*' "$WORK/webhook.log" | head -1 | cut -d' ' -f2)
url="https://127.0.0.1:$port"
post() { curl -s --cacert "$WORK/cert.pem" -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: application/json' "$@"; }
fails=0
expect() { # NAME COND
	if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1: $(head -c 300 "$WORK/out")"; fails=$((fails + 1)); fi
}

code=$(post --data-binary @"$here/../injector/webhook/tests/corpus/pod.json" "$url/mutate")
expect "an annotated pod is patched" '[ "$code" = 200 ] && grep -q "\"patchType\":\"JSONPatch\"" "$WORK/out"'
patch=$(python3 -c 'import json,sys,base64; print(base64.b64decode(json.load(open(sys.argv[1]))["response"]["patch"]).decode())' "$WORK/out")
expect "the patch appends LD_PRELOAD and adds the relay sidecar" \
	'echo "$patch" | grep -qF "/opt/jemalloc.so:/trainscope/lib/\$PLATFORM/libtrainscope.so" && echo "$patch" | grep -q "\"restartPolicy\":\"Always\""'
code=$(post --data-binary '{"request": {' "$url/mutate")
expect "malformed JSON gets 400 and an AdmissionReview" '[ "$code" = 400 ] && grep -q "\"allowed\":false" "$WORK/out"'
head -c 2000000 /dev/zero | tr '\0' 'x' >"$WORK/big"
code=$(post --data-binary @"$WORK/big" "$url/mutate")
expect "a 2 MB request gets 413" '[ "$code" = 413 ]'
code=$(curl -s --cacert "$WORK/cert.pem" -o "$WORK/out" -w '%{http_code}' "$url/healthz")
expect "healthz" '[ "$code" = 200 ]'
curl -s --cacert "$WORK/cert.pem" "$url/metrics" >"$WORK/out"
expect "metrics count 1 patched, 1 refused, 1 too large" \
	'grep -q "^trainscope_webhook_patched_total 1$" "$WORK/out" && grep -q "^trainscope_webhook_refused_total 1$" "$WORK/out" && grep -q "^trainscope_webhook_too_large_total 1$" "$WORK/out"'
kill -0 "$(pgrep -f "trainscope-webhook --tls-cert $WORK" | head -1)" 2>/dev/null
expect "the webhook is still up" '[ $? -eq 0 ]'
echo "webhook e2e: $((7 - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
