// SPDX-License-Identifier: Apache-2.0
/* libtrainscope.so: the public API of trainscope.h writing into this process's ring.
 *
 * The ring is made on the first call, not in a constructor, so that launchers and
 * helper processes that never record leave no ring. After fork() the child makes its
 * own ring on its first call. */
#include "gpu.h"
#include "lib.h"
#include "numparse.h"
#include "selftime.h"
#include "trainscope.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum lib_state { LIB_UNINIT, LIB_INITIALIZING, LIB_READY, LIB_DISABLED };

struct ts_lib ts_lib;

/* Begin timestamps per thread; initial-exec TLS is a plain %fs-relative load. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint64_t region_t0[TRAINSCOPE_REGION_MAX];
	uint64_t coll_t0[TRAINSCOPE_COLL_MAX];
	uint64_t coll_bytes[TRAINSCOPE_COLL_MAX];
} tls;

static uint32_t ring_slots(void)
{
	long n;
	uint32_t cap = 2;

	/* a whole number or the default: "64k" is not 64 */
	if (ts_parse_int(getenv("TRAINSCOPE_RING_SLOTS"), 64, 1l << 24, &n))
		n = 16384;
	while (cap < n)
		cap <<= 1;
	return cap;
}

/* TRAINSCOPE_AB_STEPS: the in-run A/B's block of steps (0, unset or bad: off). Recording
 * pauses in blocks 1, 3, 5, ... (steps N..2N-1, 3N..4N-1, ...): the program's own step
 * times, with and without, from the same processes, GPUs and warm caches
 * (e2e/gpu/ab_inrun.py). Not for production: a paused block's steps reach the analyzer
 * with no device time. */
static uint64_t ab_steps(void)
{
	long n;

	return ts_parse_int(getenv("TRAINSCOPE_AB_STEPS"), 1, 1l << 30, &n) ? 0 : (uint64_t)n;
}

/* Cold path, once per process: create the ring in $TRAINSCOPE_RING_DIR. */
__attribute__((noinline, cold)) struct ts_ring *ts_lib_init(void)
{
	int expect = LIB_UNINIT;
	const char *dir = getenv("TRAINSCOPE_RING_DIR");
	struct ts_ident id;

	if (!atomic_compare_exchange_strong(&ts_lib.state, &expect, LIB_INITIALIZING))
		return NULL; /* another thread is on it, or it is disabled */
	if (!dir || !*dir) {
		atomic_store(&ts_lib.state, LIB_DISABLED);
		return NULL;
	}
	ts_ident_from_env(&id);
	ts_lib.ab_steps = ab_steps();
	if (ts_lib.late_how) /* a fork's child of a process that learned its rank late */
		ts_ident_set_rank(&id, ts_lib.late_rank, ts_lib.late_world, ts_lib.late_local);
	if (ts_ring_create(dir, ring_slots(), &id, &ts_lib.ring, &ts_lib.lock_fd, ts_lib.ring_path,
			   sizeof(ts_lib.ring_path))) {
		atomic_store(&ts_lib.state, LIB_DISABLED);
		return NULL;
	}
	atomic_store_explicit(&ts_lib.state, LIB_READY, memory_order_release);
	return ts_lib.ring;
}

/* Whether how may tell a ring that says id: the program always; a communicator only a
 * process with no rank, and only one of the whole world. */
static bool may_learn(const struct ts_ident *id, int32_t world, int how)
{
	if (how == TS_IDENT_PROGRAM)
		return true;
	return id->rank < 0 && (!id->world_known || world == id->world_size);
}

int ts_lib_learn_rank(int32_t rank, int32_t world, int32_t local_rank, int how)
{
	int expect = 0, rc = -ENODEV;
	bool take = how == TS_IDENT_PROGRAM || !ts_lib.late_how;
	struct ts_ring *r;

	if (rank < 0 || world <= rank)
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&ts_lib.learning, &expect, 1))
		return -EBUSY;
	if ((r = ts_lib_ring())) {
		rc = 0;
		take = take && may_learn(&r->id, world, how);
		if (take && ts_ident_set_rank(&r->id, rank, world, local_rank) > 0) {
			struct ts_rec rec = { .type = TS_REC_IDENT, .kind = (uint16_t)how,
					      .t_ns = ts_mono_ns(),
					      .ident = { .rank = (uint64_t)rank,
							 .world = (uint64_t)world,
							 .local_rank = r->id.local_rank,
							 .device = r->id.dev_index } };
			ts_ring_push(r, &rec); /* after the header: the relay reads it then */
		}
	}
	if (take) { /* what a fork's child will take too (a communicator's only when it told) */
		ts_lib.late_rank = rank, ts_lib.late_world = world, ts_lib.late_local = local_rank;
		ts_lib.late_how = how;
	}
	atomic_store(&ts_lib.learning, 0);
	return rc;
}

