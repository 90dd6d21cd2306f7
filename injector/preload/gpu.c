// SPDX-License-Identifier: Apache-2.0
/* Device timing: the event pool, per-step stream segments, sampling, the poller.
 *
 * Launching threads only claim pooled events, record them and hand the slot to the
 * poller (lock-free state changes); the poller thread queries events, turns them into
 * records, closes steps (one GPU_STEP record each) and watches for hangs. Nothing is
 * recorded on a stream that is capturing a CUDA graph. */
#include "gpu.h"
#include "nccl.h"
#include "numparse.h"
#include "real.h"
#include "trainscope.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__thread struct ts_tls ts_tls __attribute__((tls_model("initial-exec")));

enum { SLOT_FREE, SLOT_ARMED, SLOT_PENDING };
/* Ready states name the runtime being timed: a hook of the other one finds its ready
 * state missing and stays untimed, with one compare as before. */
enum { GPU_UNINIT, GPU_INITIALIZING, GPU_READY_CUDA, GPU_READY_ACL };
#define GPU_READY(st) ((st) >= GPU_READY_CUDA)
#define NSLOTS 1024
#define NSTREAMS 64
#define NACC 32
/* A stream's open segment that no event pair times (past its step's head, between
 * samples): the slot part of strm.seg is NSLOTS. */
#define UNTIMED NSLOTS
#define SKIPPED (NSLOTS + 1) /* a segment of a step the device is not timed in */
#define SMALL_SEGMENT 2 /* kernels */

struct ev_slot { /* its state is g.slot_state[its index] */
	CUevent start, end;
	struct ts_op_meta meta;
	uint64_t step, t_start_ns, t_enq_ns;
	bool comm, hang_said;
	bool tail;     /* a sampled small segment (struct strm) */
	int16_t strm;  /* its stream's index, for a tail sample */
	uint32_t kern; /* a tail sample's kernels */
};

struct strm {
	/* key to last_kern, which launches use, in the entry's first cache line */
	_Alignas(64) _Atomic(uintptr_t) key; /* the stream, special handles made explicit */
	/* the open busy segment: its slot x 2, + 1 when NCCL's (launched inside a
	 * collective); -1 when none. One word, so its kind cannot tear from its slot. A
	 * stream that switches (a blocking collective on the compute stream, as PyTorch
	 * runs them) closes one kind's segment and opens the other's. */
	_Atomic int seg;
	/* Every segment after one of more than SMALL_SEGMENT kernels is timed, and so are
	 * a step's first seg_head segments on the stream (its head; see segment_timing). A
	 * segment after a small one is timed one time in seg_every (a tail sample); the
	 * others (untimed) count their kernels, and their busy time is the samples' ns per
	 * kernel (over about 2 seg_every steps: a step's own one or two samples vary too
	 * much) times their kernels. Lightning accumulates each gradient on a stream of
	 * its own that waits on the compute stream before each: 101 one-kernel segments a
	 * step, whose event pairs cost it 3 % when each was timed. */
	_Atomic uint64_t seg_step;              /* the step of the last segment opened */
	_Atomic uint32_t seg_n;                 /* segments opened in seg_step */
	_Atomic uint32_t prev_n;                /* in the stream's step before seg_step */
	_Atomic uint32_t seg_kern, last_kern;   /* kernels in the open and the last one */
	_Atomic bool last_comm;                 /* the last one was NCCL's */
	_Atomic uint32_t untimed_kern[NACC][2]; /* by step % NACC, [comm]: host-written */
	struct { uint64_t ns, kern; } tail[NACC][2]; /* tail samples read: the poller's */
	struct { double ns, kern; } rate[2];    /* the samples' decaying sums: the poller's */
#ifdef TS_SELFTIME
	_Atomic int st_how; /* how the open segment was timed (SEG_*) */
#endif
};

struct step_acc { /* the poller's own */
	uint64_t step, compute_ns, comm_ns, ksamples, ksample_ns;
	bool used;
};

/* init and sample_n, which a thread's launches read rarely (gpu_ready, tick_due), open
 * the aligned struct: one cache line */
static struct {
	_Atomic int init;
	_Atomic unsigned missing; /* bit per runtime (1 << backend) whose functions are absent */
	_Atomic uint64_t sample_n;
	struct ts_dev_fns d;
	CUcontext ctx;
	struct ev_slot slot[NSLOTS];
	/* each slot's SLOT_* apart from it: the poller's scan of every slot on each wake-up
	 * reads 4 KB, not the 96 KB of the slots */
	_Atomic int slot_state[NSLOTS];
	_Atomic uint32_t hint;
	struct strm strm[NSTREAMS];
	_Atomic uint64_t closed_upto; /* steps below this one have ended */
	_Atomic uint64_t gemm_mark;   /* always_gemm's step << 8 | GEMMs taken in it */
	_Atomic int gemms_per_step;   /* how many (TRAINSCOPE_GEMMS_PER_STEP); -1: not read */
	/* the device is timed on one step of each dev_every (step_untimed); beside the GEMM
	 * mark, which each GEMM reads after it: no line of its own on that path */
	uint32_t dev_every;
	uint64_t emitted_upto;        /* poller: GPU_STEP sent for steps below this one */
	struct step_acc acc[NACC];
	_Atomic uint64_t min_n;
	double budget;
	uint64_t hang_ns, poll_ns, last_hang_ns;
	uint32_t seg_head, seg_every;
	double seg_keep; /* the tail samples' sums kept a step: 1 - 1 / (2 seg_every) */
	uint64_t last_step_end_ns;
	_Atomic uint64_t step_samples, step_sample_ticks;
	_Atomic bool plugin;
	_Atomic bool poller_started;
	struct {
		_Atomic uint64_t segments, samples, timed_skipped, capture_skips, pool_empty,
			ctx_mismatch, completed, hangs, late, seg_waits, seg_switches,
			seg_untimed, tail_unsampled;
		_Atomic uint64_t graph[TS_GRAPH_HOST_FUNC + 1]; /* enum ts_graph_note */
	} st;
} g __attribute__((aligned(64))) = { .strm = { [0 ... NSTREAMS - 1] = { .seg = -1 } },
				     .gemms_per_step = -1 };

