// SPDX-License-Identifier: Apache-2.0
/* A user's NCCL profiler plugin chained behind trainscope's.
 *
 * NCCL loads one profiler plugin, the one NCCL_PROFILER_PLUGIN names. Where a job already
 * has its own (NCCL Inspector, a vendor's), trainscope run and the webhook name ours there
 * and move theirs to TRAINSCOPE_NCCL_PROFILER_CHAIN. The first init loads it as NCCL
 * would (the name as given, then libnccl-profiler-NAME.so) and takes its newest struct we
 * can forward: ncclProfiler_v5, else ncclProfiler_v4 (given v4's descriptors and parents
 * as NCCL's own v4 adapter gives them). Before v4 the layouts differ and carry no device
 * times, and NCCL's v6 and later are not what NCCL gives us (we export v5), so a plugin
 * with only those is refused with a line on stderr. From then on every callback goes to
 * both plugins: NCCL gets the union of the two activation masks, and each plugin sees
 * only the event types it asked for.
 *
 * Contexts and handles. A chained communicator's context is a struct cctx holding both
 * contexts. An event the chained plugin took goes back to NCCL as a struct pair of both
 * handles (ours may be NULL); one only ours took goes back as our handle, unchanged.
 * Contexts and pairs live in static arrays and are told apart from our own by address,
 * so without a chained plugin each callback costs one comparison more. A parent handle
 * is split the same way before each plugin sees its child. NCCL may start a child (a
 * channel, a proxy op) after its parent has stopped, as it may for a plugin alone, so a
 * pair released at stop keeps its halves until the slot is taken again, a round of the
 * pool later (slots are claimed from a moving hint).
 *
 * Hot path (start, stop, record): no lock, no system call, no allocation. When every pair
 * is taken the chained plugin misses that event, which is counted and said on stderr at
 * the next finalize. */
#include "ncclchain.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef TS_SYMVER
/* glibc 2.34 moved these into libc under a new version: take the baseline's, as
 * glibc_compat.h does for dlopen (tests/test_abi.c checks) */
TS_SYMVER(dlclose);
TS_SYMVER(dlerror);
#endif

#define CHAIN_ENV "TRAINSCOPE_NCCL_PROFILER_CHAIN"
#define SELF_NAME "libtrainscope.so"
#define NCTX 256     /* communicators chained at once (ncclprof.c has as many) */
#define NPAIRS 16384 /* the chained plugin's events in flight (ncclprof.c's step pool) */

_Static_assert(sizeof(void *) != 8 || sizeof(ts_prof_descr_v5) == 112,
	       "ts_prof_descr_v5 must be NCCL's ncclProfilerEventDescr_v5_t: it is copied whole");

enum { FREE = 0, USED = 1 };
enum { NOT_LOADED = 0, LOADING = 1, LOADED = 2 };

struct cctx { /* one communicator's two contexts */
	_Atomic int state;
	void *ours, *theirs;
	uint64_t our_mask, their_mask;
};

struct pair { /* one event's two handles */
	_Atomic int state;
	/* atomic: a child started after its parent's stop may read a released pair */
	_Atomic(void *) ours, theirs;
};

static struct {
	_Atomic int loaded;
	const ts_profiler_v5 *v5; /* the chained plugin's struct: one of the two, or neither */
	const ts_profiler_v4 *v4;
	char name[256];
	_Atomic int last_mask; /* its init's last: NCCL hands each init the mask left before */
	_Atomic bool said_chained, said_init, said_ctx_full, said_old;
	_Atomic uint64_t pair_full, pair_full_said;
	_Atomic uint32_t pair_hint;
	struct cctx ctx[NCTX];
	struct pair pair[NPAIRS];
} C;

/* ---- loading (cold) ---------------------------------------------------------------- */

/* The one line a plugin that is not chained gets. */
static void say_not_chained(const char *name, const char *why)
{
	fprintf(stderr, "trainscope: NCCL profiler plugin %s not chained: %s\n", name, why);
}

