// SPDX-License-Identifier: Apache-2.0
/* TEST DOUBLE of a second NCCL profiler plugin: the stand-in for a user's own (NCCL
 * Inspector, a vendor's) that libtrainscope.so chains behind its own when
 * TRAINSCOPE_NCCL_PROFILER_CHAIN names it. It counts the events it is given, checks that
 * every context, handle and parent handed to it is its own, and hands the counts out
 * through tsd_prof2_counts() (profiler2_double.h). Never install or ship it.
 *
 * Built once per ABI (module.mk): PROF2_ABI 5 exports ncclProfiler_v5, 4 ncclProfiler_v4,
 * 3 only ncclProfiler_v3 (a version trainscope does not forward). TSD_PROF2_MASK sets its
 * activation mask (default Group, Coll, P2p, ProxyOp, ProxyStep, NetPlugin: not KernelCh,
 * which trainscope asks for); TSD_PROF2_INIT_FAIL=1 makes its init fail. Under a real
 * NCCL (e2e/gpu), TSD_PROF2_OUT=FILE makes its event pool wrap around instead of filling
 * up, and each finalize appends its counts to FILE. */
#include "ncclprof.h"
#include "profiler2_double.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PROF2_ABI
#define PROF2_ABI 5
#endif

#define MAGIC_EV 0x70726f66u  /* "prof" */
#define MAGIC_CTX 0x63747832u /* "ctx2" */
#define NEVENTS 32768         /* never reused: a test starts fewer */
#define NCTX 16

struct ev {
	uint32_t magic;
	uint64_t type;
};

struct ctx {
	uint32_t magic;
	int mask;
};

static struct ev events[NEVENTS];
static struct ctx ctxs[NCTX];
static _Atomic uint32_t nevents, nctx;
static const char *out_path; /* TSD_PROF2_OUT: a real NCCL's run */
static struct tsd_prof2_counts n;

#define COUNT(field) __atomic_fetch_add(&n.field, 1, __ATOMIC_RELAXED)
#define ADD(field, v) __atomic_fetch_add(&n.field, (v), __ATOMIC_RELAXED)

void tsd_prof2_counts(struct tsd_prof2_counts *out)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	*out = n;
}

static struct ev *own_event(void *h)
{
	struct ev *e = h;

	return e >= events && e < events + NEVENTS && e->magic == MAGIC_EV ? e : NULL;
}

static int type_index(uint64_t type)
{
	int i = type ? __builtin_ctzll(type) : 0;

	return i < TSD_PROF2_TYPES ? i : 0;
}

/* A parent handle: none, or one of its own events. */
static void check_parent(void *parent)
{
	if (!parent)
		return;
	if (own_event(parent))
		COUNT(parented);
	else
		COUNT(bad_parent);
}

static int init_common(void **context, int *mask)
{
	const char *m = getenv("TSD_PROF2_MASK");
	uint32_t i;

	COUNT(inits);
	*context = NULL;
	out_path = getenv("TSD_PROF2_OUT");
	if (getenv("TSD_PROF2_INIT_FAIL"))
		return 3; /* ncclInternalError */
	i = atomic_fetch_add(&nctx, 1);
	if (i >= NCTX)
		return 3;
	ctxs[i] = (struct ctx){ .magic = MAGIC_CTX,
				.mask = m ? (int)strtol(m, NULL, 0)
					  : TS_PROF_GROUP | TS_PROF_COLL | TS_PROF_P2P |
						    TS_PROF_PROXY_OP | TS_PROF_PROXY_STEP |
						    TS_PROF_NET_PLUGIN };
	*context = &ctxs[i];
	*mask = ctxs[i].mask;
	return 0;
}

/* The common part of a start: checks, counts, a new event or NULL. */
static void *start_common(void *context, uint64_t type, void *parent)
{
	struct ctx *c = context;
	struct ev *e;
	uint32_t i;

	if (!c || c < ctxs || c >= ctxs + NCTX || c->magic != MAGIC_CTX) {
		COUNT(bad_ctx);
		return NULL;
	}
	if (!(type & (uint64_t)(unsigned)c->mask))
		COUNT(unasked);
	check_parent(parent);
	i = atomic_fetch_add(&nevents, 1);
	if (out_path)
		i %= NEVENTS;
	if (i >= NEVENTS) {
		COUNT(full);
		return NULL;
	}
	e = &events[i];
	e->type = type;
	e->magic = MAGIC_EV;
	COUNT(start[type_index(type)]);
	return e;
}