/* The variable as a whole non-negative number (common/numparse.c), else def. */
static uint64_t env_u64(const char *name, uint64_t def)
{
	long n;

	return ts_parse_int(getenv(name), 0, LONG_MAX, &n) ? def : (uint64_t)n;
}

/* The variable as a positive number, else def. */
static double env_double(const char *name, double def)
{
	double d;

	return ts_parse_double(getenv(name), 0, 1e300, &d) || !(d > 0) ? def : d;
}

uint64_t ts_hang_timeout_ns(void)
{
	return env_u64("TRAINSCOPE_HANG_TIMEOUT_MS",
		       env_u64("TRAINSCOPE_HANG_TIMEOUT_S", 300) * 1000) * 1000000ull;
}

static inline unsigned backend(unsigned sk) /* 0 CUDA, 1 ACL: in ready-state order */
{
	return sk == TS_SK_ACL;
}

static inline int ready_state(unsigned sk)
{
	return GPU_READY_CUDA + (int)backend(sk);
}

static bool resolve(struct ts_dev_fns *d, unsigned sk)
{
	if (backend(sk))
		return ts_acl_dev_fns(d);
#define R(field, name) *(void **)&d->field = ts_find_real("libcuda", name)
	R(ctx_get, "cuCtxGetCurrent");
	R(ctx_set, "cuCtxSetCurrent");
	R(ev_create, "cuEventCreate");
	R(ev_record, "cuEventRecord");
	R(ev_query, "cuEventQuery");
	R(ev_elapsed, "cuEventElapsedTime");
	R(is_capturing, "cuStreamIsCapturing");
#undef R
	return d->ctx_get && d->ctx_set && d->ev_create && d->ev_record && d->ev_query &&
	       d->ev_elapsed && d->is_capturing;
}

static void *poller(void *arg);