/* Unset, empty or "none" (NCCL's word for no plugin): nothing to chain, nothing to say. */
static bool names_nothing(const char *name)
{
	return !name || !*name || !strcasecmp(name, "none");
}

/* A file named as ours, wherever it is: a second copy of the library would load as a
 * second instance, with its own ring and hooks. The same file under another name is
 * caught once loaded (chain_open). */
static bool names_self(const char *name)
{
	const char *slash = strrchr(name, '/');

	return !strcmp(slash ? slash + 1 : name, SELF_NAME);
}

/* dlopen as NCCL's plugin loader does: the name as given; then, for a short name (no '/',
 * not lib*.so), libnccl-profiler-NAME.so. The handle, or NULL with the reason in why:
 * the first try's, unless that was only "not found" and the second try failed too. */
static void *open_like_nccl(const char *name, char *why, size_t n)
{
	size_t len = strlen(name);
	char alt[300];
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	const char *err;

	if (h)
		return h;
	err = dlerror();
	snprintf(why, n, "%s", err ? err : "cannot be loaded");
	if (strchr(name, '/') || (!strncmp(name, "lib", 3) && len >= 3 && !strcmp(name + len - 3, ".so")))
		return NULL;
	if ((size_t)snprintf(alt, sizeof(alt), "libnccl-profiler-%s.so", name) >= sizeof(alt))
		return NULL;
	h = dlopen(alt, RTLD_NOW | RTLD_LOCAL);
	err = h ? NULL : dlerror();
	if (err && strstr(why, "No such file"))
		snprintf(why, n, "%s", err);
	return h;
}

/* Loads the plugin name and takes its struct (C.v5 or C.v4). 0, or a negative errno with
 * the reason in why: -ELOOP it is ours, -ENOENT it cannot be loaded, -ENOTSUP it has
 * neither v5 nor v4 (only an older or a newer version, or none), -EINVAL a callback is
 * missing. */
static int chain_open(const char *name, char *why, size_t n)
{
	const ts_profiler_v5 *v5 = NULL;
	const ts_profiler_v4 *v4 = NULL;
	const char *old = NULL;
	void *h;
	int err = 0;

	if (names_self(name)) {
		snprintf(why, n, "it is trainscope's own library");
		return -ELOOP;
	}
	h = open_like_nccl(name, why, n);
	if (!h)
		return -ENOENT;
	/* the real dlsym: this library's own stands in front of it (dlsym.c) */
	if (!(v5 = ts_real_dlsym(h, "ncclProfiler_v5")))
		v4 = ts_real_dlsym(h, "ncclProfiler_v4");
	if (!v5 && !v4) {
		/* named in the line: newer ones (NCCL after 2.28) first, then the old */
		static const char *const others[] = { "ncclProfiler_v7", "ncclProfiler_v6",
						      "ncclProfiler_v3", "ncclProfiler_v2",
						      "ncclProfiler_v1" };
		for (size_t i = 0; i < sizeof(others) / sizeof(others[0]) && !old; i++)
			old = ts_real_dlsym(h, others[i]) ? others[i] : NULL;
		if (old)
			snprintf(why, n, "its profiler API is %s; trainscope forwards only "
					 "ncclProfiler_v5 and ncclProfiler_v4 (unsupported version)", old);
		else
			snprintf(why, n, "it exports no ncclProfiler_v5 or ncclProfiler_v4");
		err = -ENOTSUP;
		goto out;
	}
	if (v5 && v5->init == ts_chain_init) { /* this very library under another name */
		snprintf(why, n, "it is trainscope's own library");
		err = -ELOOP;
		goto out;
	}
	if (v5 ? !v5->init || !v5->start_event || !v5->stop_event || !v5->record_event_state ||
			 !v5->finalize
	       : !v4->init || !v4->start_event || !v4->stop_event || !v4->record_event_state ||
			 !v4->finalize) {
		snprintf(why, n, "its ncclProfiler_v%d lacks a callback", v5 ? 5 : 4);
		err = -EINVAL;
		goto out;
	}
	C.v5 = v5;
	C.v4 = v4;
	return 0; /* kept loaded for the process's life: NCCL may init communicators again */
out:
	dlclose(h);
	return err;
}

