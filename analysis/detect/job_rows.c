// SPDX-License-Identifier: Apache-2.0
/* The step ring: the ranks' steps aligned by step number, a row per step in flight
 * holding every rank's metrics of it, and the walk that evaluates the rows in step order
 * once they are complete or overdue. The ring grows when ranks drift apart (within
 * limits.reorder_steps and limits.reorder_mb) and, past that, forces its oldest rows
 * out; what the producers lost on the way is counted here too. */
#include "job_impl.h"
#include "traceid.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ts_job_row_alloc(struct row *r, size_t world)
{
	r->have = calloc(world, 1);
	r->m = calloc(world * TS_M_COUNT, sizeof(float));
	r->step_ms = calloc(world, sizeof(float));
	return r->have && r->m && r->step_ms ? 0 : -ENOMEM;
}

static void row_release(struct row *r)
{
	free(r->have), free(r->m), free(r->step_ms);
}

void ts_job_rows_free(struct ts_job *j)
{
	for (int i = 0; i < j->cap && j->rows; i++)
		row_release(&j->rows[i]);
	free(j->rows);
	j->rows = NULL;
}

static struct row *row_for(struct ts_job *j, uint64_t step)
{
	struct row *r = &j->rows[step % (uint64_t)j->cap];

	if (r->used && r->step == step)
		return r;
	if (r->used)
		return NULL; /* still holds an unevaluated older step: caller evaluates first */
	r->used = true;
	r->step = step;
	r->count = 0;
	r->end_max = 0;
	r->first_ns = j->now_ns;
	j->unstamped |= !j->now_ns;
	memset(r->have, 0, (size_t)j->world);
	return r;
}

/* Doubles the step ring, within ts_job_max_rows: held steps move to their new places,
 * every old row keeps its buffers, new rows are made first so a failure changes
 * nothing. -ENOSPC at the bound, -ENOMEM. */
static int grow_rows(struct ts_job *j)
{
	int cap = j->cap * 2, fresh = 0, old = 0;
	struct row *rows, *made;

	if (cap > ts_job_max_rows(&j->p, j->world))
		return -ENOSPC;
	rows = calloc((size_t)cap, sizeof(*rows));
	made = calloc((size_t)j->cap, sizeof(*made));
	for (int i = 0; rows && made && i < j->cap; i++, fresh++)
		if (ts_job_row_alloc(&made[i], (size_t)j->world_cap))
			break;
	if (!rows || !made || fresh < j->cap) {
		for (int i = 0; made && i <= fresh && i < j->cap; i++)
			row_release(&made[i]);
		free(rows), free(made);
		return -ENOMEM;
	}
	for (int i = 0; i < j->cap; i++)
		if (j->rows[i].used)
			rows[j->rows[i].step % (uint64_t)cap] = j->rows[i];
	for (int i = 0, k = 0; i < cap; i++) {
		if (rows[i].used)
			continue;
		while (old < j->cap && j->rows[old].used)
			old++;
		rows[i] = old < j->cap ? j->rows[old++] : made[k++];
		rows[i].used = false;
	}
	free(made);
	free(j->rows);
	j->rows = rows;
	j->cap = cap;
	return 0;
}

/* The lowest step at or after from that a row holds; UINT64_MAX when none. The ring is
 * small (lag_steps rounded up to a power of two): a gap of any size costs one scan. */
static uint64_t next_held(const struct ts_job *j, uint64_t from)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < j->cap; i++)
		if (j->rows[i].used && j->rows[i].step >= from && j->rows[i].step < best)
			best = j->rows[i].step;
	return best;
}

static void host_metrics(struct ts_job *j, int rank, const struct ts_rank_step *s, float step_ms,
			 float *m)
{
	const struct ts_host_view *h = &j->meta[rank].host;
	bool fresh = h->valid && s->end_ns + TS_HOST_VIEW_MAX_AGE_NS > h->time_ns &&
		     h->time_ns + TS_HOST_VIEW_MAX_AGE_NS > s->end_ns;

	m[TS_M_RUNQ] = fresh ? (float)(h->runq_ms_per_s * step_ms / 1000) : NAN;
	m[TS_M_OFFCPU] = fresh ? (float)(h->offcpu_ms_per_s * step_ms / 1000) : NAN;
}

