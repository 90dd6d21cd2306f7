# SPDX-License-Identifier: Apache-2.0
# Sourced by run.sh (run.sh hookcost): what a hooked launch and a cuBLAS GEMM cost on this
# machine's CPU, recorded and paused (the in-run A/B's two sides), for one or more builds
# of the library side by side: the test doubles' hookdrive (make bench's hook part) with
# each library, processes alternating, HOOKCOST_ROUNDS of each. The "cold" rows read
# EVICT_KB of memory before each call, as a training program's Python between two
# launches leaves the hook's cache lines evicted. No GPU is used.
# HOOKCOST_LIBS: the libraries (default: build/lib's; e.g. "build/carry/old/libtrainscope.so
# build/lib/libtrainscope.so" to compare a change with the commit before it).
# Needs build/test/double (the test doubles and hookdrive) carried.
hookcost() {
	local drive=$ROOT/build/test/double/hookdrive w lib p r k
	local libs=${HOOKCOST_LIBS:-build/lib/libtrainscope.so} cpu=$(($(nproc) - 1))
	[ -x "$drive" ] || { echo "hookcost: no $drive (carry build/test/double)"; return 1; }
	w=$(mktemp -d)
	for r in $(seq "${HOOKCOST_ROUNDS:-7}"); do
		for lib in $libs; do
			for p in 0 1; do
				mkdir -p "$w/ring"
				# the test doubles, not the machine's CUDA (its LD_LIBRARY_PATH comes
				# before hookdrive's run path)
				LD_LIBRARY_PATH=$ROOT/build/test/double \
				HOOKDRIVE_EVICT_KB=${EVICT_KB:-4096} HOOKDRIVE_PAUSED=$p \
					TRAINSCOPE_AB_STEPS=1 LD_PRELOAD=$ROOT/$lib \
					TRAINSCOPE_RING_DIR=$w/ring TRAINSCOPE_SAMPLE_N=1000000 \
					taskset -c "$cpu" "$drive" cost >"$w/one" ||
					{ echo "hookcost: hookdrive failed with $lib"; rm -rf "$w"; return 1; }
				sed "s|^|$lib:$p |" "$w/one" >>"$w/out"
				rm -rf "$w/ring"
			done
		done
	done
	printf '| %-44s | %-28s | %9s | %9s | %9s |\n' library call recorded paused added
	for lib in $libs; do
		for k in cold_runtime_launch cold_cublas_gemm runtime_launch cublas_gemm; do
			local v=()
			for p in 0 1; do
				v+=("$(awk -v s="$lib:$p" -v k="cost.$k" '$1 == s && $2 == k { print $3 }' \
					"$w/out" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')")
			done
			printf '| %-44s | %-28s | %6.1f ns | %6.1f ns | %6.1f ns |\n' "$lib" "$k" \
				"${v[0]}" "${v[1]}" "$(awk -v a="${v[0]}" -v b="${v[1]}" 'BEGIN { print a - b }')"
		done
	done | tee "$OUT/hookcost.txt"
	echo "(medians of ${HOOKCOST_ROUNDS:-7} processes each; $(nproc) CPUs: $(lscpu | sed -n 's/^Model name: *//p'))" |
		tee -a "$OUT/hookcost.txt"
	rm -rf "$w"
}