/* Once per process, from the first init: NCCL may init communicators from several
 * threads, and the others wait for this one (cold: pthread_once would import a symbol
 * newer than the library's glibc baseline). */
static void load_once(void)
{
	int expect = NOT_LOADED;
	const char *name;
	char why[512];

	if (atomic_load_explicit(&C.loaded, memory_order_acquire) == LOADED)
		return;
	if (!atomic_compare_exchange_strong(&C.loaded, &expect, LOADING)) {
		while (atomic_load_explicit(&C.loaded, memory_order_acquire) != LOADED)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		return;
	}
	name = getenv(CHAIN_ENV);
	if (!names_nothing(name)) {
		snprintf(C.name, sizeof(C.name), "%s", name);
		if (chain_open(name, why, sizeof(why)))
			say_not_chained(name, why);
	}
	atomic_store_explicit(&C.loaded, LOADED, memory_order_release);
}

void ts_chain_refuse_old_nccl(void)
{
	const char *name = getenv(CHAIN_ENV);

	if (!names_nothing(name) && !names_self(name) && !atomic_exchange(&C.said_old, true))
		say_not_chained(name, "this NCCL's profiler API is older than v4");
}

/* ---- pools ------------------------------------------------------------------------- */

static inline bool is_cctx(const void *p)
{
	return (uintptr_t)p - (uintptr_t)C.ctx < sizeof(C.ctx);
}

static inline bool is_pair(const void *p)
{
	return (uintptr_t)p - (uintptr_t)C.pair < sizeof(C.pair);
}

/* Cold: a free context, or NULL. */
static struct cctx *ctx_claim(void)
{
	for (int i = 0; i < NCTX; i++) {
		int f = FREE;
		if (atomic_compare_exchange_strong(&C.ctx[i].state, &f, USED))
			return &C.ctx[i];
	}
	return NULL;
}

/* Hot: a free pair from the next hint on, or NULL (counted). */
static struct pair *pair_claim(void)
{
	uint32_t h = atomic_fetch_add_explicit(&C.pair_hint, 1, memory_order_relaxed);

	for (uint32_t k = 0; k < NPAIRS; k++) {
		struct pair *p = &C.pair[(h + k) % NPAIRS];
		int f = FREE;
		if (atomic_load_explicit(&p->state, memory_order_relaxed) == FREE &&
		    atomic_compare_exchange_strong(&p->state, &f, USED))
			return p;
	}
	atomic_fetch_add_explicit(&C.pair_full, 1, memory_order_relaxed);
	return NULL;
}

/* Hot: handle h as one plugin knows it: its half of a pair; our own handle is ours. */
static inline void *side(void *h, bool theirs)
{
	struct pair *p = h;

	if (is_pair(h))
		return atomic_load_explicit(theirs ? &p->theirs : &p->ours, memory_order_relaxed);
	return theirs ? NULL : h;
}

/* Hot: d for one plugin, its parents its own handles. */
static inline void rebase(ts_prof_descr_v5 *e, const ts_prof_descr_v5 *d, bool theirs)
{
	*e = *d;
	e->parent = side(d->parent, theirs);
	if (d->type == TS_PROF_COLL)
		e->coll.parent_group = side(d->coll.parent_group, theirs);
	else if (d->type == TS_PROF_P2P)
		e->p2p.parent_group = side(d->p2p.parent_group, theirs);
}

/* ---- a v4 plugin behind NCCL's v5 ---------------------------------------------------- */

/* Hot: e in v4's layout, as NCCL's own v4 adapter gives it (a collective's or p2p's
 * parent is its group); a type v4 does not know never comes (its mask is cut to v4's). */
