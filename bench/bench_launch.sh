#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make bench, hook part: what the preload adds to each hooked call, measured against the
# test doubles of the CUDA driver, runtime, cuBLAS and NCCL on the CPU (no GPU here; the
# doubles do the same bookkeeping with and without the preload, so the difference is
# the hook). Processes with and without the preload alternate, ROUNDS of each; each
# prints its median over 7 rounds of many calls; the table shows the medians over
# processes side by side. Launches run untimed (TRAINSCOPE_SAMPLE_N=1000000): sampled
# kernels add an event pair, as a timed NCCL call does. The "caches cold" rows read
# EVICT_KB of memory before each call and time the call alone.
#
# BASELINE_LIB=path/to/an/older/libtrainscope.so adds its processes to the same rounds
# and a column "before" (a change's cost, side by side in one run).
# PAUSED=1 adds processes with recording paused (the in-run A/B's other side: the hooks
# in place, noting nothing) for each library, and the columns "paused" and "rec - paused"
# (what the in-run A/B measures of a call). e2e/gpu/run.sh hookcost runs this on a GPU
# host's CPU. CPU=N pins every process to CPU N.
set -e
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-7}
# the "cold" rows: this much memory read before each call, as a training program's own
# work between two launches leaves the hook's cache lines evicted
EVICT_KB=${EVICT_KB:-4096}
export HOOKDRIVE_EVICT_KB=$EVICT_KB
# the test doubles, not a machine's own CUDA (LD_LIBRARY_PATH comes before hookdrive's
# run path)
export LD_LIBRARY_PATH=$PWD/$BUILD/test/double${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
drive=$BUILD/test/double/hookdrive
lib=$PWD/$BUILD/lib/libtrainscope.so
pin=()
[ -z "${CPU:-}" ] || pin=(taskset -c "$CPU")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# side NAME [LIB [PAUSED [SCENARIO]]]: one process's medians appended to NAME's file (no
# LIB: the doubles alone; PAUSED=1: recording paused in the step the calls run in)
side() {
	if [ -z "${2:-}" ]; then
		"${pin[@]}" "$drive" cost >>"$work/$1"
		return
	fi
	mkdir -p "$work/ring"
	env ${3:+HOOKDRIVE_PAUSED=1 TRAINSCOPE_AB_STEPS=1} LD_PRELOAD="$2" \
		TRAINSCOPE_RING_DIR="$work/ring" TRAINSCOPE_SAMPLE_N=1000000 \
		"${pin[@]}" "$drive" "${4:-cost}" >>"$work/$1"
	rm -rf "$work/ring"
}
for r in $(seq "$ROUNDS"); do
	side without
	side with "$lib"
	[ -z "${BASELINE_LIB:-}" ] || side before "$BASELINE_LIB"
	[ -z "${PAUSED:-}" ] || side paused "$lib" 1
	[ -z "${PAUSED:-}" ] || [ -z "${BASELINE_LIB:-}" ] || side before_paused "$BASELINE_LIB" 1
	# the poller's own thread over one second with nothing in flight (hookdrive idle)
	side idle "$lib" 1 idle
	[ -z "${BASELINE_LIB:-}" ] || side idle_before "$BASELINE_LIB" 1 idle
done
median() { # SIDE KEY
	awk -v k="cost.$2" '$1 == k { print $2 }' "$work/$1" | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
# the columns past the budget's, as the sides that ran
extra=()
[ -z "${BASELINE_LIB:-}" ] || extra+=(before)
[ -z "${PAUSED:-}" ] || extra+=(paused "rec - paused")
[ -z "${PAUSED:-}" ] || [ -z "${BASELINE_LIB:-}" ] || extra+=("before paused" "before rec - paused")
printf '\n| %-44s | %9s | %9s | %9s | %-30s |' "hooked call (test doubles, CPU)" "without" \
	"with" "added" "budget (design.md)"
for c in "${extra[@]}"; do printf ' %19s |' "$c"; done
echo
echo -n "|----------------------------------------------|-----------|-----------|-----------|--------------------------------|"
for c in "${extra[@]}"; do printf '%s' "---------------------|"; done
echo
over=0
row() { # KEY WHAT BUDGET_NS
	local a b d verdict
	a=$(median without "$1"); b=$(median with "$1")
	d=$(echo "$b - $a" | bc)
	verdict="<= $3 ns"
	if [ "$(echo "$d > $3" | bc)" = 1 ]; then
		verdict="<= $3 ns: OVER by $(echo "$d - $3" | bc) ns"; over=1
	fi
	printf '| %-44s | %6.1f ns | %6.1f ns | %6.1f ns | %-30s |' "$2" "$a" "$b" "$d" "$verdict"
	[ -z "${BASELINE_LIB:-}" ] || printf ' %16.1f ns |' "$(median before "$1")"
	if [ -n "${PAUSED:-}" ]; then
		local p
		p=$(median paused "$1")
		printf ' %16.1f ns | %16.1f ns |' "$p" "$(echo "$b - $p" | bc)"
		if [ -n "${BASELINE_LIB:-}" ]; then
			p=$(median before_paused "$1")
			printf ' %16.1f ns | %16.1f ns |' "$p" "$(echo "$(median before "$1") - $p" | bc)"
		fi
	fi
	echo
}
row runtime_launch "kernel launch, runtime (__cudaLaunchKernel)" 50
row dlsym_launch "kernel launch, driver (dlsym'd)" 50
row getproc_launch "kernel launch, driver (cuGetProcAddress)" 50
row graph_launch "CUDA graph launch (7 kernels)" 50
row wait_launch "stream wait + launch (a small segment)" 100
row cublas_gemm "cuBLAS GEMM + its launch (2 calls)" 100
row nccl_allreduce "NCCL all-reduce (timed: event pair)" 1000
if [ "$EVICT_KB" -gt 0 ]; then
	row cold_runtime_launch "kernel launch, runtime, caches cold" 100
	row cold_cublas_gemm "cuBLAS GEMM + its launch, caches cold" 150
fi
idle_before=""
[ -z "${BASELINE_LIB:-}" ] ||
	idle_before=$(printf ' (before: %.0f us)' "$(median idle_before idle_poller_us_per_s)")
printf 'the poller with nothing in flight: %.0f us of its thread a second, its wake-ups every 5 ms included%s\n' \
	"$(median idle idle_poller_us_per_s)" "$idle_before"
echo "(medians of $ROUNDS processes each way, alternating${BASELINE_LIB:+; before: $BASELINE_LIB}${CPU:+; on CPU $CPU}; $(nproc) CPUs: $(lscpu | sed -n 's/^Model name: *//p'))"
exit 0