static void start_poller(void)
{
	pthread_attr_t at;
	pthread_t t;
	sigset_t all, old;

	if (atomic_exchange(&g.poller_started, true))
		return;
	/* the poller takes no signals meant for the program (it raises its own dump) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, poller, NULL) != 0)
		atomic_store(&g.poller_started, false);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Cold, once: the runtime's functions, the launching thread's context, the poller. */
static __attribute__((noinline, cold)) bool gpu_init(unsigned sk)
{
	int expect = GPU_UNINIT;
	unsigned bit = 1u << backend(sk);

	if ((atomic_load(&g.missing) & bit) ||
	    !atomic_compare_exchange_strong(&g.init, &expect, GPU_INITIALIZING))
		return false;
	bool found = resolve(&g.d, sk);
	if (!found || g.d.ctx_get(&g.ctx) != TS_CUDA_SUCCESS || !g.ctx) {
		/* no context yet (a launch before any context fails anyway): try again
		 * later; a runtime whose functions are missing is not asked again */
		if (!found)
			atomic_fetch_or(&g.missing, bit);
		g.ctx = NULL;
		g.d = (struct ts_dev_fns){ 0 };
		atomic_store(&g.init, GPU_UNINIT);
		return false;
	}
	g.sample_n = env_u64("TRAINSCOPE_SAMPLE_N", 64);
	g.min_n = g.sample_n < 8 ? g.sample_n : 8;
	if (!g.sample_n)
		g.sample_n = 1;
	g.budget = env_double("TRAINSCOPE_SAMPLE_BUDGET", 0.0005);
	g.hang_ns = ts_hang_timeout_ns();
	g.poll_ns = env_u64("TRAINSCOPE_POLL_MS", 5) * 1000000ull;
	uint64_t head = env_u64("TRAINSCOPE_SEGMENT_HEAD", 1);
	uint64_t every = env_u64("TRAINSCOPE_SEGMENT_EVERY", 64);
	g.seg_head = head < UINT32_MAX ? (uint32_t)head : UINT32_MAX;
	g.seg_every = every - 1 < UINT32_MAX ? (uint32_t)every : 1; /* 0: each timed, as 1 */
	/* a step samples one in seg_every of a stream's small segments, at a place hashed
	 * from the step (segment_timing): the rate remembers about 2 seg_every steps, so
	 * that most places (a bias's kernel or a weight's) weigh in it */
	g.seg_keep = 1.0 - 1.0 / (2.0 * g.seg_every);
	uint64_t dev_every = env_u64("TRAINSCOPE_DEVICE_EVERY", 2);
	g.dev_every = dev_every ? (dev_every < TS_DEVICE_EVERY_MAX ? (uint32_t)dev_every
								   : TS_DEVICE_EVERY_MAX) : 1;
	g.closed_upto = g.emitted_upto = atomic_load(&ts_lib.step);
	g.last_step_end_ns = ts_mono_ns();
	atomic_store_explicit(&g.init, ready_state(sk), memory_order_release);
	start_poller();
	return true;
}

/* Whether the backend of sk is set up, setting it up on first use. A thread that has
 * seen it ready keeps a bit for it (once ready, it stays so): a launch then reads no
 * line of g but its stream's. */
static inline bool gpu_ready(unsigned sk)
{
	unsigned bit = 1u << backend(sk);

	if (likely(ts_tls.gpu_seen & bit))
		return true;
	int st = atomic_load_explicit(&g.init, memory_order_acquire);
	if (st == ready_state(sk) || (st == GPU_UNINIT && gpu_init(sk))) {
		ts_tls.gpu_seen |= bit;
		return true;
	}
	return false;
}

/* N is read from g again at least every this many calls: a thread counting to a large
 * N that has since fallen (N halves when sampling costs far under its budget) samples
 * again within this many calls, not within the old N (up to 2^20). A power of two. */
#define TICK_REREAD 4096u

/* One call in the process's adaptive N (g.sample_n) on the calling thread: *tick counts
 * calls since the last sample, *n is the N it counts to, read from g again when the
 * count reaches it or TICK_REREAD calls have passed (a change of N takes effect there). */
static inline bool tick_due(uint32_t *tick, uint32_t *n)
{
	if (likely(++*tick < *n && (*tick & (TICK_REREAD - 1))))
		return false;
	uint64_t now = atomic_load_explicit(&g.sample_n, memory_order_relaxed);
	if (unlikely(!now)) /* the device not set up yet, N not known: asked again next call
			     * (as 0 it sampled each thread's first GEMM, whatever the settings) */
		return false;
	*n = now < UINT32_MAX ? (uint32_t)now : UINT32_MAX;
	if (*tick < *n)
		return false;
	*tick = 0;
	return true;
}

/* An ACL stream's NULL (its default stream) keeps the legacy handle's key in the
 * stream table; the ACL adapters give it back as NULL. */
static inline CUstream norm(CUstream s, unsigned sk)
{
	return s ? s : (sk == TS_SK_PTSZ ? TS_STREAM_PER_THREAD : TS_STREAM_LEGACY);
}

static uint32_t strm_hash(uintptr_t key)
{
	return (uint32_t)((key >> 4) * 0x9e3779b9u) % NSTREAMS;
}

/* The stream's entry, claimed when new and claim; NULL when the table is full (or the
 * stream is new and not claim). */
static __attribute__((noinline)) struct strm *strm_probe(CUstream s, bool claim)
{
	uintptr_t key = (uintptr_t)s;
	uint32_t h = strm_hash(key);

	for (uint32_t i = 0; i < NSTREAMS; i++) {
		struct strm *e = &g.strm[(h + i) % NSTREAMS];
		uintptr_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
		if (cur == key)
			return e;
		if (!cur) {
			if (!claim)
				return NULL;
			if (atomic_compare_exchange_strong(&e->key, &cur, key) || cur == key)
				return e;
		}
	}
	return NULL;
}

/* strm_probe, with the usual case (the stream at its hashed place) inline: a launch's
 * code stays in few cache lines. */
static inline struct strm *strm_find(CUstream s, bool claim)
{
	struct strm *e = &g.strm[strm_hash((uintptr_t)s)];

	if (likely(atomic_load_explicit(&e->key, memory_order_acquire) == (uintptr_t)s))
		return e;
	return strm_probe(s, claim);
}

static void slot_release(int i)
{
	atomic_store_explicit(&g.slot_state[i], SLOT_FREE, memory_order_release);
}

static int slot_claim(void)
{
	uint32_t h = atomic_fetch_add_explicit(&g.hint, 1, memory_order_relaxed);

	for (uint32_t k = 0; k < NSLOTS; k++) {
		int i = (int)((h + k) % NSLOTS), free_ = SLOT_FREE;
		struct ev_slot *s = &g.slot[i];
		if (atomic_load_explicit(&g.slot_state[i], memory_order_relaxed) != SLOT_FREE ||
		    !atomic_compare_exchange_strong(&g.slot_state[i], &free_, SLOT_ARMED))
			continue;
		if (!s->start && (g.d.ev_create(&s->start, TS_EVENT_DEFAULT) ||
				  g.d.ev_create(&s->end, TS_EVENT_DEFAULT))) {
			s->start = s->end = NULL; /* events made lazily: a failure keeps it empty */
			slot_release(i);
			return -1;
		}
		return i;
	}
	atomic_fetch_add_explicit(&g.st.pool_empty, 1, memory_order_relaxed);
	return -1;
}

/* Asks the driver only while a capture is under way (every capture begins through the
 * driver's hook): the query was a fifth of an event pair's host time on an H200. */
static bool capturing(CUstream s)
{
	int status = 0;

	if (likely(atomic_load_explicit(&ts_lib.captures, memory_order_relaxed) <= 0))
		return false;
	if (g.d.is_capturing(s, &status) != TS_CUDA_SUCCESS || status != 0) {
		atomic_fetch_add_explicit(&g.st.capture_skips, 1, memory_order_relaxed);
		return true;
	}
	return false;
}

static bool ctx_ok(void)
{
	CUcontext c = NULL;

	if (g.d.ctx_get(&c) == TS_CUDA_SUCCESS && c == g.ctx)
		return true;
	atomic_fetch_add_explicit(&g.st.ctx_mismatch, 1, memory_order_relaxed);
	return false;
}

static int timed_begin_body(CUstream s)
{
	int i;

	if (!ctx_ok() || capturing(s) || (i = slot_claim()) < 0) {
		atomic_fetch_add_explicit(&g.st.timed_skipped, 1, memory_order_relaxed);
		return -1;
	}
	struct ev_slot *e = &g.slot[i];
	if (g.d.ev_record(e->start, s) != TS_CUDA_SUCCESS) {
		slot_release(i);
		return -1;
	}
	e->step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);
	e->t_start_ns = ts_mono_ns();
	e->comm = false;
	e->hang_said = false;
	e->tail = false;
	return i;
}