static int fwd_v4_start(void *ctx, void **handle, const ts_prof_descr_v5 *e)
{
	ts_prof_descr_v4 a = { .type = (uint8_t)e->type, .parent = e->parent, .rank = e->rank };

	switch (e->type) {
	case TS_PROF_COLL:
		a.parent = e->coll.parent_group;
		a.coll.seq = e->coll.seq;
		a.coll.func = e->coll.func;
		a.coll.sendbuf = e->coll.sendbuf;
		a.coll.recvbuf = e->coll.recvbuf;
		a.coll.count = e->coll.count;
		a.coll.root = e->coll.root;
		a.coll.dtype = e->coll.dtype;
		a.coll.nchannels = e->coll.nchannels;
		a.coll.nwarps = e->coll.nwarps;
		a.coll.algo = e->coll.algo;
		a.coll.proto = e->coll.proto;
		break;
	case TS_PROF_P2P:
		a.parent = e->p2p.parent_group;
		a.p2p.func = e->p2p.func;
		a.p2p.buf = e->p2p.buf;
		a.p2p.dtype = e->p2p.dtype;
		a.p2p.count = e->p2p.count;
		a.p2p.peer = e->p2p.peer;
		a.p2p.nchannels = e->p2p.nchannels;
		break;
	case TS_PROF_PROXY_OP:
		a.proxy_op.pid = e->proxy_op.pid;
		a.proxy_op.channel = e->proxy_op.channel;
		a.proxy_op.peer = e->proxy_op.peer;
		a.proxy_op.nsteps = e->proxy_op.nsteps;
		a.proxy_op.chunk = e->proxy_op.chunk;
		a.proxy_op.is_send = e->proxy_op.is_send;
		break;
	case TS_PROF_PROXY_STEP:
		a.proxy_step.step = e->proxy_step.step;
		break;
	case TS_PROF_KERNEL_CH:
		a.kernel_ch.channel = e->kernel_ch.channel;
		a.kernel_ch.ptimer = e->kernel_ch.ptimer;
		break;
	case TS_PROF_NET_PLUGIN:
		a.net.id = e->net.id;
		a.net.data = e->net.data;
		break;
	case TS_PROF_GROUP:
	case TS_PROF_PROXY_CTRL:
		break;
	default:
		return 0;
	}
	return C.v4->start_event(ctx, handle, &a);
}

/* Hot: v5's state arguments are v4's union with room to spare: the same first bytes. */
static int fwd_v4_record(void *handle, int state, const ts_prof_state_args_v5 *args)
{
	ts_prof_state_args_v4 a;

	if (args)
		memcpy(&a, args, sizeof(a));
	return C.v4->record_event_state(handle, state, args ? &a : NULL);
}

/* ---- the callbacks NCCL gets --------------------------------------------------------- */

int ts_chain_init(void **ctx, uint64_t comm_id, int *mask, const char *comm_name, int nnodes,
		  int nranks, int rank, ts_nccl_logger log)
{
	struct cctx *c;
	int ours = 0, theirs, err;

	load_once();
	if (!C.v5 && !C.v4)
		return ts_prof_init(ctx, comm_id, mask, comm_name, nnodes, nranks, rank, log);
	c = ctx_claim();
	if (!c) {
		if (!atomic_exchange(&C.said_ctx_full, true))
			fprintf(stderr, "trainscope: NCCL profiler plugin %s not chained for "
					"communicators past the first %d at once\n", C.name, NCTX);
		return ts_prof_init(ctx, comm_id, mask, comm_name, nnodes, nranks, rank, log);
	}
	ts_prof_init(&c->ours, comm_id, &ours, comm_name, nnodes, nranks, rank, log);
	c->our_mask = (unsigned)ours;
	c->theirs = NULL;
	theirs = atomic_load(&C.last_mask);
	err = C.v5 ? C.v5->init(&c->theirs, comm_id, &theirs, comm_name, nnodes, nranks, rank, log)
		   : C.v4->init(&c->theirs, &theirs, comm_name, comm_id, nnodes, nranks, rank, log);
	if (err) { /* as NCCL does with a plugin whose init fails: on without it */
		char why[64];
		snprintf(why, sizeof(why), "its init returned %d", err);
		if (!atomic_exchange(&C.said_init, true))
			say_not_chained(C.name, why);
		*ctx = c->ours;
		*mask = ours;
		atomic_store_explicit(&c->state, FREE, memory_order_release);
		return 0;
	}
	atomic_store(&C.last_mask, theirs);
	c->their_mask = (unsigned)theirs & (C.v4 ? TS_PROF_V4_TYPES : ~0u);
	if (log && !atomic_exchange(&C.said_chained, true))
		log(3 /* NCCL_LOG_INFO */, 1 /* NCCL_INIT */, __FILE__, __LINE__,
		    "PROFILER/Plugin: trainscope chains %s (ncclProfiler_v%d)", C.name,
		    C.v5 ? 5 : 4);
	*ctx = c;
	*mask = (int)(c->our_mask | c->their_mask);
	return 0;
}

