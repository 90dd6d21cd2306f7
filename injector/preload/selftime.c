// SPDX-License-Identifier: Apache-2.0
/* The diagnostic build's report of the library's own host time (selftime.h). */
#include "selftime.h"

#ifdef TS_SELFTIME
#include <stdio.h>

struct ts_selftime ts_selftime;

static const char *const cat_name[TS_ST_N] = { "launch", "gemm", "events", "prof",
					       "step", "region", "poll" };

/* Per state: ns per step of each category over the steps since the last print, and the
 * calls per step; then the sums start again. */
static void print_window(uint64_t step)
{
	static const char *const state[2] = { "recorded", "paused" };
	double tick = ts_ns_per_tick();
	uint64_t recorded = atomic_load(&ts_selftime.steps[0]);

	for (int p = 0; p < 2; p++) {
		uint64_t n = atomic_exchange(&ts_selftime.steps[p], 0);
		char line[512];
		int len = snprintf(line, sizeof(line), "trainscope selftime: step %llu %s %llu steps:",
				   (unsigned long long)step, state[p], (unsigned long long)n);
		for (int c = 0; c < TS_ST_N && len > 0 && (size_t)len < sizeof(line); c++) {
			uint64_t t = atomic_exchange(&ts_selftime.ticks[p][c], 0);
			uint64_t k = atomic_exchange(&ts_selftime.calls[p][c], 0);
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %.1f us/%.1f",
					cat_name[c], n ? (double)t * tick / 1e3 / (double)n : 0.0,
					n ? (double)k / (double)n : 0.0);
		}
		fprintf(stderr, "%s\n", line);
	}
	ts_gpu_st_print(recorded); /* a paused step opens no segment */
}

void ts_st_step(uint64_t step)
{
	int p = atomic_load_explicit(&ts_lib.paused, memory_order_relaxed) != 0;

	atomic_fetch_add_explicit(&ts_selftime.steps[p], 1, memory_order_relaxed);
	if (step && step % TS_ST_EVERY == 0)
		print_window(step);
}
#else
typedef int ts_selftime_off; /* an empty unit is not ISO C */
#endif