static int timed_begin(CUstream s)
{
	TS_ST_BEGIN(st);
	int i = timed_begin_body(s);
	TS_ST_END(TS_ST_EVENTS, st);
	return i;
}

static void timed_end(int i, CUstream s, const struct ts_op_meta *m, bool comm)
{
	TS_ST_BEGIN(st);
	struct ev_slot *e = &g.slot[i];

	if (capturing(s) || g.d.ev_record(e->end, s) != TS_CUDA_SUCCESS) {
		slot_release(i);
	} else {
		e->meta = *m;
		e->comm = comm;
		e->t_enq_ns = ts_mono_ns();
		atomic_store_explicit(&g.slot_state[i], SLOT_PENDING, memory_order_release);
	}
	TS_ST_END(TS_ST_EVENTS, st);
}

int ts_gpu_timed_begin(CUstream s, unsigned sk)
{
	if (ts_paused() || !gpu_ready(sk))
		return -1;
	uint64_t t0 = ts_ticks();
	int i = timed_begin(norm(s, sk));
	atomic_fetch_add_explicit(&g.step_sample_ticks, ts_ticks() - t0, memory_order_relaxed);
	return i;
}

void ts_gpu_timed_end(int i, CUstream s, unsigned sk, const struct ts_op_meta *m)
{
	uint64_t t0 = ts_ticks();

	if (i < 0)
		return;
	timed_end(i, norm(s, sk), m, false);
	atomic_fetch_add_explicit(&g.st.samples, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g.step_samples, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g.step_sample_ticks, ts_ticks() - t0, memory_order_relaxed);
}

/* How a segment is timed; the first three, timed each, say why (the diagnostic build
 * counts them per stream). */
enum { SEG_HEAD, SEG_AFTER_LARGE, SEG_KIND, SEG_SAMPLE, SEG_UNTIMED, SEG_SKIPPED, SEG_HOW_N };

#ifdef TS_SELFTIME
/* The diagnostic build's account of each stream's segments: opened by how (SEG_*), and
 * closed with more than SMALL_SEGMENT kernels by how. Printed with selftime's windows. */
static struct {
	_Atomic uint64_t opened[SEG_HOW_N], large[SEG_HOW_N], kern;
} st_seg[NSTREAMS];

static void st_seg_open(struct strm *e, int how)
{
	atomic_fetch_add_explicit(&st_seg[e - g.strm].opened[how], 1, memory_order_relaxed);
	atomic_store_explicit(&e->st_how, how, memory_order_relaxed);
}

static void st_seg_close(struct strm *e, uint32_t kern)
{
	int how = atomic_load_explicit(&e->st_how, memory_order_relaxed);

	if (kern > SMALL_SEGMENT)
		atomic_fetch_add_explicit(&st_seg[e - g.strm].large[how], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_seg[e - g.strm].kern, kern, memory_order_relaxed);
}
#else
static inline void st_seg_open(struct strm *e, int how) { (void)e, (void)how; }
static inline void st_seg_close(struct strm *e, uint32_t kern) { (void)e, (void)kern; }
#endif

/* The step's offset into the samples' places, hashed from the step: a step's segments
 * come in the same order every step, so a fixed place would sample the same segment each
 * time, and an offset that grows by one a step never reaches a place on a stream that
 * works only every other step (or on any period sharing a factor with seg_every). */
static uint64_t sample_turn(uint64_t step)
{
	return (step * 0x9E3779B97F4A7C15ull) >> 32;
}

/* How the n-th segment of step on stream e, of NCCL's kernels or not (comm), is timed.
 * The step's head is timed, unless the stream's step before (the last it worked in)
 * opened seg_every segments or more: its samples then come every step it works, and
 * Lightning's gradient stream (101 one-kernel segments) paid an event pair a step for
 * its first. A stream of few small segments (a side stream's copy a step) keeps a time
 * of its own each step. One that follows a large one, or none yet (a stream's first, a
 * host function's), or the other kind (a compute stream's kernels after its blocking
 * collective) is timed: only a run of small ones alike is sampled. */
static int segment_timing(const struct strm *e, uint32_t n, uint64_t step, bool comm)
{
	uint32_t last = atomic_load_explicit(&e->last_kern, memory_order_relaxed);

	if (n <= g.seg_head && atomic_load_explicit(&e->prev_n, memory_order_relaxed) < g.seg_every)
		return SEG_HEAD;
	if (last == 0 || last > SMALL_SEGMENT)
		return SEG_AFTER_LARGE;
	if (atomic_load_explicit(&e->last_comm, memory_order_relaxed) != comm)
		return SEG_KIND;
	return (n + sample_turn(step)) % g.seg_every ? SEG_UNTIMED : SEG_SAMPLE;
}

/* The timed step's place in block b of k steps: the top bits of another multiplier than
 * sample_turn's, so that the step chosen tells nothing of that step's segment sample
 * (with one multiplier, a stream working on even steps only would never sample half its
 * segment places). bench/rec_gemms.py timed_step() is the same function. */
static inline uint64_t timed_place(uint64_t b, uint64_t k)
{
	return ((b * 0xBF58476D1CE4E5B9ull) >> 56) % k;
}

