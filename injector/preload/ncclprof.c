// SPDX-License-Identifier: Apache-2.0
/* The same library as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN=libtrainscope.so;
 * NCCL looks up ncclProfiler_v5 first, then the older versions of ncclprof_compat.c).
 * Coll and P2p events carry op, size, algorithm, communicator hash and sequence
 * number; their KernelCh children carry the GPU globaltimer at each channel's start
 * and stop. A collective's device time is the earliest channel start to the latest
 * channel stop. No CUDA event is involved.
 *
 * Network transfers: a ProxyOp is one channel's traffic with one peer, its ProxyStep
 * children the transfers; a send step's time from the network send being posted
 * (ProxyStepSendWait) to its stop is the network's, summed per communicator and peer,
 * and said once a step by the poller (TS_REC_PEER): a slow link or NIC shows there.
 *
 * Callbacks come from the user's thread (start/stop of the op) and NCCL's proxy thread
 * (channels, proxy ops and steps), so event objects live in fixed pools claimed with
 * compare-and-swap.
 *
 * NCCL calls these through ncclchain.c, which also feeds a user's own profiler plugin
 * (TRAINSCOPE_NCCL_PROFILER_CHAIN) when there is one. */
#include "gpu.h"
#include "nccl.h"
#include "ncclchain.h"
#include "ncclprof.h"
#include "trainscope.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* ---- pools ------------------------------------------------------------------------- */

#define NCOMMS 256
#define NOPS 4096
#define NCHS 16384
#define NPROX 4096
#define NSTEPS 16384
#define NPEERS 1024 /* (communicator, peer) pairs summed */

enum { FREE = 0, USED = 1 };

struct pcomm {
	_Atomic int state;
	uint64_t id;
	uint32_t nranks;
};

struct pop { /* a collective or p2p op */
	uint64_t type; /* first: handles are told apart by it */
	_Atomic int state;
	struct pcomm *comm;
	uint16_t op, algo;
	uint8_t nch;
	uint64_t bytes, seq, step, t_host_ns;
	_Atomic int ch_started, ch_stopped;
	_Atomic bool host_done, finished, hang_said;
	_Atomic uint64_t gpu_start, gpu_stop;
};

struct pch { /* one channel of an op's kernel */
	uint64_t type;
	_Atomic int state;
	struct pop *op;
	uint64_t start, stop;
};

struct pprox { /* a proxy op: one channel's transfers with one peer */
	uint64_t type;
	_Atomic int state;
	struct pcomm *comm;
	int peer;
};

struct pstep { /* one transfer of a proxy op */
	uint64_t type;
	_Atomic int state;
	struct pprox *op;
	uint64_t t_posted, size;
};

struct ppeer { /* sends to one peer of one communicator */
	_Atomic uint64_t key; /* 0: free */
	_Atomic bool ready;   /* comm and peer written */
	uint64_t comm;
	uint32_t peer;
	_Atomic uint64_t bytes, ns, n;
	uint64_t said_bytes, said_ns, said_n; /* the poller's: what it has emitted */
};

static struct {
	struct pcomm comm[NCOMMS];
	struct pop op[NOPS];
	struct pch ch[NCHS];
	struct pprox prox[NPROX];
	struct pstep step[NSTEPS];
	struct ppeer peer[NPEERS];
	_Atomic uint32_t op_hint, ch_hint, prox_hint, step_hint;
	_Atomic uint64_t pool_empty;
	_Atomic bool kernel_ch_seen;
} P;

#define CLAIM(pool, n, hint)                                                                \
	({                                                                                   \
		__typeof__(&(pool)[0]) got_ = NULL;                                          \
		uint32_t h_ = atomic_fetch_add_explicit(&(hint), 1, memory_order_relaxed);   \
		for (uint32_t k_ = 0; k_ < (n) && !got_; k_++) {                             \
			__typeof__(&(pool)[0]) c_ = &(pool)[(h_ + k_) % (n)];                \
			int f_ = FREE;                                                       \
			if (atomic_load_explicit(&c_->state, memory_order_relaxed) == FREE &&  \
			    atomic_compare_exchange_strong(&c_->state, &f_, USED))           \
				got_ = c_;                                                   \
		}                                                                            \
		if (!got_)                                                                   \
			atomic_fetch_add_explicit(&P.pool_empty, 1, memory_order_relaxed);   \
		got_;                                                                        \
	})

