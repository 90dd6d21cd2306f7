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
