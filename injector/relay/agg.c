// SPDX-License-Identifier: Apache-2.0
#include "agg.h"
#include "trainscope.h"

#include <string.h>

void ts_agg_init(struct ts_agg *a, int64_t mono_to_real_ns)
{
	memset(a, 0, sizeof(*a));
	a->mono_to_real_ns = mono_to_real_ns;
}

static uint8_t log2_bucket(uint64_t v)
{
	return v ? (uint8_t)(63 - __builtin_clzll(v)) : 0;
}

static void mark_start(struct ts_step_sum *s, uint64_t t)
{
	if (!s->start_ns || t < s->start_ns)
		s->start_ns = t;
}

static void add_region(struct ts_step_sum *s, unsigned kind, uint64_t dur)
{
	switch (kind) {
	case TRAINSCOPE_REGION_DATALOADER: s->dataloader_ns += dur; break;
	case TRAINSCOPE_REGION_COMPUTE: s->compute_wall_ns += dur; break;
	case TRAINSCOPE_REGION_CHECKPOINT: s->checkpoint_ns += dur; break;
	case TRAINSCOPE_REGION_LAUNCH: s->launch_ns += dur; break;
	case TRAINSCOPE_REGION_SYNC: s->sync_ns += dur; break;
	case TRAINSCOPE_REGION_GC: s->gc_ns += dur; break;
	default: break;
	}
}

/* count calls of size bytes each (the bucket), total bytes in all */
static void add_coll(struct ts_step_sum *s, unsigned op, uint64_t size, uint64_t total,
		     uint64_t dur, uint32_t count)
{
	uint8_t b = log2_bucket(size);
	int i;

	s->collective_ns += dur;
	for (i = 0; i < s->ncoll; i++)
		if (s->coll[i].op == op && s->coll[i].bucket == b)
			break;
	if (i == s->ncoll) {
		if (s->ncoll == TS_AGG_MAX_COLL)
			i = TS_AGG_MAX_COLL - 1; /* fold the rare overflow into the last bucket */
		else
			s->coll[s->ncoll++] = (struct ts_coll_acc){ .op = (uint8_t)op, .bucket = b };
	}
	s->coll[i].count += count;
	s->coll[i].bytes += total;
	s->coll[i].time_ns += dur;
}

/* Per communicator: the analyzer's transfer times and node grouping need it. A step
 * in more communicators than fit keeps the first ones and counts the rest. */
static void add_comm(struct ts_step_sum *s, const struct ts_rec *r)
{
	int i;

	for (i = 0; i < s->ncomm; i++)
		if (s->comm[i].id == r->coll.comm)
			break;
	if (i == s->ncomm) {
		if (s->ncomm == TS_AGG_MAX_COMM) {
			s->comm_overflow++;
			return;
		}
		s->comm[s->ncomm++] = (struct ts_comm_acc){ .id = r->coll.comm, .nranks = r->nranks };
	}
	s->comm[i].count++;
	s->comm[i].p2p += (r->kind & 0xff) == TRAINSCOPE_COLL_SEND_RECV;
	s->comm[i].bytes += r->coll.bytes;
	s->comm[i].time_ns += r->dur_ns;
}

static void add_peer(struct ts_step_sum *s, const struct ts_rec *r)
{
	int i;

	for (i = 0; i < s->npeer; i++)
		if (s->peer[i].comm == r->peer.comm && s->peer[i].peer == r->peer_rank)
			break;
	if (i == s->npeer) {
		if (s->npeer == TS_AGG_MAX_PEER) {
			s->peer_overflow += r->peer.sends;
			return;
		}
		s->peer[s->npeer++] = (struct ts_peer_acc){ .comm = r->peer.comm, .peer = r->peer_rank };
	}
	s->peer[i].count += (uint32_t)r->peer.sends;
	s->peer[i].bytes += r->peer.bytes;
	s->peer[i].time_ns += r->dur_ns;
}

static void add_gemm(struct ts_step_sum *s, uint64_t flops, uint64_t dur)
{
	uint8_t b = log2_bucket(flops);
	int i;

	for (i = 0; i < s->ngemm; i++)
		if (s->gemm[i].bucket == b)
			break;
	if (i == s->ngemm) {
		if (s->ngemm == TS_AGG_MAX_GEMM)
			i = TS_AGG_MAX_GEMM - 1;
		else
			s->gemm[s->ngemm++] = (struct ts_gemm_acc){ .bucket = b };
	}
	s->gemm[i].count++;
	s->gemm[i].time_ns += dur;
	s->gemm[i].flops += (double)flops;
}

static int held_index(const struct ts_agg *a, int i)
{
	return (a->head + i) % TS_AGG_HOLD;
}

/* The held step of that number, or NULL. */
static int find_held(const struct ts_agg *a, uint64_t step)
{
	for (int i = 0; i < a->nheld; i++)
		if (a->held[held_index(a, i)].step == step)
			return held_index(a, i);
	return -1;
}

/* The open step, or the held one when a device record names it; NULL when late. */
static struct ts_step_sum *tagged(struct ts_agg *a, uint64_t step)
{
	int i = find_held(a, step);

	if (i >= 0)
		return &a->held[i];
	if (a->nheld && step < a->held[a->head].step) {
		a->late++;
		return NULL;
	}
	return &a->cur;
}

static void finish(struct ts_step_sum *s)
{
	if (!s->have_device && !s->device_untimed)
		s->compute_ns = s->compute_wall_ns;
}