int ts_chain_start(void *ctx, void **handle, ts_prof_descr_v5 *d)
{
	struct cctx *c = ctx;
	ts_prof_descr_v5 e;
	struct pair *p;
	void *mine = NULL, *theirs = NULL;
	int err;

	if (!is_cctx(ctx))
		return ts_prof_start(ctx, handle, d); /* nothing chained here: ours alone */
	*handle = NULL;
	if (!d)
		return 0;
	if (d->type & c->our_mask) {
		rebase(&e, d, false);
		ts_prof_start(c->ours, &mine, &e);
	}
	*handle = mine;
	/* no pair: the chained plugin misses this event (counted), as when its own pool is
	 * full; its children then come to it with no parent */
	if (!(d->type & c->their_mask) || !(p = pair_claim()))
		return 0;
	rebase(&e, d, true);
	err = C.v5 ? C.v5->start_event(c->theirs, &theirs, &e) : fwd_v4_start(c->theirs, &theirs, &e);
	if (!theirs) {
		atomic_store_explicit(&p->state, FREE, memory_order_release);
		return err;
	}
	atomic_store_explicit(&p->ours, mine, memory_order_relaxed);
	atomic_store_explicit(&p->theirs, theirs, memory_order_relaxed);
	*handle = p;
	return err;
}

int ts_chain_stop(void *handle)
{
	struct pair *p = handle;
	void *mine, *theirs;
	int err;

	if (!is_pair(handle))
		return ts_prof_stop(handle);
	mine = atomic_load_explicit(&p->ours, memory_order_relaxed);
	theirs = atomic_load_explicit(&p->theirs, memory_order_relaxed);
	if (mine)
		ts_prof_stop(mine);
	err = C.v5 ? C.v5->stop_event(theirs) : C.v4->stop_event(theirs);
	atomic_store_explicit(&p->state, FREE, memory_order_release); /* halves kept */
	return err;
}

int ts_chain_record(void *handle, int state, ts_prof_state_args_v5 *args)
{
	struct pair *p = handle;
	void *mine, *theirs;

	if (!is_pair(handle))
		return ts_prof_record(handle, state, args);
	mine = atomic_load_explicit(&p->ours, memory_order_relaxed);
	theirs = atomic_load_explicit(&p->theirs, memory_order_relaxed);
	if (mine)
		ts_prof_record(mine, state, args);
	return C.v5 ? C.v5->record_event_state(theirs, state, args) : fwd_v4_record(theirs, state, args);
}

int ts_chain_finalize(void *ctx)
{
	struct cctx *c = ctx;
	uint64_t full, said;
	int err = 0;

	if (!is_cctx(ctx))
		return ts_prof_finalize(ctx);
	ts_prof_finalize(c->ours);
	if (c->theirs) /* NCCL finalizes only a context the init made */
		err = C.v5 ? C.v5->finalize(c->theirs) : C.v4->finalize(c->theirs);
	atomic_store_explicit(&c->state, FREE, memory_order_release);
	full = atomic_load(&C.pair_full);
	said = atomic_exchange(&C.pair_full_said, full);
	if (full > said)
		fprintf(stderr, "trainscope: %llu NCCL profiler events not passed to the chained "
				"plugin %s: more than %d of its events were in flight\n",
			(unsigned long long)(full - said), C.name, NPAIRS);
	return err;
}