static void atomic_min_u64(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t cur = atomic_load(v);

	while ((cur == 0 || x < cur) && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static void atomic_max_u64(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t cur = atomic_load(v);

	while (x > cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static void op_finish(struct pop *o)
{
	bool no = false;

	if (!atomic_compare_exchange_strong(&o->finished, &no, true))
		return;
	uint64_t a = atomic_load(&o->gpu_start), b = atomic_load(&o->gpu_stop);
	struct ts_rec r = { .type = TS_REC_COLL, .kind = (uint16_t)(o->op | o->algo << 8),
			    .t_ns = o->t_host_ns, .dur_ns = a && b > a ? b - a : 0,
			    .nranks = o->comm ? o->comm->nranks : 1,
			    .coll = { .bytes = o->bytes, .step_tag = o->step + 1,
				      .comm = o->comm ? o->comm->id : 0, .seq = o->seq } };
	ts_emit(&r);
	atomic_store_explicit(&o->state, FREE, memory_order_release);
}

static bool op_complete(struct pop *o)
{
	int stopped = atomic_load(&o->ch_stopped);

	if (!atomic_load(&o->host_done))
		return false;
	if (!atomic_load(&P.kernel_ch_seen) || o->nch == 0)
		return true; /* this NCCL gives no channel events: the host side is all */
	return stopped >= o->nch && stopped >= atomic_load(&o->ch_started);
}

/* ---- callbacks --------------------------------------------------------------------- */

int ts_prof_init(void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
		 int nranks, int rank, ts_nccl_logger log)
{
	struct pcomm *c;

	struct ts_rec announce = { .type = TS_REC_COMM,
				   .comm = { .hash = comm_id,
					     .members = nranks > 0 ? (uint64_t)nranks : 1,
					     .rank = rank > 0 ? (uint64_t)rank : 0 } };

	(void)name, (void)nnodes, (void)log;
	/* NCCL's own name for the communicator, the same on every member: hang reports
	 * through the plugin carry it */
	ts_emit(&announce);
	*ctx = NULL;
	*mask = 0;
	c = CLAIM(P.comm, NCOMMS, P.op_hint);
	if (!c)
		return 0; /* NCCL runs on without us for this communicator */
	c->id = comm_id;
	c->nranks = nranks > 0 ? (uint32_t)nranks : 1;
	*ctx = c;
	*mask = TS_PROF_COLL | TS_PROF_P2P | TS_PROF_KERNEL_CH | TS_PROF_PROXY_OP |
		TS_PROF_PROXY_STEP;
	ts_gpu_set_plugin_active();
	return 0;
}

static void start_op(struct pcomm *c, void **handle, const ts_prof_descr_v5 *d)
{
	struct pop *o = CLAIM(P.op, NOPS, P.op_hint);
	bool coll = d->type == TS_PROF_COLL;
	const char *dtype = coll ? d->coll.dtype : d->p2p.dtype;
	size_t count = coll ? d->coll.count : d->p2p.count;
	unsigned op = ts_nccl_op_from_name(coll ? d->coll.func : d->p2p.func);

	if (!o)
		return;
	o->type = d->type;
	o->comm = c;
	o->op = (uint16_t)op;
	o->algo = coll ? (uint16_t)ts_nccl_algo(d->coll.algo) : 0;
	o->nch = coll ? d->coll.nchannels : d->p2p.nchannels;
	o->seq = coll ? d->coll.seq : 0;
	o->bytes = ts_nccl_bytes(op, count, ts_nccl_type_size_named(dtype), c ? c->nranks : 1);
	o->step = atomic_load_explicit(&ts_lib.step, memory_order_relaxed);
	o->t_host_ns = ts_mono_ns();
	atomic_store(&o->ch_started, 0);
	atomic_store(&o->ch_stopped, 0);
	atomic_store(&o->gpu_start, 0);
	atomic_store(&o->gpu_stop, 0);
	atomic_store(&o->host_done, false);
	atomic_store(&o->hang_said, false);
	atomic_store(&o->finished, false);
	*handle = o;
}

static void start_ch(void **handle, const ts_prof_descr_v5 *d)
{
	struct pop *o = d->parent;
	struct pch *ch;

	if (!o || (o->type != TS_PROF_COLL && o->type != TS_PROF_P2P) ||
	    !(ch = CLAIM(P.ch, NCHS, P.ch_hint)))
		return;
	atomic_store_explicit(&P.kernel_ch_seen, true, memory_order_relaxed);
	ch->type = TS_PROF_KERNEL_CH;
	ch->op = o;
	ch->start = d->kernel_ch.ptimer;
	ch->stop = 0;
	atomic_fetch_add(&o->ch_started, 1);
	if (ch->start)
		atomic_min_u64(&o->gpu_start, ch->start);
	*handle = ch;
}

static void start_prox(struct pcomm *c, void **handle, const ts_prof_descr_v5 *d)
{
	struct pprox *p = c && d->proxy_op.is_send == 1 ? CLAIM(P.prox, NPROX, P.prox_hint) : NULL;

	if (!p)
		return; /* receives wait for their sender too: only sends time the network */
	p->type = TS_PROF_PROXY_OP;
	p->comm = c;
	p->peer = d->proxy_op.peer;
	*handle = p;
}

static void start_step(void **handle, const ts_prof_descr_v5 *d)
{
	struct pprox *p = d->parent;
	struct pstep *s;

	if (!p || p->type != TS_PROF_PROXY_OP || !(s = CLAIM(P.step, NSTEPS, P.step_hint)))
		return;
	s->type = TS_PROF_PROXY_STEP;
	s->op = p;
	s->t_posted = s->size = 0;
	*handle = s;
}

int ts_prof_start(void *ctx, void **handle, ts_prof_descr_v5 *d)
{
	TS_ST_BEGIN(st);
	*handle = NULL;
	if (d && !ts_paused()) {
		if (d->type == TS_PROF_COLL || d->type == TS_PROF_P2P)
			start_op(ctx, handle, d);
		else if (d->type == TS_PROF_KERNEL_CH)
			start_ch(handle, d);
		else if (d->type == TS_PROF_PROXY_OP)
			start_prox(ctx, handle, d);
		else if (d->type == TS_PROF_PROXY_STEP)
			start_step(handle, d);
	}
	TS_ST_END(TS_ST_PROF, st);
	return 0;
}

int ts_prof_record(void *handle, int state, ts_prof_state_args_v5 *args)
{
	TS_ST_BEGIN(st);
	uint64_t type = handle ? *(uint64_t *)handle : 0;

	if (type == TS_PROF_KERNEL_CH && state == TS_PROF_KERNEL_CH_STOP && args) {
		((struct pch *)handle)->stop = args->kernel_ch.ptimer;
	} else if (type == TS_PROF_PROXY_STEP && state == TS_PROF_STEP_SEND_WAIT) {
		struct pstep *s = handle;
		s->t_posted = ts_mono_ns();
		s->size = args ? args->proxy_step.size : 0;
	}
	TS_ST_END(TS_ST_PROF, st);
	return 0;
}

static uint64_t peer_key(uint64_t comm, uint32_t peer)
{
	uint64_t x = comm ^ ((uint64_t)peer + 1) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 29;
	return x | 1;
}

/* The pair's sums, made on first sight. */
static struct ppeer *peer_get(uint64_t comm, uint32_t peer)
{
	uint64_t key = peer_key(comm, peer);

	for (uint32_t i = 0, h = (uint32_t)(key >> 20); i < NPEERS; i++) {
		struct ppeer *p = &P.peer[(h + i) % NPEERS];
		uint64_t cur = atomic_load_explicit(&p->key, memory_order_acquire);
		if (cur == key)
			return p;
		if (!cur && atomic_compare_exchange_strong(&p->key, &cur, key)) {
			p->comm = comm;
			p->peer = peer;
			atomic_store_explicit(&p->ready, true, memory_order_release);
			return p;
		}
		if (cur == key)
			return p;
	}
	atomic_fetch_add_explicit(&P.pool_empty, 1, memory_order_relaxed); /* pairs past NPEERS */
	return NULL;
}

static void step_stop(struct pstep *s)
{
	struct pprox *o = s->op;
	struct ppeer *p;

	if (s->t_posted && o->peer >= 0 && (p = peer_get(o->comm->id, (uint32_t)o->peer))) {
		atomic_fetch_add_explicit(&p->bytes, s->size, memory_order_relaxed);
		atomic_fetch_add_explicit(&p->ns, ts_mono_ns() - s->t_posted, memory_order_relaxed);
		atomic_fetch_add_explicit(&p->n, 1, memory_order_relaxed);
	}
	atomic_store_explicit(&s->state, FREE, memory_order_release);
}

int ts_prof_stop(void *handle)
{
	TS_ST_BEGIN(st);
	uint64_t type = handle ? *(uint64_t *)handle : 0;

	if (type == TS_PROF_KERNEL_CH) {
		struct pch *ch = handle;
		struct pop *o = ch->op;
		if (ch->stop)
			atomic_max_u64(&o->gpu_stop, ch->stop);
		atomic_fetch_add(&o->ch_stopped, 1);
		atomic_store_explicit(&ch->state, FREE, memory_order_release);
		if (op_complete(o))
			op_finish(o);
	} else if (type == TS_PROF_COLL || type == TS_PROF_P2P) {
		struct pop *o = handle;
		atomic_store(&o->host_done, true);
		if (op_complete(o))
			op_finish(o);
	} else if (type == TS_PROF_PROXY_STEP) {
		step_stop(handle);
	} else if (type == TS_PROF_PROXY_OP) {
		atomic_store_explicit(&((struct pprox *)handle)->state, FREE, memory_order_release);
	}
	TS_ST_END(TS_ST_PROF, st);
	return 0;
}

int ts_prof_finalize(void *ctx)
{
	struct pcomm *c = ctx;

	if (c)
		atomic_store(&c->state, FREE);
	return 0;
}

/* Through the chain: ours alone unless TRAINSCOPE_NCCL_PROFILER_CHAIN names a plugin. */
TS_EXPORT ts_profiler_v5 ncclProfiler_v5 = {
	.name = "trainscope",
	.init = ts_chain_init,
	.start_event = ts_chain_start,
	.stop_event = ts_chain_stop,
	.record_event_state = ts_chain_record,
	.finalize = ts_chain_finalize,
};

/* From the poller: an op the GPU has not finished within the hang timeout. */
void ts_prof_hang_scan(uint64_t now, uint64_t limit)
{
	for (int i = 0; i < NOPS; i++) {
		struct pop *o = &P.op[i];
		/* finished stays true from the slot's last use until start_op has filled it */
		if (atomic_load_explicit(&o->state, memory_order_acquire) != USED ||
		    atomic_load(&o->finished) || atomic_load(&o->hang_said) || !o->t_host_ns ||
		    now <= o->t_host_ns || now - o->t_host_ns < limit)
			continue;
		atomic_store(&o->hang_said, true);
		ts_report_hang(o->op, o->comm ? o->comm->id : 0, o->seq, o->step,
			       now - o->t_host_ns);
	}
}

/* From the poller, once a step: each pair's sends since the last time. */
void ts_prof_flush_peers(void)
{
	for (int i = 0; i < NPEERS; i++) {
		struct ppeer *p = &P.peer[i];
		if (!atomic_load_explicit(&p->ready, memory_order_acquire))
			continue;
		uint64_t n = atomic_load_explicit(&p->n, memory_order_relaxed);
		if (n == p->said_n)
			continue;
		uint64_t bytes = atomic_load_explicit(&p->bytes, memory_order_relaxed);
		uint64_t ns = atomic_load_explicit(&p->ns, memory_order_relaxed);
		struct ts_rec r = { .type = TS_REC_PEER, .peer_rank = p->peer, .t_ns = ts_mono_ns(),
				    .dur_ns = ns - p->said_ns,
				    .peer = { .bytes = bytes - p->said_bytes, .comm = p->comm,
					      .sends = n - p->said_n } };
		ts_emit(&r);
		p->said_n = n, p->said_bytes = bytes, p->said_ns = ns;
	}
}