/* Whether the device goes untimed in step (TRAINSCOPE_DEVICE_EVERY): no segment, GEMM or
 * launch sample is timed in it, and its GPU_STEP says so, so that the analyzer reads its
 * compute as unknown, not as 0. Each timing event costs some 5 µs of host and 2-3 µs of
 * device time (bench/results/gpu.md, session 37). One step of each block of dev_every is
 * timed, its place hashed from the block: a fixed place would see one parity of a job
 * whose steps alternate (two loader workers taking turns). Every rank picks the same
 * steps. */
static inline bool step_untimed(uint64_t step)
{
	uint64_t block, place;

	switch (g.dev_every) { /* constant divisors: no division on the hooks' path */
	case 2: block = step >> 1, place = step & 1; break;
	case 3: block = step / 3, place = step - 3 * block; break;
	case 4: block = step >> 2, place = step & 3; break;
	default: return false;
	}
	return place != timed_place(block, g.dev_every);
}

/* Out of line: a launch into an open segment (most) runs none of it. */
static __attribute__((noinline)) void open_segment(struct strm *e, CUstream s, bool comm)
{
	uint64_t step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);
	int none = -1, i;

	if (atomic_load_explicit(&e->seg_step, memory_order_relaxed) != step) {
		/* the last step the stream worked in, however long ago: steps the in-run A/B
		 * paused open nothing, and gave a head to a third of Lightning's steps */
		atomic_store_explicit(&e->prev_n, atomic_load_explicit(&e->seg_n, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&e->seg_step, step, memory_order_relaxed);
		atomic_store_explicit(&e->seg_n, 0, memory_order_relaxed);
	}
	uint32_t n = atomic_fetch_add_explicit(&e->seg_n, 1, memory_order_relaxed) + 1;
	int how = step_untimed(step) ? SEG_SKIPPED : segment_timing(e, n, step, comm);
	st_seg_open(e, how);
	if (how == SEG_SKIPPED) { /* open all the same: the step's next launches pass by */
		if (atomic_compare_exchange_strong(&e->seg, &none, SKIPPED * 2 + comm))
			atomic_store_explicit(&e->seg_kern, 0, memory_order_relaxed);
		return;
	}
	/* seg_kern is zeroed by the thread that opened the segment; two threads launching
	 * on one stream at its boundary may move a kernel across it (a count, not time) */
	if (how == SEG_UNTIMED) {
		if (atomic_compare_exchange_strong(&e->seg, &none, UNTIMED * 2 + comm)) {
			atomic_store_explicit(&e->seg_kern, 0, memory_order_relaxed);
			atomic_fetch_add_explicit(&g.st.seg_untimed, 1, memory_order_relaxed);
		}
		return;
	}
	if ((i = timed_begin(s)) < 0)
		return;
	/* before the slot is in seg, where another thread may end it */
	g.slot[i].tail = how == SEG_SAMPLE;
	g.slot[i].strm = (int16_t)(e - g.strm);
	if (!atomic_compare_exchange_strong(&e->seg, &none, i * 2 + comm)) {
		slot_release(i); /* another thread opened it first */
		return;
	}
	atomic_store_explicit(&e->seg_kern, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&g.st.segments, 1, memory_order_relaxed);
}

/* Ends the stream's open segment; true when one was open (this call ended it). */
static __attribute__((noinline)) bool close_segment(struct strm *e)
{
	static const struct ts_op_meta seg = { .kind = TS_T_SEGMENT };
	int v = atomic_exchange(&e->seg, -1);

	if (v < 0)
		return false;
	uint32_t kern = atomic_load_explicit(&e->seg_kern, memory_order_relaxed);
	st_seg_close(e, kern);
	atomic_store_explicit(&e->last_kern, kern, memory_order_relaxed);
	atomic_store_explicit(&e->last_comm, v & 1, memory_order_relaxed);
	if (v / 2 == SKIPPED)
		return true;
	if (v / 2 == UNTIMED) {
		uint64_t step = atomic_load_explicit(&e->seg_step, memory_order_relaxed);
		/* opened as its step ended (step_end ran between the step's read and the
		 * open): the poller may have counted that step; these kernels ran after it */
		if (step < atomic_load_explicit(&g.closed_upto, memory_order_relaxed))
			step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);
		atomic_fetch_add_explicit(&e->untimed_kern[step % NACC][v & 1], kern,
					  memory_order_relaxed);
		return true;
	}
	g.slot[v / 2].kern = kern;
	if (!ctx_ok()) {
		slot_release(v / 2);
		return true;
	}
	timed_end(v / 2, (CUstream)atomic_load(&e->key), &seg, v & 1);
	return true;
}

void ts_gpu_graph_note(enum ts_graph_note what)
{
	atomic_fetch_add_explicit(&g.st.graph[what], 1, memory_order_relaxed);
}

bool ts_gpu_capturing(CUstream s, unsigned sk)
{
	int status = 0;

	return gpu_ready(sk) && g.d.is_capturing(norm(s, sk), &status) == TS_CUDA_SUCCESS &&
	       status;
}

bool ts_gpu_captured(CUstream s, unsigned sk)
{
	if (!ts_gpu_capturing(s, sk))
		return false;
	ts_gpu_graph_note(TS_GRAPH_CAPTURED);
	return true;
}

