# SPDX-License-Identifier: Apache-2.0
# Sourced by run.sh (run.sh hostbound): issue 33's faults on a program nobody here wrote,
# through the whole pipeline with the node agent running as root. HF Trainer (GPT-2 from
# its config, 2 loader workers, torchrun) on every GPU; from optimizer step FROM rank 1
# gets, one job each:
#   data  its dataset's reads wait SLOW_MS per item (slow storage): Storage, not Healthy;
#   hogs  8 busy loops on its 4 cores (ranks pinned 4 cores each): HostCPU, the hogs named
#         as preemptors, not Compute or Storage;
#   gemm  a GEMM neighbour on its GPU: Compute, the collectives' slowing its evidence;
#   lit   Lightning DDP (its own launcher) with a GEMM neighbour on rank 1's GPU: Compute;
#   hfok, litok  the HF Trainer and Lightning jobs with no fault: Healthy, no rank named.
# Each job's report and a row go to $OUT; the JetStream store goes to $OUT/js.tgz, so the
# streams can be analysed again on the build machine (nats-server -js -sd, a new analyzer).
# Needs build/carry (e2e/gpu/carry.sh) and build/bin, build/lib.
hostbound() {
	# the analyzer's defaults, as a user gets them (lib.sh's are for 2-core CI machines)
	export TRAINSCOPE_ANALYZER_CHANGE_MIN_EXCESS=0 TRAINSCOPE_ANALYZER_CHANGE_THRESHOLD=13 \
		TRAINSCOPE_ANALYZER_NETWORK_DRIFT=0.05
	pipeline_up
	local steps=${STEPS:-240} from=${FROM:-60} lsteps=${LIT_STEPS:-500} job
	# not lib.sh's start_agent: a machine whose kernel refuses the agent still runs the jobs
	AGENT_LOG=$WORK/agent.log
	"$BIN/trainscope-agent" --nats "$NATS_URL" --metrics-port 0 --trust-host-processes \
		--interval-ms 500 >"$WORK/agent.out" 2>"$AGENT_LOG" &
	PIDS="$PIDS $!"
	wait_for 15 grep -q "metrics on" "$AGENT_LOG" || echo "agent: $(tail -5 "$AGENT_LOG")"
	# the GPUs' clocks, power and temperature each second: what a slow rank's device did
	mkdir -p "$WORK/extra"
	nvidia-smi dmon -s pc -o T -d 1 >"$WORK/extra/dmon.txt" 2>&1 &
	PIDS="$PIDS $!"
	for job in ${JOBS:-data lit hogs gemm}; do
		echo "== $job: $NGPU ranks, $steps steps, fault on rank 1 from step $from"
		local common=(--steps "$steps" --out "$WORK/$job")
		case $job in
		data) $tsrun --job data -- torchrun --standalone --nproc_per_node="$NGPU" \
			e2e/gpu/hf_train.py "${common[@]}" --fault-from "$from" \
			--slow-data-ms "${SLOW_MS:-30}" ;;
		gemm) $tsrun --job gemm -- torchrun --standalone --nproc_per_node="$NGPU" \
			e2e/gpu/hf_train.py "${common[@]}" --noisy-rank 1 --noisy-from "$from" ;;
		hogs) $tsrun --job hogs -- torchrun --standalone --nproc_per_node="$NGPU" \
			e2e/gpu/hf_train.py "${common[@]}" --fault-from "$from" --hogs 8 --pin 4 ;;
		hfok) $tsrun --job hfok -- torchrun --standalone --nproc_per_node="$NGPU" \
			e2e/gpu/hf_train.py "${common[@]}" ;;
		litok*) $tsrun --job "$job" -- python3 e2e/gpu/lit_train.py --steps "$lsteps" \
			--out "$WORK/$job" ;;
		lit) $tsrun --job lit -- python3 e2e/gpu/lit_train.py --steps "$lsteps" \
			--noisy-rank $((NGPU - 1)) --noisy-from 40 --out "$WORK/lit" ;;
		esac >"$WORK/$job.log" 2>&1 || { echo "$job failed:"; tail -30 "$WORK/$job.log"; continue; }
		# what is here comes back even if the device time runs out during the next job
		if [ "${job#lit}" != "$job" ]; then job_result "$job" "$lsteps"; else job_result "$job" "$steps"; fi
		tar -C "$WORK/nats" -czf "$OUT/js.tgz" js
		# the device tool brings back 8 files: the rest travel in one archive
		mv "$OUT/$job-report.json" "$WORK/extra/" 2>/dev/null
		cp "$WORK/$job".rank*.json "$WORK/extra/" 2>/dev/null
		tar -C "$WORK" -czf "$OUT/extra.tgz" extra
		cp "$ANALYZER_LOG" "$OUT/analyzer.log"
		cp "$AGENT_LOG" "$OUT/agent.log"
		cat "$WORK"/*.row >"$OUT/hostbound.txt" 2>/dev/null
	done
	return 0
}
