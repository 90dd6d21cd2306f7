#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU e2e runs, one device-tool command each (see bench/results/gpu.md for the figures):
#   e2e/gpu/run.sh smoke     versions, launch microbenchmark, kernel coverage, FSDP run
#   e2e/gpu/run.sh overhead  DDP transformer with and without the preload, interleaved A/B
#   e2e/gpu/run.sh abinrun   the in-run A/B: recording paused in every other block of
#                            steps inside one job, per program (e2e/gpu/ab_inrun.py)
#   e2e/gpu/run.sh abpair    two of those at once, one on each of GPUs 0 and 1 (AB_PAIR)
#   e2e/gpu/run.sh selftime  the same with the diagnostic library: its own host time per
#                            recorded and per paused step, by hook (selftime.h)
#   e2e/gpu/run.sh selfpair  that, as abpair: two programs at once, one on each GPU
#   e2e/gpu/run.sh hookcost  a hooked call's cost on this host's CPU, recorded and
#                            paused (make bench's bench/bench_launch.sh; no GPU;
#                            HOOKCOST_BASELINE: an older library beside it)
#   e2e/gpu/run.sh detect    noisy neighbour and hang, through relay, NATS and analyzer
#   e2e/gpu/run.sh frameworks Lightning DDP, mp.spawn, HF Trainer (torchrun, accelerate)
#                            with a GEMM neighbour; a user's NCCL profiler plugin chained
#   e2e/gpu/run.sh hostbound HF Trainer with slow storage, CPU hogs on one rank's cores
#                            (node agent as root); Lightning DDP with a GEMM neighbour
#   e2e/gpu/run.sh coverage  kernels counted against torch.profiler: eager, torch.compile
#                            default and reduce-overhead (CUDA graphs), FSDP
#   e2e/gpu/run.sh record    the real-program corpus of bench/data (e2e/gpu/record.sh)
#   e2e/gpu/run.sh evbubble  what a device timestamp costs (timing event, event without
#                            timing, stamp kernel, stream write), host and device
#   e2e/gpu/run.sh graphcoll collectives captured into a CUDA graph, counted per replay
#                            (with NCCL's profiler plugin and without)
# Expects build/ (libtrainscope.so, and for detect the daemons) carried from the build
# machine; writes results under $OUT. NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-/tmp/ts-gpu-out}
LIB=$ROOT/build/lib/libtrainscope.so
NGPU=${NGPU:-$(nvidia-smi -L | wc -l)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

# The pipeline on this machine, for detect.sh and frameworks.sh: the carried nats-server
# and libraries, a NATS server and an analyzer (e2e/lib.sh), and $tsrun.
pipeline_up() {
	export LD_LIBRARY_PATH=$ROOT/build/carry/lib PATH=$ROOT/build/carry/bin:$PATH
	BUILD=$ROOT/build KEEP_WORK=${KEEP_WORK:-}
	. e2e/lib.sh
	start_nats
	start_analyzer --quiet
	# trainscope run also puts the Python shim on PYTHONPATH and sets NCCL_PROFILER_PLUGIN
	tsrun="$BIN/trainscope run --nats $NATS_URL --lib $LIB"
}

preload_env() { # the environment the webhook gives an annotated pod
	echo "LD_PRELOAD=$LIB PYTHONPATH=$ROOT/injector/preload/python NCCL_PROFILER_PLUGIN=$LIB" \
	     "TRAINSCOPE_RING_DIR=${RING_DIR:-/tmp/ts-ring}"
}

train() { # train <with|without> <tag> args...
	local how=$1 tag=$2
	shift 2
	mkdir -p "${RING_DIR:-/tmp/ts-ring}"
	if [ "$how" = with ]; then
		env $(preload_env) torchrun --standalone --nproc_per_node="$NGPU" e2e/gpu/train.py \
			--out "$OUT/$tag" "$@"
	else
		torchrun --standalone --nproc_per_node="$NGPU" e2e/gpu/train.py --out "$OUT/$tag" "$@"
	fi
}

versions() {
	{
		nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
		python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'
		nvcc --version | tail -1
		uname -r
	} | tee "$OUT/versions.txt"
}

# gpu_state: each GPU's temperature, power, clock and the time its clocks were held down
# since the driver loaded (thermal and power slowdown, in µs): a GPU that throttles is a
# real slow device, and a healthy recording made on it is not healthy.
gpu_state() {
	nvidia-smi --query-gpu=index,temperature.gpu,power.draw,clocks.sm,clocks_event_reasons.active \
		--format=csv,noheader
	nvidia-smi -q -d PERFORMANCE | awk '/^GPU /{g=$2} /Slowdown|Capping|Braking/ && $(NF-1) ~ /^[0-9]+$/ && $(NF-1) != 0 { sub(/^ +/, ""); print g ": " $0 }'
}

# gpus_cool: no GPU idles at 55 °C or more or has been slowed by heat for a second
# (gpu_state's lines): the test before a run whose healthy jobs must be healthy.
gpus_cool() {
	gpu_state | awk -F', ' 'NF == 5 && $2 + 0 >= 55 { bad = 1; print "GPU " $1 " idles at " $2 " C" }
		/Thermal Slowdown/ { n = $0; sub(/ us$/, "", n); sub(/.*: /, "", n)
			if (n + 0 > 1000000) { bad = 1; print "thermal slowdown " $0 } }
		END { exit bad }'
}

micro() {
	nvcc -O2 -cudart shared -o /tmp/lb_shared e2e/gpu/launchbench.cu -ldl &&
	nvcc -O2 -o /tmp/lb_static e2e/gpu/launchbench.cu -ldl || return 1
	for i in 1 2 3; do
		for b in shared static; do
			echo "$b without $(/tmp/lb_$b)"
			echo "$b with $(LD_PRELOAD=$LIB TRAINSCOPE_RING_DIR=/tmp/ts-ring /tmp/lb_$b)"
			echo "$b timed $(LD_PRELOAD=$LIB TRAINSCOPE_SAMPLE_N=1 TRAINSCOPE_SAMPLE_BUDGET=1 TRAINSCOPE_RING_DIR=/tmp/ts-ring /tmp/lb_$b)"
		done
	done | tee "$OUT/micro.txt"
}

# What a device timestamp costs, on the host and between kernels on a busy stream
# (e2e/gpu/evbubble.cu): kernels of 5, 20 and 100 us, a marker in every 1 and every 4 gaps;
# first each marker's host time (warm, cold) and the stamps against events
evbubble() {
	nvcc -O2 -o /tmp/evbubble e2e/gpu/evbubble.cu -lcuda || return 1
	local us every
	{
		# a side stream's wait that no write meets would hang the call: bounded
		timeout 120 /tmp/evbubble host 20
		for us in 5 20 100; do
			for every in 1 4; do
				timeout 60 /tmp/evbubble 400 "$us" "$every" 15
			done
		done
	} | tee "$OUT/evbubble.txt"
}

# A stream that waits before each kernel (e2e/gpu/segbench.cu), in rounds: without the
# preload, with it, and with every segment timed (as before segment sampling): the host
# cost of a segment, side by side.
segbench() {
	nvcc -O2 -cudart shared -o /tmp/segbench e2e/gpu/segbench.cu -ldl || return 1
	mkdir -p /tmp/ts-ring
	for i in $(seq "${ROUNDS:-5}"); do
		echo "without $(/tmp/segbench)"
		echo "with $(LD_PRELOAD=$LIB TRAINSCOPE_RING_DIR=/tmp/ts-ring /tmp/segbench)"
		echo "every1 $(LD_PRELOAD=$LIB TRAINSCOPE_SEGMENT_EVERY=1 TRAINSCOPE_RING_DIR=/tmp/ts-ring /tmp/segbench)"
	done | tee "$OUT/segbench.txt"
}

smoke() {
	versions
	[ "${MICRO:-1}" = 1 ] && micro
	TRAINSCOPE_DEBUG_NAMES=1 train with coverage --steps 5 --warmup 5 --profile-steps 3 \
		--layers 4 >"$OUT/coverage.log" 2>&1
	grep -v trainscope-name "$OUT/coverage.log" | tail -5
	grep trainscope-name "$OUT/coverage.log" | sort | uniq -c | sort -rn >"$OUT/names.txt"
	rm -f "$OUT/coverage.log"
	train with fsdp --mode fsdp --steps 30 --warmup 5 --layers 4 2>&1 | tail -8
	ls -la /tmp/ts-ring | head
}

coverage() {
	versions
	for m in eager default reduce-overhead fsdp; do
		case $m in
		eager) args=() ;;
		fsdp) args=(--mode fsdp) ;;
		*) args=(--compile "$m") ;;
		esac
		train with "cov-$m" --steps 3 --warmup 8 --profile-steps 3 --layers 4 "${args[@]}" \
			>"$OUT/cov-$m.log" 2>&1 || tail -20 "$OUT/cov-$m.log"
		python3 e2e/gpu/coverage.py "$OUT/cov-$m" "$m"
	done | tee "$OUT/coverage.txt"
}