TRAINSCOPE_API int trainscope_set_rank(int32_t rank, int32_t world_size, int32_t local_rank)
{
	return ts_lib_learn_rank(rank, world_size, local_rank, TS_IDENT_PROGRAM);
}

TRAINSCOPE_API void trainscope_step_begin(uint64_t step)
{
	TS_ST_BEGIN(st);
	struct ts_rec rec = { .type = TS_REC_STEP_BEGIN, .t_ns = ts_mono_ns(), .mark.step = step };

	atomic_store_explicit(&ts_lib.step, step, memory_order_relaxed);
	ts_emit(&rec);
	if (unlikely(ts_lib.ab_steps))
		atomic_store_explicit(&ts_lib.paused, (int)((step / ts_lib.ab_steps) & 1),
				      memory_order_relaxed);
	TS_ST_END(TS_ST_STEP, st);
	ts_st_step(step);
}

_Static_assert(TS_CNT_SLOTS <= 64, "ts_lib.cnt_free has a bit for each slot");

static pthread_key_t cnt_key;
static bool cnt_key_ok;
static pthread_once_t cnt_once = PTHREAD_ONCE_INIT;

/* At a thread's exit: its slot goes back for the next thread. Anything the thread still
 * counts after this (another destructor's CUDA call) goes to the shared slot. */
static void cnt_release(void *v)
{
	uint32_t i = (uint32_t)(uintptr_t)v - 1;

	ts_tls.cnt = &ts_lib.cnt[TS_CNT_SLOTS];
	atomic_fetch_or(&ts_lib.cnt_free, 1ull << i);
}

static void cnt_key_make(void)
{
	cnt_key_ok = pthread_key_create(&cnt_key, cnt_release) == 0;
}

/* A slot given back, or -1. */
static int cnt_reuse(void)
{
	uint64_t f = atomic_load(&ts_lib.cnt_free);

	while (f) {
		int i = __builtin_ctzll(f);
		if (atomic_compare_exchange_weak(&ts_lib.cnt_free, &f, f & ~(1ull << i)))
			return i;
	}
	return -1;
}

struct ts_cnt_slot *ts_cnt_claim(void)
{
	int i = cnt_reuse();

	if (i < 0) {
		uint32_t n = atomic_load(&ts_lib.cnt_used);
		/* no increment past the slots: cnt_used bounds ts_count_total's sum */
		while (n < TS_CNT_SLOTS && !atomic_compare_exchange_weak(&ts_lib.cnt_used, &n, n + 1))
			;
		i = n < TS_CNT_SLOTS ? (int)n : -1;
	}
	if (i < 0)
		return ts_tls.cnt = &ts_lib.cnt[TS_CNT_SLOTS];
	pthread_once(&cnt_once, cnt_key_make);
	if (cnt_key_ok) /* else, or if this fails, the slot is the thread's for good */
		(void)pthread_setspecific(cnt_key, (void *)(uintptr_t)(i + 1));
	return ts_tls.cnt = &ts_lib.cnt[i];
}