/* A closed step waits for its device record (there is room: the caller made it). */
static void hold(struct ts_agg *a, struct ts_step_sum *s)
{
	int i = held_index(a, a->nheld++);

	a->held[i] = *s;
	a->done[i] = false;
	memset(s, 0, sizeof(*s));
}

bool ts_agg_add(struct ts_agg *a, const struct ts_rec *r, struct ts_step_sum *out)
{
	uint64_t t = r->t_ns + (uint64_t)a->mono_to_real_ns;
	struct ts_step_sum *s = &a->cur;

	if (r->type == TS_REC_STEP_BEGIN || r->type == TS_REC_REGION || r->type == TS_REC_DEVICE ||
	    r->type == TS_REC_STEP_CTR)
		a->cur_open = true;
	switch (r->type) {
	case TS_REC_STEP_BEGIN:
		mark_start(s, t);
		return false;
	case TS_REC_REGION:
		mark_start(s, t);
		add_region(s, r->kind, r->dur_ns);
		return false;
	case TS_REC_DEVICE:
		s->compute_ns += r->device.busy_ns;
		s->have_device = true;
		return false;
	case TS_REC_COLL:
		if (r->coll.step_tag && !(s = tagged(a, r->coll.step_tag - 1)))
			return false;
		if (!r->coll.step_tag)
			mark_start(s, t);
		add_coll(s, r->kind & 0xff, r->coll.bytes, r->coll.bytes, r->dur_ns, 1);
		add_comm(s, r);
		a->cur_open |= s == &a->cur;
		return false;
	case TS_REC_GRAPH_COLL: /* sized by one call, untimed: no transfer time to judge */
		if (r->graph_coll.step_tag && (s = tagged(a, r->graph_coll.step_tag - 1)) &&
		    r->graph_coll.count)
			add_coll(s, r->kind & 0xff, r->graph_coll.bytes / r->graph_coll.count,
				 r->graph_coll.bytes, 0, (uint32_t)r->graph_coll.count);
		a->cur_open |= s == &a->cur;
		return false;
	case TS_REC_PEER: /* said by the library's poller: the step open now */
		add_peer(s, r);
		a->cur_open = true;
		return false;
	case TS_REC_GEMM:
		if ((s = tagged(a, r->gemm.step)))
			add_gemm(s, r->gemm.flops, r->dur_ns);
		a->cur_open |= s == &a->cur;
		return false;
	case TS_REC_STEP_CTR:
		s->launches += r->ctr.launches;
		s->launch_ns += r->ctr.call_ns;
		s->sync_ns += r->ctr.sync_ns;
		s->mem_live = r->ctr.mem_live;
		s->mem_peak = r->mem_peak;
		s->alloc_failures = r->alloc_failures;
		return false;
	case TS_REC_GPU_STEP: {
		int i = find_held(a, r->gpu_step.step);
		a->gpu_seen = true;
		if (i < 0) {
			a->late++;
			return ts_agg_pop(a, out);
		}
		if (r->kind == TS_GPU_STEP_UNTIMED) {
			a->held[i].device_untimed = true;
		} else if (r->gpu_step.compute_ns) {
			a->held[i].compute_ns = r->gpu_step.compute_ns;
			a->held[i].have_device = true;
		}
		a->held[i].comm_busy_ns = r->gpu_step.comm_ns;
		a->done[i] = true;
		return ts_agg_pop(a, out);
	}
	case TS_REC_STEP_END:
		if (!s->start_ns)
			s->start_ns = a->prev_end_ns ? a->prev_end_ns : t;
		s->step = r->mark.step;
		s->end_ns = t;
		a->prev_end_ns = t;
		if (!a->gpu_seen && !s->launches) {
			finish(s);
			*out = *s;
			memset(s, 0, sizeof(*s));
			a->cur_open = false;
			return true;
		}
		a->gpu_seen = true;
		if (a->nheld == TS_AGG_HOLD) { /* the oldest waits no more: it makes room */
			if (!a->done[a->head])
				a->undeviced++;
			a->done[a->head] = true;
			ts_agg_pop(a, out);
			hold(a, s);
			a->cur_open = false;
			return true;
		}
		hold(a, s);
		a->cur_open = false;
		return ts_agg_pop(a, out);
	default:
		return false;
	}
}

bool ts_agg_pop(struct ts_agg *a, struct ts_step_sum *out)
{
	if (!a->nheld || !a->done[a->head])
		return false;
	finish(&a->held[a->head]);
	*out = a->held[a->head];
	a->head = held_index(a, 1);
	a->nheld--;
	return true;
}

bool ts_agg_idle(const struct ts_agg *a)
{
	return !a->nheld && !a->cur_open;
}

bool ts_agg_flush(struct ts_agg *a, struct ts_step_sum *out)
{
	if (!a->nheld)
		return false;
	a->done[a->head] = true;
	return ts_agg_pop(a, out);
}

double ts_busbw_factor(int op, int n)
{
	if (n <= 1)
		return 1.0;
	switch (op) {
	case TRAINSCOPE_COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
	case TRAINSCOPE_COLL_ALL_GATHER:
	case TRAINSCOPE_COLL_REDUCE_SCATTER:
	case TRAINSCOPE_COLL_ALL_TO_ALL: return (double)(n - 1) / n;
	default: return 1.0;
	}
}