# Two ranks on one GPU: whether this NCCL allows it (the kinds of one GPU then still run
# the multi-rank parts).
share_probe() {
	cat >/tmp/share_probe.py <<'PY'
import torch, torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(0)
t = torch.ones(4, device="cuda")
dist.all_reduce(t)
print("shared GPU ok, sum", t[0].item(), flush=True)
PY
	timeout 120 torchrun --standalone --nproc_per_node=2 /tmp/share_probe.py 2>&1 | tail -4 |
		tee "$OUT/share-probe.txt"
}

# A launch-bound step (a small model: many short kernels), for the derived overhead:
# launches per step x the hook's ns per launch (make bench) / step time.
launchbound() {
	train with lb --layers 2 --dim 256 --heads 4 --seq 128 --batch 4 --steps 100 --warmup 10 \
		>"$OUT/lb.log" 2>&1 || tail -20 "$OUT/lb.log"
	python3 - "$OUT/lb.rank0.json" <<'PY' | tee "$OUT/launchbound.txt"
import json, sys
r = json.load(open(sys.argv[1]))
n = r["counters"]["launches"] / (r["steps"] + 10)
print("launch-bound step: %.0f launches/step, median step %.3f ms" % (n, 1e3 * r["median_step_s"]))
PY
}

graphcoll() {
	for plugin in with without; do
		if [ $plugin = with ]; then e=$(preload_env); else e=$(preload_env | sed 's/NCCL_PROFILER_PLUGIN=[^ ]*//'); fi
		echo "== NCCL profiler plugin: $plugin"
		env $e torchrun --standalone --nproc_per_node="$NGPU" e2e/gpu/graphcoll.py \
			--out "$OUT/graphcoll-$plugin" 2>&1 | grep -E '^\{|Error|error' | tail -8
	done | tee "$OUT/graphcoll.txt"
}

