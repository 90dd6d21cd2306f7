// SPDX-License-Identifier: Apache-2.0
/* A diagnostic build's account of the library's own host time (issue 45): compiled in
 * only with -DTS_SELFTIME (`make BUILD=build/selftime CFLAGS=-DTS_SELFTIME
 * build/selftime/lib/libtrainscope.so`, then `e2e/gpu/run.sh selftime`), never
 * in a shipped library, whose hooks it would slow by a few clock reads each. Each
 * category sums the ticks spent in the library's part of a call (the real function's
 * time left out), apart for steps recorded and steps the in-run A/B paused, and the
 * library prints the sums per step to stderr every TS_ST_EVERY steps. */
#ifndef TS_SELFTIME_H
#define TS_SELFTIME_H

#include "lib.h"

enum ts_st_cat {
	TS_ST_LAUNCH, /* a launch hook's enter and leave (segments and samples included) */
	TS_ST_GEMM,   /* a cuBLAS hook's own part (its sample's event pair included) */
	TS_ST_EVENTS, /* of those: opening and ending timed spans (event records) */
	TS_ST_PROF,   /* NCCL's profiler plugin callbacks */
	TS_ST_STEP,   /* step begin and end (segments closed, counters emitted) */
	TS_ST_REGION, /* region begin and end (the dataloader's, GC's) */
	TS_ST_POLL,   /* the poller's work per wake-up, on its own thread */
	TS_ST_N
};

#ifdef TS_SELFTIME
#define TS_ST_EVERY 500
struct ts_selftime {
	_Atomic uint64_t ticks[2][TS_ST_N], calls[2][TS_ST_N], steps[2];
};
extern struct ts_selftime ts_selftime TS_HIDDEN;

#define TS_ST_BEGIN(v) uint64_t v = ts_ticks()
/* Adds the ticks since v to cat, under the state (recorded or paused) now in force. */
#define TS_ST_END(cat, v) ts_st_add(cat, ts_ticks() - (v))
static inline void ts_st_add(enum ts_st_cat cat, uint64_t ticks)
{
	int p = atomic_load_explicit(&ts_lib.paused, memory_order_relaxed) != 0;

	atomic_fetch_add_explicit(&ts_selftime.ticks[p][cat], ticks, memory_order_relaxed);
	atomic_fetch_add_explicit(&ts_selftime.calls[p][cat], 1, memory_order_relaxed);
}
/* Called as a step begins: counts it under its state, prints every TS_ST_EVERY steps. */
TS_HIDDEN void ts_st_step(uint64_t step);
/* Each stream's segments per step over the last steps steps, by how they were timed
 * (gpu.c); the counts start again. */
TS_HIDDEN void ts_gpu_st_print(uint64_t steps);
#else
#define TS_ST_BEGIN(v) uint64_t v __attribute__((unused)) = 0
#define TS_ST_END(cat, v) ((void)0)
static inline void ts_st_step(uint64_t step) { (void)step; }
#endif

#endif
