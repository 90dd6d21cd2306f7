/* The same library as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN=libtrainscope.so;
 * NCCL looks up ncclProfiler_v5 first, then the older versions of ncclprof_compat.c).
 * Coll and P2p events carry op, size, algorithm, communicator hash and sequence
 * number; their KernelCh children carry the GPU globaltimer at each channel's start
 * and stop. A collective's device time is the earliest channel start to the latest
 * channel stop. No CUDA event is involved.
 *
 * Callbacks come from the user's thread (start/stop of the op) and NCCL's proxy thread
 * (channels), so event objects live in fixed pools claimed with compare-and-swap. */
#include "gpu.h"
#include "nccl.h"
#include "ncclprof.h"
#include "trainscope.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* ---- pools ------------------------------------------------------------------------- */

#define NCOMMS 256
#define NOPS 4096
#define NCHS 16384

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

static struct {
	struct pcomm comm[NCOMMS];
	struct pop op[NOPS];
	struct pch ch[NCHS];
	_Atomic uint32_t op_hint, ch_hint;
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
			    .a = o->bytes, .b = o->step + 1, .c = o->comm ? o->comm->id : 0,
			    .d = o->seq, .reserved = o->comm ? o->comm->nranks : 1 };
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

	struct ts_rec announce = { .type = TS_REC_COMM, .a = comm_id,
				   .b = nranks > 0 ? (uint64_t)nranks : 1,
				   .c = rank > 0 ? (uint64_t)rank : 0 };

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
	*mask = TS_PROF_COLL | TS_PROF_P2P | TS_PROF_KERNEL_CH;
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

int ts_prof_start(void *ctx, void **handle, ts_prof_descr_v5 *d)
{
	*handle = NULL;
	if (!d)
		return 0;
	if (d->type == TS_PROF_COLL || d->type == TS_PROF_P2P)
		start_op(ctx, handle, d);
	else if (d->type == TS_PROF_KERNEL_CH)
		start_ch(handle, d);
	return 0;
}

int ts_prof_record(void *handle, int state, ts_prof_state_args_v5 *args)
{
	struct pch *ch = handle;

	if (ch && ch->type == TS_PROF_KERNEL_CH && state == TS_PROF_KERNEL_CH_STOP && args)
		ch->stop = args->kernel_ch.ptimer;
	return 0;
}

int ts_prof_stop(void *handle)
{
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
	}
	return 0;
}

int ts_prof_finalize(void *ctx)
{
	struct pcomm *c = ctx;

	if (c)
		atomic_store(&c->state, FREE);
	return 0;
}

TS_EXPORT ts_profiler_v5 ncclProfiler_v5 = {
	.name = "trainscope",
	.init = ts_prof_init,
	.start_event = ts_prof_start,
	.stop_event = ts_prof_stop,
	.record_event_state = ts_prof_record,
	.finalize = ts_prof_finalize,
};

/* From the poller: an op the GPU has not finished within the hang timeout. */
void ts_prof_hang_scan(uint64_t now)
{
	uint64_t limit = ts_hang_timeout_ns();

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