int ts_gpu_launch(CUstream s, unsigned sk, bool may_sample, uint32_t work)
{
	if (ts_paused() || !gpu_ready(sk))
		return -1;
	CUstream n = norm(s, sk);
	struct strm *e = strm_find(n, true);
	if (likely(e != NULL)) {
		int seg = atomic_load_explicit(&e->seg, memory_order_relaxed);
		bool comm = ts_tls.coll_depth != 0;
		if (unlikely(seg >= 0 && (seg & 1) != comm)) {
			if (close_segment(e))
				atomic_fetch_add_explicit(&g.st.seg_switches, 1, memory_order_relaxed);
			seg = -1;
		}
		if (unlikely(seg < 0))
			open_segment(e, n, comm);
		/* a plain load and store: two threads' launches on one stream may lose one */
		atomic_store_explicit(&e->seg_kern,
				      atomic_load_explicit(&e->seg_kern, memory_order_relaxed) + work,
				      memory_order_relaxed);
	}
	if (ts_tls.lib_depth || !may_sample || !tick_due(&ts_tls.kernel_tick, &ts_tls.kernel_n) ||
	    step_untimed(atomic_load_explicit(&ts_lib.step, memory_order_relaxed)))
		return -1;
	return ts_gpu_timed_begin(s, sk);
}

/* One of the process's first g.gemms_per_step GEMMs of step: the step (low 56 bits)
 * and its count so far share one word, so threads at a step's start take that many
 * between them. (A thread still on the step before, as it ends, may restart the count:
 * that step times up to that many more.) */
static bool always_gemm(uint64_t step)
{
	uint64_t v = atomic_load_explicit(&g.gemm_mark, memory_order_relaxed), mark = step << 8;
	int per_step = atomic_load_explicit(&g.gemms_per_step, memory_order_relaxed);

	if (unlikely(per_step < 0)) { /* read here, not at the device's set-up: the first
				       * GEMM can come before it */
		uint64_t e = env_u64("TRAINSCOPE_GEMMS_PER_STEP", TS_GEMMS_PER_STEP);
		per_step = e < TS_GEMMS_PER_STEP_MAX ? (int)e : TS_GEMMS_PER_STEP_MAX;
		atomic_store_explicit(&g.gemms_per_step, per_step, memory_order_relaxed);
	}
	for (;;) {
		uint64_t n = (v & ~0xffull) == mark ? v & 0xff : 0;
		if (n >= (uint64_t)per_step)
			return false;
		if (atomic_compare_exchange_weak_explicit(&g.gemm_mark, &v, mark | (n + 1),
							  memory_order_relaxed,
							  memory_order_relaxed))
			return true;
	}
}

