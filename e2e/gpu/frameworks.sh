# SPDX-License-Identifier: Apache-2.0
# Sourced by run.sh (run.sh frameworks): training programs nobody here wrote, started by
# their own launchers, through the whole pipeline (nats-server, trainscope run = preload
# + relay, analyzer): Lightning DDP (its own launcher), torch.multiprocessing.spawn, HF
# Trainer under torchrun and under accelerate launch. Each gets a GEMM neighbour on the
# last GPU from step NOISY_FROM. Per job: the ranks the analyzer saw, each rank's step
# count in the stream against the framework's own, the verdict. JOBS picks jobs
# (default: lit spawn hf-torchrun hf-accelerate); CHAIN=1 runs spawn over NCCL's
# socket transport with a second profiler plugin set by the user (the test stand-in,
# build/test/double/libnccl-profiler-tsd2.so): both must see the collectives.
# Needs build/carry (e2e/gpu/carry.sh) and build/bin, build/lib. Writes $OUT/frameworks.txt.
frameworks() {
	pipeline_up
	local steps=${STEPS:-200} from=${NOISY_FROM:-60} gpu=$((NGPU - 1)) job
	for job in ${JOBS:-lit spawn hf-torchrun hf-accelerate}; do
		echo "== $job: $NGPU ranks, $steps steps, GEMM neighbour on GPU $gpu from step $from"
		local common=(--steps "$steps" --noisy-rank "$gpu" --noisy-from "$from" --out "$WORK/$job")
		case $job in
		lit) $tsrun --job lit -- python3 e2e/gpu/lit_train.py "${common[@]}" ;;
		spawn) $tsrun --job spawn -- python3 e2e/gpu/spawn_train.py "${common[@]}" ;;
		hf-torchrun) $tsrun --job hf-torchrun -- torchrun --standalone \
			--nproc_per_node="$NGPU" e2e/gpu/hf_train.py "${common[@]}" ;;
		hf-accelerate) $tsrun --job hf-accelerate -- accelerate launch --multi_gpu \
			--num_processes "$NGPU" --num_machines 1 --mixed_precision bf16 \
			--dynamo_backend no e2e/gpu/hf_train.py "${common[@]}" ;;
		esac >"$WORK/$job.log" 2>&1 || { echo "$job failed:"; tail -30 "$WORK/$job.log"; }
		job_result "$job" "$steps"
	done
	[ "${CHAIN:-0}" = 1 ] && chained
	cp "$ANALYZER_LOG" "$OUT/analyzer.log"
	cat "$WORK"/*.row >"$OUT/frameworks.txt" 2>/dev/null
	cat "$OUT/frameworks.txt"
	return 0
}

# job_result JOB STEPS: the report once its last step is analysed, the job's timeline
# (each rank's steps in the stream), and one row for frameworks.md.
job_result() {
	local job=$1 steps=$2
	"$BIN/trainscope" report --dir "$REPORTS" --job "$job" --wait-step $((steps - 1)) \
		--timeout 60 | head -14
	"$BIN/trainscope" report --dir "$REPORTS" --job "$job" --json >"$OUT/$job-report.json"
	"$BIN/trainscope" timeline --nats "$NATS_URL" --job "$job" \
		--out "$WORK/$job.trace.json" 2>/dev/null
	grep -E 'steps with no rank|is rank|refused' "$WORK/$job.log" | head -4
	[ -n "${KEEP_TRACES:-}" ] && cp "$WORK/$job.trace.json" "$OUT/" && cat "$WORK/$job".rank*.json >"$OUT/$job-ranks.json"
	python3 e2e/gpu/frameworks_row.py "$job" "$OUT/$job-report.json" "$WORK/$job.trace.json" \
		"$WORK/$job" | tee "$WORK/$job.row"
}

# mp.spawn over NCCL's socket transport (so its proxy carries every send and the profiler
# plugins see them), NCCL_PROFILER_PLUGIN set by the user to another plugin: trainscope
# run chains it behind its own. Both must count the collectives; trainscope keeps its
# per-peer sends.
chained() {
	local plug=$ROOT/build/test/double/libnccl-profiler-tsd2.so
	echo "== spawn with a user's NCCL profiler plugin ($plug), NCCL over sockets"
	rm -f "$OUT/prof2.txt"
	NCCL_PROFILER_PLUGIN=$plug TSD_PROF2_OUT=$OUT/prof2.txt NCCL_P2P_DISABLE=1 \
		NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo \
		$tsrun --job chain -- python3 e2e/gpu/spawn_train.py --steps 60 --layers 2 \
		--out "$WORK/chain" >"$WORK/chain.log" 2>&1 || tail -20 "$WORK/chain.log"
	grep -i 'profiler\|chain' "$WORK/chain.log" | head -5
	echo "-- the user's plugin counted:"
	cat "$OUT/prof2.txt"
	job_result chain 60
}
