# SPDX-License-Identifier: Apache-2.0
# The scale benches' measuring tools (bench_scale.sh, bench_100k.sh), sourced after
# e2e/lib.sh and start_nats_cluster: a process's CPU and peak memory, an analyzer started
# on the cluster, its metrics, the stream's size and the verdict lag's quantiles.
tck=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tck" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }
rss_mb() { awk '/VmHWM/ { print $2 / 1024 }' "/proc/$1/status"; }
analyzer() { # analyzer NAME ARGS...: started, its pid in APID, its metrics URL in AMET
	local name=$1; shift
	mkdir -p "$WORK/$name"
	"${ANALYZER:-$BIN/trainscope-analyzer}" --nats "$CLUSTER_URLS" --report-dir "$WORK/$name/reports" \
		--metrics-port 0 --quiet "$@" >"$WORK/$name/out" 2>"$WORK/$name/log" &
	APID=$!
	PIDS="$PIDS $APID"
	wait_for 60 grep -q consuming "$WORK/$name/log" || die "$name: $(tail -3 "$WORK/$name/log")"
	AMET=$(grep -o 'http://[0-9.:]*/metrics' "$WORK/$name/log" | head -1)
}
metric() { curl -sf -m 5 "$1" | awk -v m="$2" '$1 == m { print $2 }'; }
steps_at_least() { [ "$(metric "$1" trainscope_analyzer_steps_total)" -ge "$2" ] 2>/dev/null; }
stream_bytes() { # bytes and messages of the stream (0 0 before it is made)
	curl -sf "http://127.0.0.1:${NATS_MON[1]}/jsz?streams=true" | python3 -c '
import json, sys
found = [(s["state"]["bytes"], s["state"]["messages"])
         for a in json.load(sys.stdin)["account_details"]
         for s in a.get("stream_detail", []) if s["name"] == "TRAINSCOPE"]
print(*(found[0] if found else (0, 0)))'
}

lag_q() { # lag_q METRICS_URL: p50 p99 max of the verdict lag histogram (bucket bounds, capped at max)
	curl -sf "$1" | python3 -c '
import re, sys
b, mx = {}, 0.0
for line in sys.stdin:
    m = re.match(r"trainscope_analyzer_verdict_lag_seconds_bucket\{le=\"([^\"]+)\"\} (\S+)", line)
    if m:
        b[float("inf") if m.group(1) == "+Inf" else float(m.group(1))] = float(m.group(2))
    m = re.match(r"trainscope_analyzer_verdict_lag_max_seconds (\S+)", line)
    if m:
        mx = float(m.group(1))
def q(p):
    n = b[float("inf")]
    return next(min(le, mx) for le, c in sorted(b.items()) if c >= p * n)
print("%.2f %.2f %.2f" % (q(0.5), q(0.99), mx))'
}
