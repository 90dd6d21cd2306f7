# SPDX-License-Identifier: Apache-2.0
# Sourced by run.sh (run.sh record): the real-program corpus of bench/data. Real training
# programs, healthy and with faults, each through the whole pipeline (trainscope run =
# preload, shim and relay; NATS; the node agent as root; an analyzer with the user's
# defaults). What the analyzer received stays in the JetStream store, with the time each
# message reached it; $OUT/js.tgz brings it back, and e2e/gpu/corpus.sh cuts it into one
# recording per job (trainscope record) on the build machine.
#
# LANES: the GPU groups that run jobs side by side, one job each at a time (default
# "0,1 2,3" on 4 GPUs: two 2-rank jobs at once; "0,1,2,3": 4-rank jobs). Each lane's
# ranks use their own cores (hogs pin there) and ports. JOBS: the jobs, in order, as
# PROGRAM-FAULT-N (PROGRAM: hft hfa lit spawn fsdp comp lb pp ddp compd vis litd acc fab; FAULT: ok gemm data1
# data2 hogs sleep slow0); a lane takes the next one not taken. DEADLINE: seconds after
# which no job starts (the device command's limit less the packing); JOB_TIMEOUT: the
# most seconds one job may run (default 240).
# Per job, $WORK/meta/<job>.json: the command, the lane's GPUs, the times, the exit code,
# and the fault's real start (TS_TRUTH_FILE lines from the injectors), for the labels.
# Needs build/carry (e2e/gpu/carry.sh) and build/bin, build/lib.

record_jobs_2=(
	hft-ok-1 lit-ok-1 spawn-ok-1 hfa-ok-1 fsdp-ok-1 comp-ok-1 lb-ok-1
	hft-gemm-1 hft-data1-1 hft-data2-1 hft-hogs-1 spawn-sleep-1 spawn-slow0-1 comp-gemm-1
	lit-gemm-1
	hft-ok-2 lit-ok-2 spawn-ok-2 hfa-ok-2 fsdp-ok-2 comp-ok-2 lb-ok-2
	hft-ok-3 lit-ok-3 spawn-ok-3 hfa-ok-3 fsdp-ok-3 comp-ok-3 lb-ok-3
)

# record_cmd JOB WORLD: the job's command line (words), its fault on rank 1 (the last
# rank for a neighbour on 4 ranks).
record_cmd() {
	local job=$1 world=$2 prog fault
	prog=${job%%-*}
	fault=${job#*-}
	fault=${fault%-*}
	local last=$((world - 1)) args=()
	case $prog in
	hft) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/hf_train.py --steps 200) ;;
	hfa) args=(accelerate launch --multi_gpu --num_processes "$world" --num_machines 1
		--mixed_precision bf16 --dynamo_backend no --main_process_port "$MASTER_PORT"
		e2e/gpu/hf_train.py --steps 200) ;;
	lit) args=(python3 e2e/gpu/lit_train.py --devices "$world" --steps 400) ;;
	spawn) args=(python3 e2e/gpu/spawn_train.py --world "$world" --steps 400) ;;
	fsdp) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/train.py --mode fsdp
		--layers 6 --dim 1024 --seq 512 --steps 200 --warmup 0) ;;
	comp) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/train.py
		--compile reduce-overhead --layers 4 --dim 1024 --seq 512 --steps 300 --warmup 0) ;;
	lb) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/train.py --layers 2
		--dim 256 --heads 4 --seq 128 --batch 4 --steps 500 --warmup 0) ;;
	pp) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/pp_train.py --steps 200) ;;
	ddp) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/train.py --layers 6
		--dim 1024 --seq 512 --steps 300 --warmup 0) ;;
	compd) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/train.py
		--compile default --layers 4 --dim 1024 --seq 512 --steps 400 --warmup 0) ;;
	# programs the floors were never set on: vis and litd (session 21), acc and fab (22)
	vis) args=(torchrun --standalone --nproc_per_node="$world" e2e/gpu/vision_train.py
		--steps 250) ;;
	litd) args=(python3 e2e/gpu/litdemo_train.py --devices "$world" --batch 32 --steps 600) ;;
	acc) args=(accelerate launch --multi_gpu --num_processes "$world" --num_machines 1
		--mixed_precision bf16 --dynamo_backend no --main_process_port "$MASTER_PORT"
		e2e/gpu/acc_train.py --steps 250) ;;
	fab) args=(python3 e2e/gpu/fabric_train.py --devices "$world" --steps 250) ;;
	esac
	case $fault in
	ok|slow0) ;;
	gemm) case $prog in
		lit) args+=(--noisy-rank "$last" --noisy-from 100) ;;
		# 12 ms steps: the neighbour needs ~4 s to start
		comp) args+=(--noisy-rank "$last" --noisy-from 20
			--steps 900) ;;
		# its steps are short: the neighbour's start (a Python process importing
		# torch) took 227 of them in ddp-gemm-1, 13 steps before the end
		ddp) args+=(--noisy-rank "$last" --noisy-from 60 --steps 800) ;;
		*) args+=(--noisy-rank "$last" --noisy-from 60) ;;
		esac ;;
	data1) args+=(--fault-rank 1 --fault-from 60 --slow-data-ms 30 --workers 1) ;;
	data2) args+=(--fault-rank 1 --fault-from 60 --slow-data-ms 30 --workers 2) ;;
	hogs) args+=(--fault-rank 1 --fault-from 60 --hogs 8 --pin 4) ;;
	sleep) args+=(--sleep-rank 1 --sleep-from 100 --sleep-ms 20) ;;
	esac
	echo "${args[@]}"
}