/* A step's GEMM time per flop (ns), as compute ms: times the job's ratio of compute ms
 * to it, the median of its first TS_GEMM_LEARN steps that had both (before that NAN).
 * Peers that do the same work then compare in the unit the change points judge, and a
 * GPU whose GEMMs run slower (shared, throttled) shows even when its busy time, which
 * host gaps fill, does not. */
static float gemm_ms(struct ts_job *j, const struct ts_rank_step *s)
{
	double raw = s->m[TS_M_GEMM], c = s->m[TS_M_COMPUTE];

	if (!(raw > 0) || !isfinite(raw))
		return NAN;
	if (j->gemm.scale > 0)
		return (float)(raw * j->gemm.scale);
	if (c > 0 && j->gemm.nlearn < TS_GEMM_LEARN)
		j->gemm.learn[j->gemm.nlearn++] = c / raw;
	if (j->gemm.nlearn == TS_GEMM_LEARN)
		j->gemm.scale = ts_median(j->gemm.learn, TS_GEMM_LEARN, j->gemm.learn + TS_GEMM_LEARN);
	return NAN;
}

/* Whether rank's step s may come in, the world grown to hold the rank: 0, -ERANGE,
 * -EDOM or -ENOMEM as ts_job_add_step says. */
static int admit(struct ts_job *j, int rank, int world, const struct ts_rank_step *s)
{
	if (rank < 0 || rank >= j->p.limits.max_world || world > j->p.limits.max_world)
		return -ERANGE;
	if (j->any_step && s->step > j->max_step &&
	    s->step - j->max_step > (uint64_t)j->p.limits.max_step_jump)
		return -EDOM;
	if ((rank >= j->world || world > j->world) &&
	    ts_job_grow_world(j, world > rank + 1 ? world : rank + 1))
		return -ENOMEM;
	return 0;
}

/* No row for step: a step far ahead grows the ring (ranks behind catch up within it)
 * and past its bound forces out the oldest unevaluated rows, in step order; the steps
 * between held rows have no data and are passed over in one go. False when the ring
 * holds a later step in its place: step is too old to wait. */
static bool make_room(struct ts_job *j, uint64_t step)
{
	if (grow_rows(j) == 0)
		return true;
	const struct row *old = &j->rows[step % (uint64_t)j->cap];
	uint64_t until = old->step;
	if (until > step)
		return false;
	while (j->next_eval <= until) {
		uint64_t next = next_held(j, j->next_eval);
		if (next > until)
			break;
		ts_job_evaluate_row(j, &j->rows[next % (uint64_t)j->cap]);
		j->next_eval = next + 1;
	}
	if (j->next_eval <= until)
		j->next_eval = until + 1;
	return true;
}

/* Rank's step s into its row r: its step time and metrics, the GEMMs' in compute ms,
 * the host's from the node agent's view. */
static void fill(struct ts_job *j, struct row *r, int rank, const struct ts_rank_step *s)
{
	if (!r->have[rank]) {
		r->have[rank] = 1;
		r->count++;
	}
	r->step_ms[rank] = (float)((double)(s->end_ns - s->start_ns) / 1e6);
	for (int m = 0; m < TS_M_COUNT; m++)
		r->m[(size_t)rank * TS_M_COUNT + (size_t)m] = (float)s->m[m];
	r->m[(size_t)rank * TS_M_COUNT + TS_M_GEMM] = gemm_ms(j, s);
	host_metrics(j, rank, s, r->step_ms[rank], &r->m[(size_t)rank * TS_M_COUNT]);
}

