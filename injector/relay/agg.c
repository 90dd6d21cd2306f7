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

static void add_coll(struct ts_step_sum *s, unsigned op, uint64_t bytes, uint64_t dur)
{
	uint8_t b = log2_bucket(bytes);
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
	s->coll[i].count++;
	s->coll[i].bytes += bytes;
	s->coll[i].time_ns += dur;
}

bool ts_agg_add(struct ts_agg *a, const struct ts_rec *r, struct ts_step_sum *out)
{
	uint64_t t = r->t_ns + (uint64_t)a->mono_to_real_ns;
	struct ts_step_sum *s = &a->cur;

	switch (r->type) {
	case TS_REC_STEP_BEGIN:
		mark_start(s, t);
		return false;
	case TS_REC_REGION:
		mark_start(s, t);
		add_region(s, r->kind, r->dur_ns);
		return false;
	case TS_REC_DEVICE:
		s->compute_ns += r->a;
		s->have_device = true;
		return false;
	case TS_REC_COLL:
		mark_start(s, t);
		add_coll(s, r->kind, r->a, r->dur_ns);
		return false;
	case TS_REC_STEP_END:
		if (!s->start_ns)
			s->start_ns = a->prev_end_ns ? a->prev_end_ns : t;
		s->step = r->a;
		s->end_ns = t;
		if (!s->have_device)
			s->compute_ns = s->compute_wall_ns;
		*out = *s;
		memset(s, 0, sizeof(*s));
		a->prev_end_ns = t;
		return true;
	default:
		return false;
	}
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