overhead() {
	local n=${ALTERNATIONS:-5} steps=${STEPS:-200}
	for i in $(seq 1 "$n"); do
		train without ab-$i-without --steps "$steps" --layers "${LAYERS:-8}" 2>&1 | tail -1
		rm -rf /tmp/ts-ring
		train with ab-$i-with --steps "$steps" --layers "${LAYERS:-8}" 2>&1 | tail -1
	done
	python3 e2e/gpu/ab.py "$OUT" | tee "$OUT/overhead.txt"
}

# The in-run A/B on real programs through the whole pipeline (trainscope run: preload,
# shim, relay, the NCCL profiler plugin; NATS and an analyzer here): recording paused in
# every other block of AB_STEPS steps (TRAINSCOPE_AB_STEPS), so that with and without share
# the processes, GPUs and warm caches; e2e/gpu/ab_inrun.py gives each program's overhead
# and its 95 % interval from rank 0's step times, the first AB_SKIP steps left out.
# AB_DROP: the steps left out at the head of each block (ab_inrun.py's default: 2 for
# blocks of 6 or more, else 1). AB_MULT: each program's steps times this. Only rank 0's
# results, packed into $OUT/ab[-TAG].tgz, and the summary $OUT/ab[-TAG].txt stay (a
# device call brings back at most 8 files).
abinrun() {
	# AB_ENV: more of the preload's variables for every job (TRAINSCOPE_POLL_MS=50...);
	# AB_ARGS: more of the programs' own arguments (--batch 12: a longer step);
	# AB_TAG names the run's folder and summary, so that runs of one call stay apart
	local n=${AB_STEPS:-20} m=${AB_MULT:-1} prog cmd tag=ab${AB_TAG:+-$AB_TAG}
	local stop=$((${AB_TIMEOUT:-200} - 45))
	versions
	pipeline_up
	mkdir -p "$OUT/$tag"
	for prog in ${AB_PROGS:-lb ddp comp hft lit}; do
		local tr=(torchrun --standalone --nproc_per_node="$NGPU")
		case $prog in
		# each stopped by itself short of the timeout, its step times written: a
		# slower host than planned lost a whole run's (session 34)
		lb) cmd=("${tr[@]}" e2e/gpu/train.py --layers 2 --dim 256 --heads 4 --seq 128
			--batch 4 --steps $((3000 * m)) --warmup 0 --max-seconds $stop) ;;
		ddp) cmd=("${tr[@]}" e2e/gpu/train.py --layers 6 --dim 1024 --seq 512
			--steps $((1200 * m)) --warmup 0 --max-seconds $stop) ;;
		comp) cmd=("${tr[@]}" e2e/gpu/train.py --compile reduce-overhead --layers 4
			--dim 1024 --seq 512 --steps $((1200 * m)) --warmup 0 --max-seconds $stop) ;;
		hft) cmd=("${tr[@]}" e2e/gpu/hf_train.py --steps $((600 * m))) ;;
		lit) cmd=(python3 e2e/gpu/lit_train.py --devices "$NGPU" --steps $((1200 * m))
			--max-seconds $stop) ;;
		*) echo "abinrun: no program $prog"; continue ;;
		esac
		# -k: a Lightning job stopped by SIGTERM hung in its teardown and held the
		# rest of a device call (its DataLoader workers killed under it)
		cmd+=(${AB_ARGS:-})
		echo "== $prog (AB_STEPS $n${AB_ENV:+, $AB_ENV}): ${cmd[*]}"
		# AB_NORELAY=1: the preload's environment alone, no relay draining its ring (the
		# ring fills and drops): what the process pays without the consumer beside it
		local via=($tsrun --job "ab-$prog" --)
		[ -z "${AB_NORELAY:-}" ] || { mkdir -p "${RING_DIR:-/tmp/ts-ring}" && via=(env $(preload_env)); }
		env ${AB_ENV:-} TRAINSCOPE_AB_STEPS=$n timeout -k 15 "${AB_TIMEOUT:-200}" \
			"${via[@]}" "${cmd[@]}" --out "$OUT/$tag/$prog" \
			>"$OUT/$tag/$prog.log" 2>&1 ||
			{ echo "$prog failed:"; tail -5 "$OUT/$tag/$prog.log"; }
		python3 e2e/gpu/ab_inrun.py ${AB_DROP:+--drop "$AB_DROP"} "$n" "${AB_SKIP:-100}" "$OUT/$tag/$prog.rank0.json"
		# the device time the analyzer got, per recorded step (segment sampling's check)
		"$BIN/trainscope" timeline --nats "$NATS_URL" --job "ab-$prog" --compact \
			--out "$WORK/$tag-$prog.trace.json" >/dev/null 2>&1 &&
			python3 e2e/gpu/compute_ms.py "$WORK/$tag-$prog.trace.json"
		python3 -c 'import json, sys; c = json.load(open(sys.argv[1])).get("counters") or {}
