/* libtrainscope.so: the public API of trainscope.h writing into this process's ring.
 *
 * The library has one instance per process by nature (it is preloaded), so its state
 * is the single struct `lib` below. The ring is made on the first call, not in a
 * constructor, so that launchers and helper processes that never record leave no ring.
 * After fork() the child makes its own ring on its first call. */
#include "ring.h"
#include "trainscope.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

enum lib_state { LIB_UNINIT, LIB_INITIALIZING, LIB_READY, LIB_DISABLED };

static struct {
	_Atomic int state;
	struct ts_ring *ring;
	int lock_fd;
	_Atomic uint64_t orphan_drops; /* records with no ring to go to */
} lib;

/* Begin timestamps per thread; initial-exec TLS is a plain %fs-relative load. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
	uint64_t region_t0[TRAINSCOPE_REGION_MAX];
	uint64_t coll_t0[TRAINSCOPE_COLL_MAX];
	uint64_t coll_bytes[TRAINSCOPE_COLL_MAX];
} tls;

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t ring_slots(void)
{
	const char *v = getenv("TRAINSCOPE_RING_SLOTS");
	unsigned long n = v ? strtoul(v, NULL, 0) : 0;
	uint32_t cap = 2;

	if (n < 64 || n > (1ul << 24))
		n = 16384;
	while (cap < n)
		cap <<= 1;
	return cap;
}

/* Cold path, once per process: create the ring in $TRAINSCOPE_RING_DIR. */
static __attribute__((noinline, cold)) struct ts_ring *lib_init(void)
{
	int expect = LIB_UNINIT;
	const char *dir = getenv("TRAINSCOPE_RING_DIR");
	struct ts_ident id;
	char path[4096];

	if (!atomic_compare_exchange_strong(&lib.state, &expect, LIB_INITIALIZING))
		return NULL; /* another thread is on it, or it is disabled */
	if (!dir || !*dir) {
		atomic_store(&lib.state, LIB_DISABLED);
		return NULL;
	}
	ts_ident_from_env(&id);
	if (ts_ring_create(dir, ring_slots(), &id, &lib.ring, &lib.lock_fd, path, sizeof(path))) {
		atomic_store(&lib.state, LIB_DISABLED);
		return NULL;
	}
	atomic_store_explicit(&lib.state, LIB_READY, memory_order_release);
	return lib.ring;
}

static inline struct ts_ring *lib_ring(void)
{
	int st = atomic_load_explicit(&lib.state, memory_order_acquire);

	if (__builtin_expect(st == LIB_READY, 1))
		return lib.ring;
	return st == LIB_UNINIT ? lib_init() : NULL;
}

static inline void emit(const struct ts_rec *rec)
{
	struct ts_ring *r = lib_ring();

	if (__builtin_expect(r != NULL, 1))
		ts_ring_push(r, rec);
	else
		atomic_fetch_add_explicit(&lib.orphan_drops, 1, memory_order_relaxed);
}

TRAINSCOPE_API void trainscope_step_begin(uint64_t step)
{
	struct ts_rec rec = { .type = TS_REC_STEP_BEGIN, .t_ns = mono_ns(), .a = step };

	emit(&rec);
}

TRAINSCOPE_API void trainscope_step_end(uint64_t step)
{
	struct ts_rec rec = { .type = TS_REC_STEP_END, .t_ns = mono_ns(), .a = step };

	emit(&rec);
}

TRAINSCOPE_API void trainscope_region_begin(enum trainscope_region region)
{
	if ((unsigned)region < TRAINSCOPE_REGION_MAX)
		tls.region_t0[region] = mono_ns();
}

TRAINSCOPE_API void trainscope_region_end(enum trainscope_region region)
{
	uint64_t now = mono_ns(), t0;

	if ((unsigned)region >= TRAINSCOPE_REGION_MAX || !(t0 = tls.region_t0[region]))
		return;
	tls.region_t0[region] = 0;
	struct ts_rec rec = { .type = TS_REC_REGION, .kind = (uint16_t)region, .t_ns = t0,
			      .dur_ns = now - t0 };
	emit(&rec);
}

TRAINSCOPE_API void trainscope_compute_device_ns(uint64_t ns)
{
	struct ts_rec rec = { .type = TS_REC_DEVICE, .kind = TRAINSCOPE_REGION_COMPUTE,
			      .t_ns = mono_ns(), .a = ns };

	emit(&rec);
}

TRAINSCOPE_API void trainscope_collective_begin(enum trainscope_coll_op op, uint64_t bytes)
{
	if ((unsigned)op >= TRAINSCOPE_COLL_MAX)
		return;
	tls.coll_t0[op] = mono_ns();
	tls.coll_bytes[op] = bytes;
}

TRAINSCOPE_API void trainscope_collective_end(enum trainscope_coll_op op)
{
	uint64_t now = mono_ns(), t0;

	if ((unsigned)op >= TRAINSCOPE_COLL_MAX || !(t0 = tls.coll_t0[op]))
		return;
	tls.coll_t0[op] = 0;
	struct ts_rec rec = { .type = TS_REC_COLL, .kind = (uint16_t)op, .t_ns = t0,
			      .dur_ns = now - t0, .a = tls.coll_bytes[op] };
	emit(&rec);
}

TRAINSCOPE_API void trainscope_get_counters(struct trainscope_counters *out)
{
	struct ts_ring *r = atomic_load(&lib.state) == LIB_READY ? lib.ring : NULL;

	out->written = r ? atomic_load(&r->head) : 0;
	out->dropped = atomic_load(&lib.orphan_drops) + (r ? atomic_load(&r->dropped) : 0);
}

static void lib_after_fork_child(void)
{
	/* the parent's mapping stays valid but belongs to the parent's identity */
	lib.ring = NULL;
	atomic_store(&lib.orphan_drops, 0);
	atomic_store(&lib.state, LIB_UNINIT);
}

__attribute__((constructor)) static void lib_load(void)
{
	pthread_atfork(NULL, NULL, lib_after_fork_child);
}

__attribute__((destructor)) static void lib_unload(void)
{
	if (atomic_load(&lib.state) == LIB_READY)
		atomic_store(&lib.ring->closed, 1);
}
