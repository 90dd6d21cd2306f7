# SPDX-License-Identifier: Apache-2.0
# Sourced by run.sh: the noisy-neighbour and hang runs through the whole pipeline on the
# GPU machine (nats-server, trainscope run = preload + relay, analyzer in local mode).
# Needs build/carry (nats-server and the daemons' shared libraries, made by
# e2e/gpu/carry.sh on the build machine) and build/bin. NOISY=0 or HANG=0 skips a part.
detect() {
	pipeline_up

	[ "${NOISY:-1}" = 1 ] && noisy
	[ "${HANG:-1}" = 1 ] && hang
	[ "${GRAPH:-0}" = 1 ] && graph_noisy
	[ "${PEERS:-0}" = 1 ] && net_peers
	cp "$ANALYZER_LOG" "$OUT/analyzer.log"
	return 0
}

# A CUDA-graph job (torch.compile reduce-overhead) on every GPU there is; from step 60
# a GEMM neighbour shares GPU NOISY_GPU (default the last): that rank's device compute
# time per step (the timeline's step args, from the replays' timed segments) must rise,
# the others' not. The neighbour needs some seconds to start (Python, a CUDA context), so
# "after" is the last 60 steps.
graph_noisy() {
	local gpu=${NOISY_GPU:-$((NGPU - 1))}
	echo "== CUDA graphs (reduce-overhead), $NGPU rank(s): GEMM neighbour on GPU $gpu from step 60"
	$tsrun --job gnoisy -- torchrun --standalone --nproc_per_node="$NGPU" \
		e2e/gpu/train.py --compile reduce-overhead --layers 8 --warmup 20 --steps 240 \
		--noisy-rank "$gpu" --noisy-from 60 --out "$OUT/gnoisy" >"$WORK/gnoisy.log" 2>&1 ||
		tail -20 "$WORK/gnoisy.log"
	"$BIN/trainscope" report --dir "$REPORTS" --job gnoisy --wait-step 255 --timeout 60 |
		head -12
	"$BIN/trainscope" report --dir "$REPORTS" --job gnoisy --json >"$OUT/gnoisy-report.json"
	"$BIN/trainscope" timeline --nats "$NATS_URL" --job gnoisy --out "$WORK/gnoisy.trace.json"
	python3 - "$WORK/gnoisy.trace.json" "$gpu" <<'PY' | tee "$OUT/gnoisy-compute.txt"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
per = {}
for e in ev:
    if e.get("ph") == "X" and e.get("tid") == 1 and e["name"].startswith("step "):
        per.setdefault(e["pid"], []).append((int(e["name"][5:]), e["args"]))
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
for rank, steps in sorted(per.items()):
    last = max(s for s, _ in steps)
    for key in ("compute_ms", "collective_ms"):
        before = med([a[key] for s, a in steps if 30 <= s < 58])
        after = med([a[key] for s, a in steps if s > last - 60])
        print("rank %d%s: device %s %.2f ms/step in steps 30-57, %.2f ms in the last 60 "
              "(%s), %d steps" % (rank, " (neighbour)" if rank == int(sys.argv[2]) else "",
                                  key[:-3], before, after, "%+.0f%%" % (100 * (after / before - 1))
                                  if before else "-", len(steps)))
PY
}

noisy() {
	echo "== noisy neighbour on GPU 1 from step 60"
	$tsrun --job noisy -- torchrun --standalone --nproc_per_node="$NGPU" \
		e2e/gpu/train.py --layers 12 --warmup 20 --steps 140 --noisy-rank 1 \
		--noisy-from 60 --out "$OUT/noisy" 2>&1 | grep -v '^W1121' | tail -3
	"$BIN/trainscope" report --dir "$REPORTS" --job noisy --wait-step 150 --timeout 30
	"$BIN/trainscope" report --dir "$REPORTS" --job noisy --json >"$OUT/noisy-report.json"
	grep 'noisy' "$ANALYZER_LOG" | grep -E 'alarm|FailSlow' | head -12
}

hang() {
	echo "== rank 1 stops entering collectives at step 30 (hang timeout 20 s)"
	TRAINSCOPE_HANG_TIMEOUT_S=20 $tsrun --job hang -- torchrun --standalone \
		--nproc_per_node="$NGPU" e2e/gpu/train.py --layers 4 --warmup 5 --steps 200 \
		--hang-rank 1 --hang-at 30 >"$WORK/hang.log" 2>&1 &
	local job=$!
	local hung=no
	for _ in $(seq 1 120); do
		if "$BIN/trainscope" report --dir "$REPORTS" --job hang --json 2>/dev/null |
			grep -q '"state": *"Hang"'; then
			hung=yes
			break
		fi
		sleep 1
	done
	echo "hang reported: $hung"
	# the culprit never reports (it is not in a collective): with fewer than half the
	# ranks waiting, the analyzer names it after failslow.hang_culprit_wait_s (10 s)
	poll_report hang 'did not enter' 40 && echo "culprit named: yes" || echo "culprit named: no"
	"$BIN/trainscope" report --dir "$REPORTS" --job hang | head -20
	pkill -f e2e/gpu/train.py; kill $job 2>/dev/null; wait $job 2>/dev/null
	# the job is gone: its final report keeps the hang and its culprit
	poll_report hang 'lost' 60
	echo "-- after the job was killed:"
	"$BIN/trainscope" report --dir "$REPORTS" --job hang | head -20
	"$BIN/trainscope" report --dir "$REPORTS" --job hang --json >"$OUT/hang-report.json"
	grep -i 'hang' "$ANALYZER_LOG" | head -8
}