void ts_gpu_gemm_unsampled(void)
{
	uint64_t mark = atomic_load_explicit(&ts_lib.step, memory_order_relaxed) << 8;
	uint64_t v = atomic_load_explicit(&g.gemm_mark, memory_order_relaxed);

	while ((v & ~0xffull) == mark && (v & 0xff) &&
	       !atomic_compare_exchange_weak_explicit(&g.gemm_mark, &v, v - 1,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

bool ts_gpu_sample_gemm(void)
{
	uint64_t step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);

	if (ts_paused() || step_untimed(step))
		return false;
	if (always_gemm(step))
		return true;
	return tick_due(&ts_tls.gemm_tick, &ts_tls.gemm_n);
}

void ts_gpu_stream_wait(CUstream s, unsigned sk)
{
	struct strm *e;

	if (atomic_load_explicit(&g.init, memory_order_acquire) != ready_state(sk))
		return;
	if ((e = strm_find(norm(s, sk), false)) && close_segment(e))
		atomic_fetch_add_explicit(&g.st.seg_waits, 1, memory_order_relaxed);
}

/* Keeps sampling's host cost near its budget: N doubles when over, halves when far
 * under. A step the in-run A/B paused sampled nothing by design and leaves N as it is:
 * halving N there made the recorded blocks sample more than a job that never pauses.
 * So does a step the device is not timed in. */
static void adapt_sampling(uint64_t step, uint64_t now)
{
	uint64_t wall = now - g.last_step_end_ns;
	double cost = (double)atomic_exchange(&g.step_sample_ticks, 0) * ts_ns_per_tick();
	uint64_t n = atomic_load(&g.sample_n);

	atomic_store(&g.step_samples, 0);
	g.last_step_end_ns = now;
	if (ts_paused() || step_untimed(step))
		return;
	if (cost > g.budget * (double)wall && n < (1u << 20))
		atomic_store(&g.sample_n, n * 2);
	else if (cost * 4 < g.budget * (double)wall && n / 2 >= atomic_load(&g.min_n))
		atomic_store(&g.sample_n, n / 2);
}

void ts_gpu_step_end(uint64_t step)
{
	if (!GPU_READY(atomic_load_explicit(&g.init, memory_order_acquire)))
		return;
	for (int i = 0; i < NSTREAMS; i++)
		if (atomic_load(&g.strm[i].key))
			close_segment(&g.strm[i]);
	atomic_store(&g.closed_upto, step + 1);
	adapt_sampling(step, ts_mono_ns());
}

bool ts_gpu_plugin_active(void)
{
	return atomic_load_explicit(&g.plugin, memory_order_relaxed);
}

void ts_gpu_set_plugin_active(void)
{
	atomic_store(&g.plugin, true);
	if (!g.hang_ns)
		g.hang_ns = ts_hang_timeout_ns();
	start_poller();
}

/* ---- the poller ------------------------------------------------------------------ */

static struct step_acc *acc_for(uint64_t step)
{
	struct step_acc *a = &g.acc[step % NACC];

	if (step < g.emitted_upto || (a->used && a->step != step)) {
		g.st.late++;
		return NULL;
	}
	if (!a->used)
		*a = (struct step_acc){ .step = step, .used = true };
	return a;
}

static void complete(struct ev_slot *e, uint64_t ns)
{
	struct step_acc *a = acc_for(e->step);
	const struct ts_op_meta *m = &e->meta;

	switch (m->kind) {
	case TS_T_SEGMENT:
		if (a && e->tail) {
			g.strm[e->strm].tail[e->step % NACC][e->comm].ns += ns;
			g.strm[e->strm].tail[e->step % NACC][e->comm].kern += e->kern;
		}
		if (a) /* a sample counts itself exactly; the poller adds the rest */
			*(e->comm ? &a->comm_ns : &a->compute_ns) += ns;
		break;
	case TS_T_KERNEL:
		if (a) {
			a->ksamples++;
			a->ksample_ns += ns;
		}
		break;
	case TS_T_GEMM: {
		struct ts_rec r = { .type = TS_REC_GEMM, .t_ns = e->t_start_ns, .dur_ns = ns,
				    .gemm = { .step = e->step, .flops = m->amount } };
		ts_emit(&r);
		break;
	}
	case TS_T_COLL: {
		struct ts_rec r = { .type = TS_REC_COLL, .kind = m->op, .t_ns = e->t_start_ns,
				    .dur_ns = ns, .nranks = m->nranks,
				    .coll = { .bytes = m->amount, .step_tag = e->step + 1,
					      .comm = m->comm, .seq = m->seq } };
		ts_emit(&r);
		break;
	}
	}
	atomic_fetch_add_explicit(&g.st.completed, 1, memory_order_relaxed);
}

/* Reads slot i back when its end event has completed; watch: this wake-up checks for
 * hangs (hang_check). */
static void poll_slot(struct ev_slot *e, int i, uint64_t now, bool watch, uint64_t *min_active)
{
	float ms = 0;
	CUresult q;

	if (e->step < *min_active)
		*min_active = e->step;
	q = g.d.ev_query(e->end);
	if (q == TS_CUDA_SUCCESS) {
		if (g.d.ev_elapsed(&ms, e->start, e->end) == TS_CUDA_SUCCESS && ms >= 0)
			complete(e, (uint64_t)((double)ms * 1e6));
		slot_release(i);
	} else if (q == TS_CUDA_ERROR_NOT_READY) {
		/* now was read before the slot may have been handed over: no wrap-around */
		if (watch && !e->hang_said && g.hang_ns && now > e->t_enq_ns &&
		    now - e->t_enq_ns > g.hang_ns) {
			e->hang_said = true;
			ts_report_hang(e->meta.kind == TS_T_COLL ? e->meta.op : 0, e->meta.comm,
				       e->meta.seq, e->step, now - e->t_start_ns);
		}
	} else {
		slot_release(i); /* the context is gone or broken: nothing will complete */
	}
}

/* Step s's untimed segments (struct strm): each stream's kernels in them times its tail
 * samples' ns per kernel, added to r; the tallies made ready for step s + NACC. */
static void add_tails(uint64_t s, struct ts_rec *r)
{
	for (int i = 0; i < NSTREAMS; i++)
		for (int comm = 0; comm < 2; comm++) {
			struct strm *e = &g.strm[i];
			uint64_t untimed = atomic_exchange(&e->untimed_kern[s % NACC][comm], 0);
			uint64_t *ns = &e->tail[s % NACC][comm].ns, *kern = &e->tail[s % NACC][comm].kern;
			/* every step, sampled or not: the memory is in steps, so a stream with few
			 * small segments (a sample in few steps) follows a change as soon */
			e->rate[comm].ns = e->rate[comm].ns * g.seg_keep + (double)*ns;
			e->rate[comm].kern = e->rate[comm].kern * g.seg_keep + (double)*kern;
			*ns = *kern = 0;
			if (untimed && !(e->rate[comm].kern > 0))
				g.st.tail_unsampled += untimed;
			else if (untimed)
				*(comm ? &r->gpu_step.comm_ns : &r->gpu_step.compute_ns) += (uint64_t)(
					e->rate[comm].ns / e->rate[comm].kern * (double)untimed + 0.5);
		}
}

/* Emits the steps below upto (closed_upto as it was read before the slots were
 * scanned) and below min_active (the scan's oldest step with a slot in flight). */
static void close_steps(uint64_t min_active, uint64_t upto)
{
	while (g.emitted_upto < upto && g.emitted_upto < min_active) {
		uint64_t s = g.emitted_upto;
		struct step_acc *a = &g.acc[s % NACC];
		struct ts_rec r = { .type = TS_REC_GPU_STEP, .t_ns = ts_mono_ns(), .gpu_step.step = s,
				    .kind = step_untimed(s) ? TS_GPU_STEP_UNTIMED : 0 };
		if (a->used && a->step == s) {
			r.gpu_step.compute_ns = a->compute_ns;
			r.gpu_step.comm_ns = a->comm_ns;
			r.gpu_step.ksamples = a->ksamples;
			r.dur_ns = a->ksample_ns;
		}
		if (a->step == s)
			a->used = false;
		add_tails(s, &r);
		ts_emit(&r);
		g.emitted_upto++;
	}
}

/* Whether this wake-up watches for hangs: an eighth of the timeout after the last
 * watch, at most a second. Read on each wake-up, the plugin's op pool (4,096 ops, 384 KB)
 * and the slots made an idle poller's work 5-6.6 µs a wake-up on the build machine, 2.5
 * after (with the slots' states apart), and the poller wakes every 5 ms for a timeout of
 * minutes. */
static bool hang_check(uint64_t now, uint64_t *last)
{
	uint64_t every = g.hang_ns / 8 < 1000000000ull ? g.hang_ns / 8 : 1000000000ull;

	if (!g.hang_ns || (*last && now - *last < every))
		return false;
	*last = now;
	return true;
}

static void *poller(void *arg)
{
	bool ctx_set = false;
	uint64_t flushed_step = 0, watched = 0;

	(void)arg;
	for (;;) {
		TS_ST_BEGIN(st_loop);
		uint64_t now = ts_mono_ns(), min_active = UINT64_MAX;
		bool watch = hang_check(now, &watched);
		/* collectives first: a stuck one names op, communicator and seq, which is
		 * what a hang report should say (reports are one per timeout period) */
		if (watch)
			ts_prof_hang_scan(now, g.hang_ns);
		uint64_t step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);
		if (step != flushed_step) {
			ts_prof_flush_peers();
			flushed_step = step;
		}
		if (!ctx_set && g.ctx)
			ctx_set = g.d.ctx_set(g.ctx) == TS_CUDA_SUCCESS;
		/* read before the scan: a step closed after it could have slots the scan did
		 * not see (a whole step can pass while this thread is off its CPU), and would
		 * be sent with their time missing */
		uint64_t upto = atomic_load(&g.closed_upto);
		for (int i = 0; ctx_set && i < NSLOTS; i++) {
			int st = atomic_load_explicit(&g.slot_state[i], memory_order_acquire);
			if (st == SLOT_PENDING)
				poll_slot(&g.slot[i], i, now, watch, &min_active);
			else if (st == SLOT_ARMED && g.slot[i].step < min_active)
				min_active = g.slot[i].step;
		}
		if (ctx_set)
			close_steps(min_active, upto);
		TS_ST_END(TS_ST_POLL, st_loop);
		struct timespec ts = { 0, (long)(g.poll_ns ? g.poll_ns : 5000000) };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

void ts_report_hang(unsigned op, uint64_t comm, uint64_t seq, uint64_t step, uint64_t pending)
{
	uint64_t now = ts_mono_ns();
	int sig = atomic_load(&ts_lib.dump_signal);

	/* one report per timeout period: a stuck stream leaves many ops pending */
	if (g.last_hang_ns && now - g.last_hang_ns < g.hang_ns)
		return;
	g.last_hang_ns = now;
	if (sig > 0) {
		/* the poller blocks every signal; this one it raises at itself, so that
		 * faulthandler writes all Python stacks before raise returns */
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		pthread_sigmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		pthread_sigmask(SIG_BLOCK, &one, NULL);
	}
	struct ts_rec r = { .type = TS_REC_HANG, .kind = (uint16_t)op, .t_ns = now,
			    .dur_ns = pending, .hang = { .comm = comm, .seq = seq, .step = step } };
	ts_emit(&r);
	atomic_fetch_add_explicit(&g.st.hangs, 1, memory_order_relaxed);
}

void ts_gpu_get_stats(struct trainscope_device_counters *o)
{
	o->segments = atomic_load(&g.st.segments);
	o->samples = atomic_load(&g.st.samples);
	o->completed = atomic_load(&g.st.completed);
	o->timed_skipped = atomic_load(&g.st.timed_skipped);
	o->capture_skips = atomic_load(&g.st.capture_skips);
	o->hangs = atomic_load(&g.st.hangs);
	o->sample_n = atomic_load(&g.sample_n);
	o->graphs = atomic_load(&g.st.graph[TS_GRAPH_INSTANTIATED]);
	o->graphs_uncounted = atomic_load(&g.st.graph[TS_GRAPH_UNCOUNTED]) +
			      atomic_load(&g.st.graph[TS_GRAPH_UNKNOWN_LAUNCH]);
	o->graph_launches = atomic_load(&g.st.graph[TS_GRAPH_LAUNCH]);
	o->captured = atomic_load(&g.st.graph[TS_GRAPH_CAPTURED]);
	o->host_funcs = atomic_load(&g.st.graph[TS_GRAPH_HOST_FUNC]);
	ts_graph_coll_counts(&o->graph_colls, &o->graph_colls_uncounted);
	o->seg_waits = atomic_load(&g.st.seg_waits);
	o->seg_switches = atomic_load(&g.st.seg_switches);
	o->seg_untimed = atomic_load(&g.st.seg_untimed);
	o->tail_unsampled = atomic_load(&g.st.tail_unsampled);
}

#ifdef TS_SELFTIME
/* Each stream's segments per step since the last call, by how they were timed (opened /
 * of those, more than SMALL_SEGMENT kernels), and its kernels per step. */
void ts_gpu_st_print(uint64_t steps)
{
	static const char *const how[SEG_HOW_N] = { "head", "after_large", "kind", "sample",
						    "untimed", "skipped" };
	double n = steps ? (double)steps : 1;

	for (int i = 0; i < NSTREAMS; i++) {
		uintptr_t key = atomic_load(&g.strm[i].key);
		char line[512];
		int len;

		if (!key)
			continue;
		len = snprintf(line, sizeof(line), "trainscope selftime: stream %d (%#lx) kernels %.1f:",
			       i, (unsigned long)key, (double)atomic_exchange(&st_seg[i].kern, 0) / n);
		for (int h = 0; h < SEG_HOW_N && len > 0 && (size_t)len < sizeof(line); h++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %s %.2f/%.2f", how[h],
					(double)atomic_exchange(&st_seg[i].opened[h], 0) / n,
					(double)atomic_exchange(&st_seg[i].large[h], 0) / n);
		fprintf(stderr, "%s\n", line);
	}
}
#endif
