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
set -e
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-7}
# the "cold" rows: this much memory read before each call, as a training program's own
# work between two launches leaves the hook's cache lines evicted
EVICT_KB=${EVICT_KB:-4096}
export HOOKDRIVE_EVICT_KB=$EVICT_KB
drive=$BUILD/test/double/hookdrive
lib=$PWD/$BUILD/lib/libtrainscope.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for r in $(seq "$ROUNDS"); do
	"$drive" cost >>"$work/without" || exit 1
	mkdir -p "$work/ring$r"
	LD_PRELOAD=$lib TRAINSCOPE_RING_DIR=$work/ring$r TRAINSCOPE_SAMPLE_N=1000000 \
		"$drive" cost >>"$work/with" || exit 1
	[ -z "${BASELINE_LIB:-}" ] || LD_PRELOAD=$BASELINE_LIB TRAINSCOPE_RING_DIR=$work/ring$r \
		TRAINSCOPE_SAMPLE_N=1000000 "$drive" cost >>"$work/before" || exit 1
done
median() { # FILE KEY
	awk -v k="cost.$2" '$1 == k { print $2 }' "$1" | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
before_hdr() { [ -z "${BASELINE_LIB:-}" ] || printf "$1" "$2"; }
printf '\n| %-44s | %9s | %9s | %9s | %-30s |' "hooked call (test doubles, CPU)" "without" \
	"with" "added" "budget (design.md)"
before_hdr ' %9s |' "before"
echo
echo -n "|----------------------------------------------|-----------|-----------|-----------|--------------------------------|"
before_hdr '%s' "-----------|"
echo
over=0
row() { # KEY WHAT BUDGET_NS
	local a b d verdict
	a=$(median "$work/without" "$1"); b=$(median "$work/with" "$1")
	d=$(echo "$b - $a" | bc)
	verdict="<= $3 ns"
	if [ "$(echo "$d > $3" | bc)" = 1 ]; then
		verdict="<= $3 ns: OVER by $(echo "$d - $3" | bc) ns"; over=1
	fi
	printf '| %-44s | %6.1f ns | %6.1f ns | %6.1f ns | %-30s |' "$2" "$a" "$b" "$d" "$verdict"
	[ -z "${BASELINE_LIB:-}" ] || printf ' %6.1f ns |' "$(median "$work/before" "$1")"
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
echo "(medians of $ROUNDS processes each way, alternating${BASELINE_LIB:+; before: $BASELINE_LIB})"
exit 0