print("counters:", {k: v for k, v in c.items() if v})' "$OUT/$tag/$prog.rank0.json"
		tail -3 "$OUT/$tag/$prog.log"
		# the diagnostic library's own time per step (run.sh selftime): its last three
		# windows, each its recorded and paused lines and a line per stream
		grep -h "selftime:" "$OUT/$tag/$prog.log" |
			awk '/ recorded /{w++} {l[w] = l[w] $0 "\n"} END {for (i = w - 2; i <= w; i++) if (i > 0) printf "%s", l[i]}'
		rm -f "$OUT/$tag/$prog.log" "$OUT/$tag/$prog".rank[1-9]*.json
	done | tee "$OUT/$tag.txt"
	# one archive of the step times: a device call brings back at most 8 files
	tar -C "$OUT" -czf "$OUT/$tag.tgz" "$tag" && rm -rf "${OUT:?}/$tag"
}

# abpair: two in-run A/Bs at once, each on a GPU of its own (GPUs 0 and 1), each with its
# own NATS and analyzer: AB_PAIR="PROGS0 / PROGS1" (each one or more of abinrun's
# programs), AB_MULT0 and AB_MULT1 their step multipliers (default AB_MULT), AB_ARGS1 more
# arguments for the second only (the first takes AB_ARGS). The jobs share the host, which
# the in-run A/B's paired blocks cancel: one call, twice the step times.
abpair() {
	local pair=${AB_PAIR:-} tag=${AB_TAG:-pair} first second
	first=${pair%%/*} second=${pair#*/}
	[ "$first" != "$pair" ] && [ -n "${first// }" ] && [ -n "${second// }" ] ||
		{ echo "abpair: AB_PAIR=\"PROGS0 / PROGS1\" (e.g. \"lit / ddp\")" >&2; return 2; }
	# each in a subshell: a failing one exits there (its errors on stderr), and the
	# other is still waited for; stdout is each one's ab-TAG.txt, printed after
	(CUDA_VISIBLE_DEVICES=0 NGPU=1 AB_PROGS=$first AB_TAG=${tag}0 \
		AB_MULT=${AB_MULT0:-${AB_MULT:-1}} abinrun >/dev/null) &
	local p0=$!
	(CUDA_VISIBLE_DEVICES=1 NGPU=1 AB_PROGS=$second AB_TAG=${tag}1 \
		AB_MULT=${AB_MULT1:-${AB_MULT:-1}} AB_ARGS=${AB_ARGS1:-} abinrun >/dev/null)
	wait "$p0"
	cat "$OUT/ab-${tag}0.txt" "$OUT/ab-${tag}1.txt"
}