# record_one JOB LANE_GPUS LANE_INDEX: one job through trainscope run, then its meta.
record_one() {
	local job=$1 gpus=$2 lane=$3 world cmd t0 t1 rc noisy=""
	world=$(($(tr -cd , <<<"$gpus" | wc -c) + 1))
	export CUDA_VISIBLE_DEVICES=$gpus MASTER_PORT=$((29600 + 10 * lane))
	export TS_PIN_BASE=$((32 * lane)) TS_TRUTH_FILE=$WORK/truth/$job.jsonl
	cmd=$(record_cmd "$job" "$world")
	t0=$(date +%s%N)
	if [ "${job#*-slow0}" != "$job" ]; then # a neighbour on the last rank's GPU before step 0
		TS_TRUTH_RANK=$((world - 1)) CUDA_VISIBLE_DEVICES=${gpus##*,} \
			python3 e2e/gpu/noisy.py &
		noisy=$!
		local waited=0
		until [ -s "$TS_TRUTH_FILE" ] || [ $waited -ge 60 ]; do sleep 0.5; waited=$((waited + 1)); done
	fi
	echo "== $job on GPUs $gpus: $cmd"
	# shellcheck disable=SC2086
	timeout -k 15 "${JOB_TIMEOUT:-240}" $tsrun --job "$job" -- $cmd --out "$WORK/ranks/$job" >"$WORK/logs/$job.log" 2>&1
	rc=$?
	t1=$(date +%s%N)
	[ -n "$noisy" ] && kill "$noisy" 2>/dev/null
	[ $rc = 0 ] || { echo "$job failed ($rc):"; tail -15 "$WORK/logs/$job.log"; }
	python3 - "$job" "$gpus" "$cmd" "$t0" "$t1" "$rc" "$TS_TRUTH_FILE" "$WORK/ranks/$job" \
		>"$WORK/meta/$job.json" <<'PY'
import glob, json, os, sys
job, gpus, cmd, t0, t1, rc, truth, ranks = sys.argv[1:]
marks = [json.loads(l) for l in open(truth)] if os.path.exists(truth) else []
steps = {}
for p in glob.glob(ranks + ".rank*.json"):
    r = json.load(open(p))
    steps[r["rank"]] = r.get("steps")
print(json.dumps({"job": job, "gpus": gpus, "command": cmd, "start_ns": int(t0),
                  "end_ns": int(t1), "exit": int(rc), "faults": marks,
                  "framework_steps": steps}))
PY
	"$BIN/trainscope" report --dir "$REPORTS" --job "$job" 2>/dev/null | head -4
}

# record_lane GPUS INDEX: takes the next job not taken until none is left or the deadline.
record_lane() {
	local gpus=$1 lane=$2 i=0 job
	for job in "${rjobs[@]}"; do
		i=$((i + 1))
		mkdir "$WORK/claim/$i" 2>/dev/null || continue
		if [ $(($(date +%s) - record_t0)) -ge "$deadline" ]; then
			echo "lane $lane: deadline, $job and the rest not run"
			break
		fi
		record_one "$job" "$gpus" "$lane"
	done
}

record() {
	# the analyzer's defaults, as a user gets them (lib.sh's are for 2-core CI machines)
	export TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS=0 TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD=13 \
		TRAINSCOPE_ANALYZER_NETWORK_DRIFT=0.05
	# the real-job floors on, as a user gets them (e2e/lib.sh turns them off for the
	# synthetic suites)
	TRAINSCOPE_ANALYZER_VERDICT_WAIT_FLOOR=$(LD_LIBRARY_PATH=$ROOT/build/carry/lib \
		"$ROOT/build/bin/trainscope-analyzer" --print-config |
		awk '$1 == "verdict.wait_floor:" { print $2 }')
	[ -n "$TRAINSCOPE_ANALYZER_VERDICT_WAIT_FLOOR" ] ||
		{ echo "record: the analyzer gave no verdict.wait_floor (--print-config)"; return 1; }
	export TRAINSCOPE_ANALYZER_VERDICT_WAIT_FLOOR
	record_t0=$(date +%s)
	local deadline=${DEADLINE:-480} lanes=${LANES:-"0,1 2,3"} lane=0 rjobs
	read -r -a rjobs <<<"${JOBS:-${record_jobs_2[*]}}"
	versions
	gpu_state | tee "$OUT/gpu-before.txt"
	if [ -n "${REQUIRE_COOL:-}" ] && ! gpus_cool; then
		echo "record: a GPU here is hot or was slowed by heat; not recording (REQUIRE_COOL)"
		return 1
	fi
	pipeline_up
	mkdir -p "$WORK/meta" "$WORK/truth" "$WORK/ranks" "$WORK/logs" "$WORK/claim"
	AGENT_LOG=$WORK/agent.log
	"$BIN/trainscope-agent" --nats "$NATS_URL" --metrics-port 0 --trust-host-processes \
		--interval-ms 500 >"$WORK/agent.out" 2>"$AGENT_LOG" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "metrics on" "$AGENT_LOG" || echo "agent: $(tail -5 "$AGENT_LOG")"
	local lpids=""
	for gpus in $lanes; do
		record_lane "$gpus" "$lane" >"$WORK/lane$lane.log" 2>&1 &
		lpids="$lpids $!"
		lane=$((lane + 1))
	done
	# shellcheck disable=SC2086
	wait $lpids
	cat "$WORK"/lane*.log
	echo "GPUs after the jobs:"
	gpu_state | tee "$OUT/gpu-after.txt"
	cp "$OUT/gpu-before.txt" "$OUT/gpu-after.txt" "$WORK/meta/"
	# the store as the analyzer read it, and the live reports of this build
	for r in "$REPORTS"/*.json; do
		[ -e "$r" ] || continue
		r=${r##*/default_}
		echo "== ${r%.json}"
		"$BIN/trainscope" report --dir "$REPORTS" --job "${r%.json}" 2>&1 | head -6
	done >"$WORK/live.txt"
	tar -C "$WORK/nats" -czf "$OUT/js.tgz" js
	cp "$ANALYZER_LOG" "$WORK/logs/analyzer.log"
	cp "$AGENT_LOG" "$WORK/logs/agent.log"
	cp "$OUT/versions.txt" "$WORK/meta/"
	cp -r "$REPORTS" "$WORK/live-reports"
	tar -C "$WORK" -czf "$OUT/meta.tgz" meta truth ranks logs live-reports live.txt
	ls -la "$OUT"
	return 0
}