static int stop_event(void *handle)
{
	struct ev *e = own_event(handle);

	if (!e)
		COUNT(bad_handle);
	else
		COUNT(stop[type_index(e->type)]);
	return 0;
}

/* The state arguments' first field is the step's size in v4 and v5 alike. */
static int record_state(void *handle, int state, const size_t *size)
{
	struct ev *e = own_event(handle);

	if (!e) {
		COUNT(bad_handle);
		return 0;
	}
	COUNT(records);
	if (e->type == TS_PROF_PROXY_STEP && state == TS_PROF_STEP_SEND_WAIT && size)
		ADD(send_bytes, *size);
	return 0;
}

static int finalize(void *context)
{
	struct ctx *c = context;

	if (!c || c->magic != MAGIC_CTX)
		COUNT(bad_ctx);
	COUNT(finalizes);
	if (out_path) {
		FILE *f = fopen(out_path, "a");
		if (f) {
			fprintf(f, "pid %d colls %llu/%llu p2p %llu proxy_steps %llu records %llu "
				"send_bytes %llu bad %llu\n", (int)getpid(),
				(unsigned long long)n.start[1], (unsigned long long)n.stop[1],
				(unsigned long long)n.start[2], (unsigned long long)n.start[4],
				(unsigned long long)n.records, (unsigned long long)n.send_bytes,
				(unsigned long long)(n.bad_ctx + n.bad_handle + n.bad_parent +
						     n.unasked));
			fclose(f);
		}
	}
	return 0;
}

#if PROF2_ABI == 5
static int init_v5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
		   int nranks, int rank, ts_nccl_logger log)
{
	(void)comm_id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
	return init_common(context, mask);
}

static int start_v5(void *context, void **handle, ts_prof_descr_v5 *d)
{
	*handle = start_common(context, d->type, d->parent);
	/* the group, v4's parent: counted once where it is the parent too */
	if (*handle && d->type == TS_PROF_COLL) {
		if (d->coll.parent_group != d->parent)
			check_parent(d->coll.parent_group);
		ADD(coll_seq_sum, d->coll.seq);
	} else if (*handle && d->type == TS_PROF_P2P) {
		if (d->p2p.parent_group != d->parent)
			check_parent(d->p2p.parent_group);
		ADD(p2p_peer_sum, (uint64_t)d->p2p.peer);
	}
	return 0;
}

static int record_v5(void *handle, int state, ts_prof_state_args_v5 *args)
{
	return record_state(handle, state, args ? &args->proxy_step.size : NULL);
}

ts_profiler_v5 ncclProfiler_v5 = { .name = "tsd-profiler2", .init = init_v5,
				   .start_event = start_v5, .stop_event = stop_event,
				   .record_event_state = record_v5, .finalize = finalize };
#elif PROF2_ABI == 4
static int init_v4(void **context, int *mask, const char *name, uint64_t comm_id, int nnodes,
		   int nranks, int rank, ts_nccl_logger log)
{
	(void)comm_id, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
	return init_common(context, mask);
}

static int start_v4(void *context, void **handle, ts_prof_descr_v4 *d)
{
	*handle = start_common(context, d->type, d->parent);
	if (*handle && d->type == TS_PROF_COLL)
		ADD(coll_seq_sum, d->coll.seq);
	else if (*handle && d->type == TS_PROF_P2P)
		ADD(p2p_peer_sum, (uint64_t)d->p2p.peer);
	return 0;
}

static int record_v4(void *handle, int state, ts_prof_state_args_v4 *args)
{
	return record_state(handle, state, args ? &args->proxy_step.size : NULL);
}

ts_profiler_v4 ncclProfiler_v4 = { .name = "tsd-profiler2", .init = init_v4,
				   .start_event = start_v4, .stop_event = stop_event,
				   .record_event_state = record_v4, .finalize = finalize };
#else
static int init_v1(void **context, int *mask)
{
	return init_common(context, mask);
}

static int start_v1(void *context, void **handle, void *d)
{
	(void)d;
	*handle = start_common(context, 0, NULL);
	return 0;
}

static int record_v1(void *handle, int state, void *args)
{
	(void)args;
	return record_state(handle, state, NULL);
}

ts_profiler_v1 ncclProfiler_v3 = { .name = "tsd-profiler2", .init = init_v1,
				   .start_event = start_v1, .stop_event = stop_event,
				   .record_event_state = record_v1, .finalize = finalize };
#endif
