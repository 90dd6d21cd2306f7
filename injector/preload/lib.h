// SPDX-License-Identifier: Apache-2.0
/* Internal state of libtrainscope.so shared by the API and the device backends.
 *
 * The library has one instance per process by nature (it is preloaded), so its state
 * is the single struct ts_lib. Everything reachable from a hook is lock-free: records go
 * to the ring, counters are relaxed atomics, and work that may block (event queries,
 * hang dumps) runs on the library's own poller thread. */
#ifndef TS_LIB_H
#define TS_LIB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "ring.h"
#include "tsclock.h" /* ts_mono_ns: common/, header-only, the library's too */

#define TS_HIDDEN __attribute__((visibility("hidden")))
#define TS_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The hooks' counters. Each thread adds to a slot of its own with a plain load and store,
 * no locked add on a launch: a runtime launch hook's cost fell from 26 to 19 ns in `make
 * bench` (issue 45). A total is the sum of the slots; a step's share is the change of the
 * total since the step before ended. A slot only grows, so a thread that exits hands its
 * slot to the next one; past TS_CNT_SLOTS live threads, the rest share the last slot,
 * with locked adds. */
enum ts_cnt {
	TS_CNT_LAUNCHES, /* kernels launched (every path, outermost only) */
	TS_CNT_API,      /* hooked CUDA/cuBLAS/NCCL calls */
	TS_CNT_TICKS,    /* ts_ticks() spent inside hooked launch/API calls */
	TS_CNT_SYNC_NS,  /* waiting in stream/context/event synchronize */
	TS_CNT_GEMMS,
	TS_CNT_COLLS,
	TS_CNT_N
};
#define TS_CNT_SLOTS 64 /* at most 64: ts_lib.cnt_free holds a bit for each */
struct ts_cnt_slot {
	_Atomic uint64_t v[TS_CNT_N];
} __attribute__((aligned(64)));

struct ts_lib {
	_Atomic int state;
	struct ts_ring *ring;
	int lock_fd;
	char ring_path[4096];
	_Atomic uint64_t orphan_drops; /* records with no ring to go to */
	_Atomic uint64_t step;         /* the step now running: records are tagged with it */
	struct ts_cnt_slot cnt[TS_CNT_SLOTS + 1]; /* the last: shared, past the others */
	_Atomic uint32_t cnt_used;                /* slots handed to threads */
	_Atomic uint64_t cnt_free;                /* slots their threads gave back, a bit each */
	_Atomic uint64_t cnt_seen[TS_CNT_N];      /* the totals at the last step's end */
	_Atomic uint64_t mem_live, mem_peak, alloc_failures;
	_Atomic int dump_signal;       /* the shim's faulthandler signal, 0 = none */
	/* the rank the program established, kept across fork for the children's rings */
	_Atomic int learning;
	int32_t late_rank, late_world, late_local;
	int late_how;
	/* the in-run A/B (TRAINSCOPE_AB_STEPS): recording paused in every other block of
	 * ab_steps steps, the hooks staying in place; paused: the block now running is one */
	uint64_t ab_steps;
	/* paused, captures and tick_every, read by every launch, share one aligned 16 bytes
	 * (so one cache line: a launch's lines are misses in a real program, 20-30 ns each) */
	_Alignas(16) _Atomic int paused;
	/* streams being captured now (begin minus end, graph.c); launches check the
	 * stream only while it is not zero */
	_Atomic int captures;
	/* a kernel launch's host time is clocked one launch in this many (TS_TICK_EVERY once
	 * the last step made TS_TICK_MANY launches; 0 or 1: every launch) */
	_Atomic uint32_t tick_every;
};

extern struct ts_lib ts_lib TS_HIDDEN;

/* A cheap cycle-ish counter for the time spent inside hooks; ts_ns_per_tick() converts.
 * aarch64: the virtual counter, readable from user space (as the vDSO reads it). */
static inline uint64_t ts_ticks(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return ts_mono_ns();
#endif
}

TS_HIDDEN struct ts_ring *ts_lib_init(void);

/* Recording is paused for the in-run A/B: the hooks call through and note nothing. */
static inline bool ts_paused(void)
{
	return unlikely(atomic_load_explicit(&ts_lib.paused, memory_order_relaxed));
}
TS_HIDDEN double ts_ns_per_tick(void);

static inline struct ts_ring *ts_lib_ring(void)
{
	int st = atomic_load_explicit(&ts_lib.state, memory_order_acquire);

	if (likely(st == 2 /* LIB_READY */))
		return ts_lib.ring;
	return st == 0 ? ts_lib_init() : NULL;
}

static inline void ts_emit(const struct ts_rec *rec)
{
	struct ts_ring *r = ts_lib_ring();

	if (likely(r != NULL))
		ts_ring_push(r, rec);
	else
		atomic_fetch_add_explicit(&ts_lib.orphan_drops, 1, memory_order_relaxed);
}

static inline void ts_ctr_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Per-thread hook state: only the outermost call counts or times anything. Every launch
 * reads it, the counter slot's pointer with it. Not over-aligned: the library's
 * initial-exec TLS must fit the static TLS surplus when it is dlopen'ed (as NCCL's
 * profiler plugin; aligned(64), glibc on aarch64 refused it). */
struct ts_tls {
	int depth;       /* inside a hooked launch (the runtime's launch calls the driver's) */
	int lib_depth;   /* inside a cuBLAS, NCCL or HCCL call: its launches count, untimed */
	int coll_depth;  /* inside an NCCL or HCCL call: its launches go to a communication stream */
	int group_depth; /* inside ncclGroupStart/End */
	/* 1-in-N sampling (gpu.c): launches and GEMMs since the last sample, and the N each
	 * counts to (the process's adaptive N, read again when a count reaches it) */
	uint32_t kernel_tick, gemm_tick, kernel_n, gemm_n;
	uint32_t tick_rng;   /* xorshift state: which launches' host time is clocked */
	uint32_t tick_mul;   /* the launch now in its hook: its clocked time counts this often */
	unsigned gpu_seen;   /* bit per backend whose ready state this thread has seen */
	struct ts_cnt_slot *cnt; /* the thread's counters (ts_count), NULL until claimed */
};
extern __thread struct ts_tls ts_tls TS_HIDDEN __attribute__((tls_model("initial-exec")));
/* Cold path, once per thread: hands it a slot (or the shared one). Never NULL. */
TS_HIDDEN struct ts_cnt_slot *ts_cnt_claim(void);

/* A kernel's launch has its host time clocked one launch in TS_TICK_EVERY, at random,
 * and counted TS_TICK_EVERY times, once a step makes TS_TICK_MANY launches or more: the
 * two clock reads were some 40 ns of a recorded launch's 100 over a paused one on an H200
 * host (issue 45), and a step's hundreds of launches keep the sum's error to a few per
 * cent. A job with fewer, and a graph's replay or a host function (a CUDA-graph job makes
 * a few a step), are clocked each time. TS_TICK_EVERY is a power of two. */
#define TS_TICK_EVERY 8u
#define TS_TICK_MANY 256u

/* Whether the calling thread clocks this launch (xorshift32's top bits). */
static inline bool ts_tick_sampled(void)
{
	uint32_t x = ts_tls.tick_rng;

	if (unlikely(!x)) /* a thread's first launch: seeded from its TLS block's address */
		x = (uint32_t)((uintptr_t)&ts_tls >> 4) | 1u;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	ts_tls.tick_rng = x;
	return x < UINT32_MAX / TS_TICK_EVERY;
}

/* Adds v to counter c, in the calling thread's slot. */
static inline void ts_count(enum ts_cnt c, uint64_t v)
{
	struct ts_cnt_slot *s = ts_tls.cnt;

	if (unlikely(!s))
		s = ts_cnt_claim();
	if (likely(s != &ts_lib.cnt[TS_CNT_SLOTS]))
		atomic_store_explicit(&s->v[c],
				      atomic_load_explicit(&s->v[c], memory_order_relaxed) + v,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&s->v[c], v, memory_order_relaxed);
}

/* Counter c over the process's life so far (what the threads have stored yet). */
TS_HIDDEN uint64_t ts_count_total(enum ts_cnt c);
/* What c counted since the previous call: the step's share, taken at its end. */
TS_HIDDEN uint64_t ts_count_take(enum ts_cnt c);

/* The rank and world size the program established, told by how (enum ts_ident_how): a
 * communicator's only while the process has no rank and only when it spans the known
 * world (or the first one, when no launcher said a world). Cold path. Returns 0, or
 * -EINVAL, -EBUSY (another thread is telling one), -ENODEV (no ring: remembered for a
 * ring made later). */
TS_HIDDEN int ts_lib_learn_rank(int32_t rank, int32_t world, int32_t local_rank, int how);

/* Step boundaries as the device backends see them (gpu.c). */
TS_HIDDEN void ts_gpu_step_end(uint64_t step);
/* Emits the per-step counter records: what the counters took since the last (api.c). */
TS_HIDDEN void ts_emit_step_counters(void);

#endif
