// SPDX-License-Identifier: Apache-2.0
/* Older NCCL profiler ABIs as thin shims over the v5 callbacks of the chain
 * (ncclchain.c), which feeds trainscope's own (ncclprof.c) and a chained plugin's.
 *
 * v4 has everything the plugin uses, KernelCh pTimers included: its descriptors are
 * copied whole into v5's layout, so that a chained plugin gets all v4 said. v1 to v3
 * have no device timestamps, so they take no events (an empty activation mask):
 * collectives are then timed by the API hooks' CUDA events, as without any plugin.
 * Exporting them still lets those NCCL versions load the plugin cleanly instead of
 * failing over a missing symbol. */
#include "gpu.h"
#include "ncclchain.h"
#include "ncclprof.h"

#include <stdio.h>
#include <string.h>

static int v4_init(void **ctx, int *mask, const char *name, uint64_t comm_id, int nnodes,
		   int nranks, int rank, ts_nccl_logger log)
{
	return ts_chain_init(ctx, comm_id, mask, name, nnodes, nranks, rank, log);
}

/* Every field: v4's parent of a collective or p2p is its group, v5's parent_group. */
static void v4_to_v5(const ts_prof_descr_v4 *a, ts_prof_descr_v5 *b)
{
	*b = (ts_prof_descr_v5){ .type = a->type, .parent = a->parent, .rank = a->rank };
	if (a->type == TS_PROF_COLL) {
		b->coll.seq = a->coll.seq;
		b->coll.func = a->coll.func;
		b->coll.sendbuf = a->coll.sendbuf;
		b->coll.recvbuf = a->coll.recvbuf;
		b->coll.count = a->coll.count;
		b->coll.root = a->coll.root;
		b->coll.dtype = a->coll.dtype;
		b->coll.nchannels = a->coll.nchannels;
		b->coll.nwarps = a->coll.nwarps;
		b->coll.algo = a->coll.algo;
		b->coll.proto = a->coll.proto;
		b->coll.parent_group = a->parent;
	} else if (a->type == TS_PROF_P2P) {
		b->p2p.func = a->p2p.func;
		b->p2p.buf = a->p2p.buf;
		b->p2p.count = a->p2p.count;
		b->p2p.dtype = a->p2p.dtype;
		b->p2p.peer = a->p2p.peer;
		b->p2p.nchannels = a->p2p.nchannels;
		b->p2p.parent_group = a->parent;
	} else if (a->type == TS_PROF_PROXY_OP) {
		b->proxy_op.pid = a->proxy_op.pid;
		b->proxy_op.channel = a->proxy_op.channel;
		b->proxy_op.peer = a->proxy_op.peer;
		b->proxy_op.nsteps = a->proxy_op.nsteps;
		b->proxy_op.chunk = a->proxy_op.chunk;
		b->proxy_op.is_send = a->proxy_op.is_send;
	} else if (a->type == TS_PROF_PROXY_STEP) {
		b->proxy_step.step = a->proxy_step.step;
	} else if (a->type == TS_PROF_KERNEL_CH) {
		b->kernel_ch.channel = a->kernel_ch.channel;
		b->kernel_ch.ptimer = a->kernel_ch.ptimer;
	} else if (a->type == TS_PROF_NET_PLUGIN) {
		b->net.id = a->net.id;
		b->net.data = a->net.data;
	}
}

static int v4_start(void *ctx, void **handle, ts_prof_descr_v4 *d)
{
	ts_prof_descr_v5 d5;

	*handle = NULL;
	if (!d)
		return 0;
	v4_to_v5(d, &d5);
	return ts_chain_start(ctx, handle, &d5);
}

/* v4's state arguments are v5's first bytes (v5 only has more room). */
static int v4_record(void *handle, int state, ts_prof_state_args_v4 *args)
{
	ts_prof_state_args_v5 a5 = { 0 };

	if (args)
		memcpy(&a5, args, sizeof(*args));
	return ts_chain_record(handle, state, args ? &a5 : NULL);
}

TS_EXPORT ts_profiler_v4 ncclProfiler_v4 = {
	.name = "trainscope",
	.init = v4_init,
	.start_event = v4_start,
	.stop_event = ts_chain_stop,
	.record_event_state = v4_record,
	.finalize = ts_chain_finalize,
};

static int old_init(void **ctx, int *mask)
{
	static _Atomic int said;

	*ctx = NULL;
	*mask = 0;
	if (!atomic_exchange(&said, 1))
		fprintf(stderr, "trainscope: this NCCL's profiler API (before v4) has no device "
				"timestamps; collectives are timed by the API hooks\n");
	ts_chain_refuse_old_nccl();
	return 0;
}

static int old_start(void *ctx, void **handle, void *d)
{
	(void)ctx, (void)d;
	*handle = NULL;
	return 0;
}

static int old_handle(void *handle)
{
	(void)handle;
	return 0;
}

static int old_record(void *handle, int state, void *args)
{
	(void)handle, (void)state, (void)args;
	return 0;
}

#define OLD_PROFILER(sym)                                                                   \
	TS_EXPORT ts_profiler_v1 sym = { .name = "trainscope", .init = old_init,              \
					 .start_event = old_start, .stop_event = old_handle,  \
					 .record_event_state = old_record,                    \
					 .finalize = old_handle }
OLD_PROFILER(ncclProfiler_v3);
OLD_PROFILER(ncclProfiler_v2);
OLD_PROFILER(ncclProfiler_v1);