uint64_t ts_count_total(enum ts_cnt c)
{
	uint32_t n = atomic_load(&ts_lib.cnt_used);
	uint64_t sum = atomic_load_explicit(&ts_lib.cnt[TS_CNT_SLOTS].v[c], memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		sum += atomic_load_explicit(&ts_lib.cnt[i].v[c], memory_order_relaxed);
	return sum;
}

uint64_t ts_count_take(enum ts_cnt c)
{
	uint64_t now = ts_count_total(c), prev = atomic_load(&ts_lib.cnt_seen[c]);

	do { /* two threads ending steps at once: each takes what it saw first, once */
		if (now <= prev)
			return 0;
	} while (!atomic_compare_exchange_weak(&ts_lib.cnt_seen[c], &prev, now));
	return now - prev;
}

void ts_emit_step_counters(void)
{
	uint64_t launches = ts_count_take(TS_CNT_LAUNCHES), calls = ts_count_take(TS_CNT_API);
	uint64_t fails = atomic_load_explicit(&ts_lib.alloc_failures, memory_order_relaxed);

	if (!launches && !calls)
		return; /* nothing device-side happened: a CPU-only program */
	atomic_store_explicit(&ts_lib.tick_every, launches >= TS_TICK_MANY ? TS_TICK_EVERY : 1,
			      memory_order_relaxed);
	uint64_t ticks = ts_count_take(TS_CNT_TICKS), sync_ns = ts_count_take(TS_CNT_SYNC_NS);
	struct ts_rec rec = {
		.type = TS_REC_STEP_CTR, .t_ns = ts_mono_ns(), .ctr.launches = launches,
		.ctr.call_ns = (uint64_t)((double)ticks * ts_ns_per_tick()),
		.ctr.sync_ns = sync_ns, .ctr.mem_live = atomic_load(&ts_lib.mem_live),
		.mem_peak = atomic_exchange(&ts_lib.mem_peak, atomic_load(&ts_lib.mem_live)),
		.alloc_failures = (uint16_t)(fails > 0xffff ? 0xffff : fails),
		.api_calls = (uint32_t)(calls > 0xffffffffu ? 0xffffffffu : calls),
	};
	ts_emit(&rec);
}

TRAINSCOPE_API void trainscope_step_end(uint64_t step)
{
	TS_ST_BEGIN(st);
	ts_emit_step_counters();
	struct ts_rec rec = { .type = TS_REC_STEP_END, .t_ns = ts_mono_ns(), .mark.step = step };
	ts_emit(&rec);
	ts_gpu_step_end(step);
	atomic_store_explicit(&ts_lib.step, step + 1, memory_order_relaxed);
	TS_ST_END(TS_ST_STEP, st);
}

TRAINSCOPE_API void trainscope_region_begin(enum trainscope_region region)
{
	TS_ST_BEGIN(st);
	if ((unsigned)region < TRAINSCOPE_REGION_MAX)
		tls.region_t0[region] = ts_mono_ns();
	TS_ST_END(TS_ST_REGION, st);
}

TRAINSCOPE_API void trainscope_region_end(enum trainscope_region region)
{
	TS_ST_BEGIN(st);
	uint64_t now = ts_mono_ns(), t0;

	if ((unsigned)region < TRAINSCOPE_REGION_MAX && (t0 = tls.region_t0[region])) {
		tls.region_t0[region] = 0;
		struct ts_rec rec = { .type = TS_REC_REGION, .kind = (uint16_t)region,
				      .t_ns = t0, .dur_ns = now - t0 };
		ts_emit(&rec);
	}
	TS_ST_END(TS_ST_REGION, st);
}

TRAINSCOPE_API void trainscope_compute_device_ns(uint64_t ns)
{
	struct ts_rec rec = { .type = TS_REC_DEVICE, .kind = TRAINSCOPE_REGION_COMPUTE,
			      .t_ns = ts_mono_ns(), .device.busy_ns = ns };

	ts_emit(&rec);
}

TRAINSCOPE_API void trainscope_collective_begin(enum trainscope_coll_op op, uint64_t bytes)
{
	if ((unsigned)op >= TRAINSCOPE_COLL_MAX)
		return;
	tls.coll_t0[op] = ts_mono_ns();
	tls.coll_bytes[op] = bytes;
}

TRAINSCOPE_API void trainscope_collective_end(enum trainscope_coll_op op)
{
	uint64_t now = ts_mono_ns(), t0;

	if ((unsigned)op >= TRAINSCOPE_COLL_MAX || !(t0 = tls.coll_t0[op]))
		return;
	tls.coll_t0[op] = 0;
	struct ts_rec rec = { .type = TS_REC_COLL, .kind = (uint16_t)op, .t_ns = t0,
			      .dur_ns = now - t0, .coll.bytes = tls.coll_bytes[op] };
	ts_emit(&rec);
}

/* The layouts the calls without a size write, frozen when the sized calls came: a
 * program built against an earlier header holds that much and no more. */
#define COUNTERS_V1_SIZE (2 * sizeof(uint64_t))
#define DEVICE_COUNTERS_V1_SIZE (20 * sizeof(uint64_t))
_Static_assert(offsetof(struct trainscope_counters, dropped) == 8 &&
		       sizeof(struct trainscope_counters) >= COUNTERS_V1_SIZE,
	       "trainscope_counters: fields are only appended (trainscope.h's ABI rule)");
_Static_assert(offsetof(struct trainscope_device_counters, sample_n) == 8 * 8 &&
		       offsetof(struct trainscope_device_counters, graph_colls_uncounted) == 19 * 8 &&
		       sizeof(struct trainscope_device_counters) >= DEVICE_COUNTERS_V1_SIZE,
	       "trainscope_device_counters: fields are only appended (trainscope.h's ABI rule)");

/* Copies the library's struct full (known bytes) into the caller's first size bytes,
 * zeroes what only the caller knows. The sized calls' contract (trainscope.h): returns
 * known, or -EINVAL for out NULL with a size. */
static int fill_sized(void *out, size_t size, const void *full, size_t known)
{
	if (!out)
		return size ? -EINVAL : (int)known;
	memcpy(out, full, size < known ? size : known);
	if (size > known)
		memset((char *)out + known, 0, size - known);
	return (int)known;
}

static int get_counters(struct trainscope_counters *out, size_t size)
{
	struct ts_ring *r = atomic_load(&ts_lib.state) == LIB_READY ? ts_lib.ring : NULL;
	struct trainscope_counters c = {
		.written = r ? atomic_load(&r->head) : 0,
		.dropped = atomic_load(&ts_lib.orphan_drops) + (r ? atomic_load(&r->dropped) : 0),
	};

	return fill_sized(out, size, &c, sizeof(c));
}

static int get_device_counters(struct trainscope_device_counters *out, size_t size)
{
	struct trainscope_device_counters c = {
		.launches = ts_count_total(TS_CNT_LAUNCHES),
		.api_calls = ts_count_total(TS_CNT_API),
		.mem_live = atomic_load(&ts_lib.mem_live),
		.alloc_failures = atomic_load(&ts_lib.alloc_failures),
		.gemms = ts_count_total(TS_CNT_GEMMS),
		.colls = ts_count_total(TS_CNT_COLLS),
	};

	ts_gpu_get_stats(&c);
	return fill_sized(out, size, &c, sizeof(c));
}

TRAINSCOPE_API int trainscope_get_counters_sized(struct trainscope_counters *out, size_t size)
{
	return get_counters(out, size);
}

TRAINSCOPE_API int trainscope_get_device_counters_sized(struct trainscope_device_counters *out,
							 size_t size)
{
	return get_device_counters(out, size);
}

TRAINSCOPE_API void trainscope_get_counters(struct trainscope_counters *out)
{
	(void)get_counters(out, COUNTERS_V1_SIZE);
}

TRAINSCOPE_API void trainscope_get_device_counters(struct trainscope_device_counters *out)
{
	(void)get_device_counters(out, DEVICE_COUNTERS_V1_SIZE);
}

TRAINSCOPE_API int trainscope_side_path(const char *suffix, char *buf, size_t n)
{
	size_t len;

	if (!ts_lib_ring() || !suffix || !buf)
		return -1;
	len = strlen(ts_lib.ring_path) - strlen(TS_RING_SUFFIX);
	if (snprintf(buf, n, "%.*s%s", (int)len, ts_lib.ring_path, suffix) >= (int)n)
		return -1;
	return 0;
}

TRAINSCOPE_API void trainscope_set_dump_signal(int sig)
{
	atomic_store(&ts_lib.dump_signal, sig);
}

TRAINSCOPE_API void trainscope_note(enum trainscope_note what)
{
	struct ts_rec rec = { .t_ns = ts_mono_ns() };

	if (what == TRAINSCOPE_NOTE_EXCEPTION)
		rec.type = TS_REC_EXCEPTION;
	else if (what == TRAINSCOPE_NOTE_GROUPS)
		rec.type = TS_REC_GROUPS;
	else
		return;
	ts_emit(&rec);
}

static void lib_after_fork_child(void)
{
	/* the parent's mapping stays valid but belongs to the parent's identity */
	ts_lib.ring = NULL;
	atomic_store(&ts_lib.orphan_drops, 0);
	atomic_store(&ts_lib.state, LIB_UNINIT);
}

static double calibrate_ticks(void);

/* ts_ticks()'s rate, found once, lazily: at a step end or by the poller, never at load
 * (every process under the preload would pay the 2 ms of measuring the TSC). */
double ts_ns_per_tick(void)
{
	static _Atomic double npt;
	double v = atomic_load_explicit(&npt, memory_order_relaxed);

	if (likely(v > 0))
		return v;
	v = calibrate_ticks();
	atomic_store(&npt, v);
	return v;
}

/* The TSC's rate is measured. aarch64's counter states its frequency (cntfrq_el0, set
 * by firmware; 1 GHz from Armv8.6), which is measured too only if it reads 0; elsewhere
 * ts_ticks() is ts_mono_ns(). */
static double calibrate_ticks(void)
{
#if defined(__aarch64__)
	uint64_t hz;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
	if (hz)
		return 1e9 / (double)hz;
#elif !defined(__x86_64__)
	return 1.0;
#endif
	uint64_t t0 = ts_mono_ns(), k0 = ts_ticks(), t1, k1;

	do
		t1 = ts_mono_ns();
	while (t1 - t0 < 2000000); /* 2 ms, once per process */
	k1 = ts_ticks();
	return k1 > k0 ? (double)(t1 - t0) / (double)(k1 - k0) : 1.0;
}

__attribute__((constructor)) static void lib_load(void)
{
	pthread_atfork(NULL, NULL, lib_after_fork_child);
}

__attribute__((destructor)) static void lib_unload(void)
{
	if (atomic_load(&ts_lib.state) == LIB_READY)
		atomic_store(&ts_lib.ring->closed, 1);
}
