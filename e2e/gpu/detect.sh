# Sourced by run.sh: the noisy-neighbour and hang runs through the whole pipeline on the
# GPU machine (nats-server, trainscope run = preload + relay, analyzer in local mode).
# Needs build/carry (nats-server and the daemons' shared libraries, made by
# e2e/gpu/carry.sh on the build machine) and build/bin. NOISY=0 or HANG=0 skips a part.
detect() {
	export LD_LIBRARY_PATH=$ROOT/build/carry/lib PATH=$ROOT/build/carry/bin:$PATH
	BUILD=$ROOT/build KEEP_WORK=${KEEP_WORK:-}
	. e2e/lib.sh
	start_nats
	start_analyzer --quiet
	# trainscope run also puts the Python shim on PYTHONPATH and sets NCCL_PROFILER_PLUGIN
	tsrun="$BIN/trainscope run --nats $NATS_URL --lib $LIB"

	[ "${NOISY:-1}" = 1 ] && noisy
	[ "${HANG:-1}" = 1 ] && hang
	[ "${GRAPH:-0}" = 1 ] && graph_noisy
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
	"$BIN/trainscope" timeline --nats "$NATS_URL" --job gnoisy --out "$WORK/gnoisy.trace.json"
	python3 - "$WORK/gnoisy.trace.json" "$gpu" <<'PY' | tee "$OUT/gnoisy-compute.txt"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
per = {}
for e in ev:
    if e.get("ph") == "X" and e.get("tid") == 1 and e["name"].startswith("step "):
        per.setdefault(e["pid"], []).append((int(e["name"][5:]), e["args"]["compute_ms"]))
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")
for rank, steps in sorted(per.items()):
    before = med([c for s, c in steps if 30 <= s < 58])
    last = max(s for s, _ in steps)
    after = med([c for s, c in steps if s > last - 60])
    print("rank %d%s: device compute %.2f ms/step in steps 30-57, %.2f ms in the last 60 "
          "(%+.0f%%), %d steps" % (rank, " (neighbour)" if rank == int(sys.argv[2]) else "",
                                   before, after, 100 * (after / before - 1), len(steps)))
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
	"$BIN/trainscope" report --dir "$REPORTS" --job hang --json >"$OUT/hang-report.json"
	"$BIN/trainscope" report --dir "$REPORTS" --job hang | head -20
	pkill -f e2e/gpu/train.py; kill $job 2>/dev/null; wait $job 2>/dev/null
	grep -i 'hang' "$ANALYZER_LOG" | head -5
}