# poll_report JOB TEXT SECONDS: polls the job's report until it holds TEXT.
poll_report() {
	local i
	for i in $(seq 1 "$3"); do
		"$BIN/trainscope" report --dir "$REPORTS" --job "$1" --json 2>/dev/null |
			grep -q "$2" && return 0
		sleep 1
	done
	return 1
}

# NCCL over its socket transport (P2P and shared memory off, loopback), so its proxy
# threads carry every transfer and the profiler plugin times each send to its peer
# (Step.peers). From step 80 a netem delay on loopback slows the job's one link, where
# tc can add one: the sends' ns per byte must rise, and the analyzer must call the
# slowdown Communication with no rank named (the link is the whole job's).
net_peers() {
	local steps=200 delayed=no
	echo "== NCCL over sockets, $NGPU ranks: per-peer network sends; loopback delayed from step 80"
	NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_NET=Socket \
		NCCL_SOCKET_IFNAME=lo $tsrun --job netpeers -- torchrun --standalone \
		--nproc_per_node="$NGPU" e2e/gpu/train.py --layers 2 --dim 1024 --vocab 8192 \
		--seq 512 --warmup 10 --steps $steps --out "$OUT/netpeers" >"$WORK/netpeers.log" 2>&1 &
	local job=$!
	# netem where the kernel has it, else a token bucket that caps the rate
	if "$BIN/trainscope" report --dir "$REPORTS" --job netpeers --wait-step 80 --timeout 180 \
		>/dev/null && command -v tc >/dev/null 2>&1 &&
		{ tc qdisc add dev lo root netem delay 1ms rate 8gbit 2>"$WORK/tc.err" ||
		  tc qdisc add dev lo root tbf rate 4gbit burst 4mb latency 50ms 2>>"$WORK/tc.err"; }; then
		delayed="yes ($(tc qdisc show dev lo | head -1))"
	fi
	echo "loopback delayed: $delayed $(cat "$WORK/tc.err" 2>/dev/null)"
	wait $job || tail -20 "$WORK/netpeers.log"
	[ "$delayed" != no ] && tc qdisc del dev lo root
	"$BIN/trainscope" report --dir "$REPORTS" --job netpeers --wait-step $((steps + 5)) --timeout 60 |
		head -14
	"$BIN/trainscope" report --dir "$REPORTS" --job netpeers --json >"$OUT/netpeers-report.json"
	"$BIN/trainscope" timeline --nats "$NATS_URL" --job netpeers --out "$WORK/netpeers.trace.json"
	python3 - "$WORK/netpeers.trace.json" <<'PY' | tee "$OUT/netpeers.txt"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
steps, sends = {}, {}
for e in ev:
    if e.get("ph") == "X" and e.get("tid") == 1 and e["name"].startswith("step "):
        steps.setdefault(e["pid"], []).append((int(e["name"][5:]), dict(e["args"], step_ms=e["dur"] / 1e3)))
    elif e.get("ph") == "C" and e["name"].startswith("network sends"):
        sends.setdefault(e["pid"], []).append(e)
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
for rank in sorted(steps):
    st = dict(steps[rank])
    last = max(st)
    coll = sum(a["coll_mb"] for s, a in st.items() if s >= 20)
    sent = sum(a["net_sent_mb"] for s, a in st.items() if s >= 20)
    print("rank %d: %d steps; from step 20 collectives %.1f MB, network sends %.1f MB (%.3f of it)"
          % (rank, len(st), coll, sent, sent / coll if coll else float("nan")))
    before = {s: a for s, a in st.items() if 30 <= s < 75}
    after = {s: a for s, a in st.items() if s > last - 60}
    for name, part in (("steps 30-74", before), ("the last 60 steps", after)):
        print("  %s: step %.2f ms, collective %.2f ms;" % (name,
              med([a["step_ms"] for a in part.values()]),
              med([a["collective_ms"] for a in part.values()])), end="")
    print()
    peers = {}
    for e in sends.get(rank, []):
        for k, v in e["args"].items():
            peers.setdefault(k, []).append((e["ts"], v))
    for k, v in sorted(peers.items()):
        n = len(v)
        print("  sends %s: %d steps, ns per byte %.3f in the first third, %.3f in the last"
              % (k, n, med([x for _, x in v[: n // 3]]), med([x for _, x in v[-n // 3 :]])))
PY
}