int ts_job_add_step(struct ts_job *j, int rank, int world, const struct ts_rank_step *s)
{
	struct row *r;
	int err = admit(j, rank, world, s);

	if (err)
		return err;
	if (!j->any_step) {
		j->any_step = true;
		j->next_eval = s->step;
	}
	if (!j->has_trace) {
		ts_trace_id(j->ns, j->name, s->start_ns, j->trace_id);
		j->has_trace = true;
	}
	if (s->step < j->next_eval) {
		j->late++;
		return 0;
	}
	while (!(r = row_for(j, s->step))) {
		if (!make_room(j, s->step)) {
			j->late++;
			return 0;
		}
	}
	fill(j, r, rank, s);
	if (ts_job_net_add(j, rank, s))
		return -ENOMEM;
	ts_job_links_add(j, rank, s);
	if (s->end_ns > r->end_max)
		r->end_max = s->end_ns;
	if (s->step > j->max_step)
		j->max_step = s->step;
	j->meta[rank].seen = true;
	j->meta[rank].last_step = s->step;
	j->added++;
	return 0;
}

void ts_job_data_loss(struct ts_job *j, uint64_t ring_dropped, int64_t batches_lost)
{
	j->res.ring_dropped += ring_dropped;
	if (batches_lost >= 0)
		j->res.batches_lost += (uint64_t)batches_lost;
	else if (j->res.batches_lost >= (uint64_t)-batches_lost)
		j->res.batches_lost -= (uint64_t)-batches_lost;
}

/* A step still missing ranks is judged once the job is lag_steps past it and its
 * lateness bound has passed: ranks behind (a backlog drained rank by rank) come first. */
static bool overdue(const struct ts_job *j, const struct row *r)
{
	return j->max_step >= r->step + (uint64_t)j->p.lag_steps &&
	       (double)(j->now_ns - r->first_ns) >= j->p.lateness_s * 1e9;
}

/* A step evaluated at now_ns that ended at end_ns: its lag into the histogram. */
static void lag(struct ts_lag *l, uint64_t now_ns, uint64_t end_ns)
{
	double s = now_ns > end_ns ? (double)(now_ns - end_ns) / 1e9 : 0;

	ts_hist_observe(ts_lag_bucket_s, TS_LAG_BUCKETS, l->le, &l->count, &l->sum_s, s);
	if (s > l->max_s)
		l->max_s = s;
}

/* Rows made before the first tick count their lateness from this one. */
static void stamp(struct ts_job *j, uint64_t now_ns)
{
	for (int i = 0; j->unstamped && i < j->cap; i++)
		if (j->rows[i].used && !j->rows[i].first_ns)
			j->rows[i].first_ns = now_ns;
	j->unstamped = false;
}

/* A gap at next_eval (no row holds it) is skipped once later steps are far enough ahead
 * and late enough, to the next held row or the lag horizon in one go (a step counter
 * that jumps by 2^62 must not mean 2^62 turns of the walk). False while it waits. */
static bool skip_gap(struct ts_job *j)
{
	uint64_t lag = (uint64_t)j->p.lag_steps, next;

	if (!j->any_step || j->max_step <= j->next_eval + lag)
		return false;
	next = next_held(j, j->next_eval);
	if (next != UINT64_MAX && !overdue(j, &j->rows[next % (uint64_t)j->cap]))
		return false;
	j->next_eval = next < j->max_step - lag ? next : j->max_step - lag;
	return true;
}

void ts_job_evaluate_due(struct ts_job *j, uint64_t now_ns)
{
	stamp(j, now_ns);
	for (;;) {
		struct row *r = &j->rows[j->next_eval % (uint64_t)j->cap];
		if (!j->any_step || !r->used || r->step != j->next_eval) {
			if (skip_gap(j))
				continue;
			break;
		}
		if (r->count < j->world && !ts_job_all_final(j) && !overdue(j, r))
			break;
		lag(&j->lag, now_ns, r->end_max);
		ts_job_evaluate_row(j, r);
		j->next_eval++;
	}
}

void ts_job_take_lag(struct ts_job *j, struct ts_lag *into)
{
	for (int b = 0; b < TS_LAG_BUCKETS; b++)
		into->le[b] += j->lag.le[b];
	into->count += j->lag.count;
	into->sum_s += j->lag.sum_s;
	if (j->lag.max_s > into->max_s)
		into->max_s = j->lag.max_s;
	memset(&j->lag, 0, sizeof(j->lag));
}