# selftime: the in-run A/B with the diagnostic library (injector/preload/selftime.h), which
# prints its own host time per recorded and per paused step, by hook. SELFTIME_BUILD: the
# build folder it is in (build/selftime; another, such as an earlier commit's, to compare)
selftime() {
	local b=${SELFTIME_BUILD:-build/selftime} st
	case $b in /*) ;; *) b=$ROOT/$b ;; esac
	st=$b/lib/libtrainscope.so
	[ -f "$st" ] || { echo "selftime: no $st (make BUILD=$b CFLAGS=-DTS_SELFTIME $st, carried)"; return 1; }
	LIB=$st AB_TAG=selftime${AB_TAG:+-$AB_TAG} "${1:-abinrun}"
}

case "${1:-smoke}" in
smoke) smoke ;;
abinrun) abinrun ;;
abpair) abpair ;;
selftime) selftime ;;
selfpair) selftime abpair ;;
# build/test/double (the test doubles and hookdrive) carried; pinned to the last CPU
hookcost) CPU=$(($(nproc) - 1)) PAUSED=1 BASELINE_LIB=${HOOKCOST_BASELINE:-} \
	bash bench/bench_launch.sh | tee "$OUT/hookcost.txt" ;;
overhead) overhead ;;
detect) source e2e/gpu/detect.sh; detect ;;
frameworks) source e2e/gpu/frameworks.sh; frameworks ;;
hostbound) source e2e/gpu/frameworks.sh; source e2e/gpu/hostbound.sh; hostbound ;;
record) source e2e/gpu/record.sh; record ;;
coverage) coverage; share_probe ;;
launchbound) launchbound ;;
segbench) segbench ;;
evbubble) evbubble ;;
graphcoll) graphcoll ;;
*) echo "usage: $0 smoke|overhead|abinrun|abpair|selftime|selfpair|hookcost|detect|frameworks|hostbound|record|coverage|launchbound|segbench|evbubble|graphcoll" >&2; exit 2 ;;
esac
