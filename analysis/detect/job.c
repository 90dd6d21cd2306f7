// SPDX-License-Identifier: Apache-2.0
/* A job's life: made for its world and parameters, grown with its world within the
 * memory it may hold, ticked (its steps due evaluated, its verdict, hang and ranks
 * brought up to date) and freed; and the tables its parts share. What each part holds:
 * job_impl.h. */
#include "job_impl.h"
#include "traceid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ts_metric_names[TS_M_COUNT] = { "compute", "collective", "launch", "dataloader",
						  "checkpoint", "runq", "offcpu", "gemm" };
const char *const ts_state_names[4] = { "Unknown", "Healthy", "FailSlow", "Hang" };
void ts_hist_observe(const double *bounds, int nb, uint64_t *le, uint64_t *count, double *sum,
		     double v)
{
	for (int b = 0; b < nb; b++)
		le[b] += v <= bounds[b];
	(*count)++;
	*sum += v;
}

const double ts_step_bucket_s[TS_STEP_BUCKETS] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
						    5, 10, 30, 60, 120, 300 };
/* up to half an hour: a quantile past the last bound reads as that bound, and the chart's
 * TrainscopeAnalyzerBehind fires at 120 s */
const double ts_lag_bucket_s[TS_LAG_BUCKETS] = { 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2,
						  3, 5, 10, 30, 60, 120, 300, 600, 1800 };

static size_t W(const struct ts_job *j) { return (size_t)j->p.space_window; }

static void per_rank_free(struct ts_job *j)
{
	for (int i = 0; j->ks && i < j->world_cap * TS_M_COUNT; i++)
		ts_ksigma_free(&j->ks[i]);
	free(j->ks), free(j->meta), free(j->hist), free(j->dir), free(j->tdir), free(j->hits);
	free(j->misses), free(j->alarm), free(j->since), free(j->win_median), free(j->scratch);
	free(j->vals), free(j->outl), free(j->res.slow), free(j->hit_value), free(j->hit_median);
	free(j->res.ever_alarmed), free(j->judged_sample), free(j->chg), free(j->ehist);
	free(j->base), free(j->order), free(j->cstart), free(j->class_wait);
	free(j->felt), free(j->felt_busy), free(j->felt_of);
	j->ks = NULL;
}

/* The arrays sized by the world, for n ranks of nm = n * TS_M_COUNT cells: true when
 * every one was made. */
static bool alloc_arrays(struct ts_job *j, size_t n, size_t nm)
{
	j->rows = calloc((size_t)j->cap, sizeof(*j->rows));
	j->meta = calloc(n, sizeof(*j->meta));
	j->hist = calloc(nm * W(j), sizeof(float));
	j->ks = calloc(nm, sizeof(*j->ks));
	j->dir = calloc(nm, 1), j->tdir = calloc(nm, 1);
	j->hits = calloc(nm, sizeof(uint16_t)), j->misses = calloc(nm, sizeof(uint16_t));
	j->alarm = calloc(nm, sizeof(bool)), j->since = calloc(nm, sizeof(uint64_t));
	j->win_median = calloc(nm, sizeof(float));
	j->hit_value = calloc(nm, sizeof(float)), j->hit_median = calloc(nm, sizeof(float));
	j->judged_sample = calloc(nm, sizeof(uint64_t));
	j->scratch = calloc(2 * n + 4 * W(j), sizeof(double));
	j->chg = calloc(nm, sizeof(*j->chg));
	j->ehist = malloc(nm * W(j) * sizeof(float));
	j->base = malloc(nm * sizeof(float));
	j->order = calloc(n, sizeof(int)), j->cstart = calloc(n + 1, sizeof(int));
	j->class_wait = calloc(n, sizeof(float));
	j->felt = calloc(nm, sizeof(float)), j->felt_busy = calloc(n, sizeof(float));
	j->felt_of = calloc(nm, sizeof(uint64_t));
	j->vals = calloc(n, sizeof(double));
	j->outl = calloc(n, sizeof(int));
	j->res.slow = calloc(n, sizeof(*j->res.slow));
	j->res.ever_alarmed = calloc(n, 1);
	return j->rows && j->meta && j->hist && j->ks && j->dir && j->tdir && j->hits &&
	       j->misses && j->alarm && j->since && j->win_median && j->scratch && j->vals &&
	       j->outl && j->res.slow && j->hit_value && j->hit_median && j->res.ever_alarmed &&
	       j->judged_sample && j->chg && j->ehist && j->base && j->order && j->cstart &&
	       j->class_wait && j->felt && j->felt_busy && j->felt_of;
}

/* The ranks' history starts over in the arrays just made (nm cells): no step yet, no
 * baseline, no noise learned; peer classes grouped again. */
static void fresh_history(struct ts_job *j, size_t nm)
{
	for (size_t i = 0; i < nm * W(j); i++)
		j->ehist[i] = j->hist[i] = NAN; /* no step yet: missing, not 0 ms */
	for (size_t i = 0; i < nm; i++)
		j->base[i] = NAN;
	for (int m = 0; m < TS_M_COUNT; m++)
		j->sigma[m] = NAN;
	j->sigma_at = 0;
	ts_job_group_ranks(j);
	j->hist_n = j->hist_next = 0;
	for (size_t i = 0; i < sizeof(j->step_hist) / sizeof(j->step_hist[0]); i++)
		j->step_hist[i] = NAN;
}

/* Everything sized by the world, for cap ranks (cap >= world); per-rank history
 * restarts. */
static int alloc_world(struct ts_job *j, int world, int cap)
{
	size_t n = (size_t)cap, nm = n * TS_M_COUNT;
	struct ts_rank_meta *old_meta = j->meta;
	int old_world = j->world;

	j->meta = NULL;
	per_rank_free(j);
	ts_job_rows_free(j);
	j->world = world;
	j->world_cap = cap;
	if (!alloc_arrays(j, n, nm)) {
		free(old_meta);
		return -ENOMEM;
	}
	if (old_meta)
		memcpy(j->meta, old_meta, (size_t)old_world * sizeof(*old_meta));
	free(old_meta);
	for (int i = 0; i < j->cap; i++)
		if (ts_job_row_alloc(&j->rows[i], n))
			return -ENOMEM;
	for (size_t i = 0; i < nm; i++)
		if (ts_ksigma_init(&j->ks[i], j->p.time.training_window_size))
			return -ENOMEM;
	fresh_history(j, nm);
	/* the slow ranks' entries were made anew, empty: none is named until judged again */
	j->res.nslow = 0;
	j->res.summary[0] = 0;
	j->res.world = world;
	j->res.hang_rank = j->res.hang_stacks_rank = -1;
	return 0;
}

int ts_job_size_world(struct ts_job *j, int world)
{
	return alloc_world(j, world, world);
}

/* The world grows to nw: within the arrays' room the ranks so far keep their history
 * and the steps in flight stay (a world that grows a rank a batch costs a regrouping,
 * not everything reallocated: 16,384 ranks took minutes); past it the room grows by a
 * quarter at least and everything restarts. 0 or -ENOMEM. */
int ts_job_grow_world(struct ts_job *j, int nw)
{
	if (nw <= j->world_cap) {
		j->world = j->res.world = nw;
		if (ts_job_group_ranks(j))
			ts_job_relearn(j, j->res.last_step, j->now_ns);
		return 0;
	}
	int cap = j->world_cap + j->world_cap / 4;
	cap = cap > nw ? cap : nw;
	cap = cap < j->p.limits.max_world ? cap : nw;
	j->any_step = false; /* a new world: restart step alignment */
	return alloc_world(j, nw, cap);
}

static int ring_rows(const struct ts_params *p)
{
	int cap = 8;

	while (cap < p->lag_steps + 2)
		cap *= 2;
	return cap;
}

static size_t row_bytes(int world)
{
	return sizeof(struct row) + (size_t)world * (1 + (TS_M_COUNT + 1) * sizeof(float));
}

int ts_job_max_rows(const struct ts_params *p, int world)
{
	size_t budget = (size_t)p->limits.reorder_mb << 20;
	int rows = ring_rows(p);

	while (rows <= p->limits.reorder_steps / 2 && (size_t)rows * 2 * row_bytes(world) <= budget)
		rows *= 2;
	return rows;
}

size_t ts_job_bytes(const struct ts_params *p, int world)
{
	size_t n = world > 0 ? (size_t)world : 1, nm = n * TS_M_COUNT;
	size_t w = (size_t)p->space_window, tw = (size_t)p->time.training_window_size;
	size_t per_metric = 2 * w * sizeof(float) + sizeof(struct ts_ksigma) + tw * sizeof(float) +
			    2 + 2 * sizeof(uint16_t) + sizeof(bool) + 2 * sizeof(uint64_t) +
			    4 * sizeof(float) + sizeof(struct ts_change);
	size_t per_rank = sizeof(struct ts_rank_meta) + sizeof(struct ts_slow_rank) + 1 +
			  3 * sizeof(double) + 3 * sizeof(int) + sizeof(float) +
			  (size_t)ts_job_max_rows(p, world) * (1 + (TS_M_COUNT + 1) * sizeof(float));
	/* and per row, whatever the world: the struct and its three allocations' headers */
	size_t per_row = sizeof(struct row) + 3 * 16;

	return sizeof(struct ts_job) + 4 * w * sizeof(double) +
	       (size_t)ts_job_max_rows(p, world) * per_row +
	       (size_t)(p->fs.max_data_queue_steps + p->fs.steps_window_size) * sizeof(double) +
	       n * per_rank + nm * per_metric + ts_job_net_bytes(p, world);
}

int ts_job_new(struct ts_job **out, const char *ns, const char *name, int world,
	       const struct ts_params *p)
{
	struct ts_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	snprintf(j->ns, sizeof(j->ns), "%s", ns);
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->p = *p;
	j->cap = ring_rows(p);
	j->res.baseline_ms = j->res.current_ms = NAN;
	if (world < 1)
		world = 1;
	if (ts_failslow_init(&j->fs, &p->fs) || ts_job_size_world(j, world)) {
		ts_job_free(j);
		return -ENOMEM;
	}
	*out = j;
	return 0;
}

void ts_job_free(struct ts_job *j)
{
	if (!j)
		return;
	per_rank_free(j);
	ts_job_rows_free(j);
	ts_failslow_free(&j->fs);
	ts_job_net_free(j);
	ts_job_links_free(j);
	free(j);
}

const char *ts_job_ns(const struct ts_job *j) { return j->ns; }
const char *ts_job_name(const struct ts_job *j) { return j->name; }
const struct ts_job_result *ts_job_result(const struct ts_job *j) { return &j->res; }
uint64_t ts_job_late_steps(const struct ts_job *j) { return j->late; }
const uint8_t *ts_job_trace_id(const struct ts_job *j) { return j->has_trace ? j->trace_id : NULL; }

bool ts_job_report_trace(const struct ts_job *j, uint8_t out[16])
{
	if (!j->has_trace)
		return false;
	ts_window_trace(j->trace_id, j->verdict_step / (uint64_t)j->p.traces.window_steps, out);
	return true;
}
int ts_job_world(const struct ts_job *j) { return j->world; }
uint64_t ts_job_next_step(const struct ts_job *j) { return j->next_eval; }
bool ts_job_finished_news(struct ts_job *j)
{
	if (!j->finished_ns)
		return j->finish_told = false;
	if (j->finish_told)
		return false;
	return j->finish_told = true;
}

bool ts_job_finished(const struct ts_job *j) { return j->finished_ns != 0; }

bool ts_job_exited(const struct ts_job *j) { return j->any_step && ts_job_all_final(j); }

uint64_t ts_job_quiet_since_ns(const struct ts_job *j)
{
	return j->finished_ns ? j->finished_ns : j->last_data_ns;
}

uint64_t ts_job_condition_since(struct ts_job *j, int c, bool status, uint64_t now_ns)
{
	uint8_t st = status ? 2 : 1;

	if (c < 0 || c >= TS_JOB_CONDITIONS)
		return now_ns;
	if (j->cond[c].status != st)
		j->cond[c].status = st, j->cond[c].since_ns = now_ns;
	return j->cond[c].since_ns;
}

/* ts_job_quiet_since_ns's clocks: when the last step came (one added since the last
 * tick comes now), and when every rank had ended. */
static void quiet_clocks(struct ts_job *j, uint64_t now_ns)
{
	if (j->added != j->added_seen || !j->last_data_ns) {
		j->added_seen = j->added;
		j->last_data_ns = now_ns;
	}
	j->finished_ns = j->any_step && ts_job_all_final(j) ? (j->finished_ns ? j->finished_ns : now_ns) : 0;
}

bool ts_job_tick(struct ts_job *j, uint64_t now_ns)
{
	char before[sizeof(j->res.summary)], why[sizeof(j->res.reason)];
	enum ts_state old = j->res.state;
	uint64_t evaluated = j->res.steps_evaluated;

	snprintf(before, sizeof(before), "%s", j->res.summary);
	snprintf(why, sizeof(why), "%s", j->res.reason);
	j->now_ns = now_ns;
	ts_job_evaluate_due(j, now_ns);
	if (j->res.steps_evaluated != evaluated)
		j->last_progress_ns = now_ns;
	ts_job_verdict(j);
	ts_job_hang_cleared(j);
	if (j->hang_first_ns)
		ts_job_hang_culprits(j, now_ns);
	ts_job_watch_ranks(j, now_ns);
	j->res.rank_steps_late = j->late;
	quiet_clocks(j, now_ns);
	ts_job_stopped(j, now_ns);
	ts_job_history_spells(j, now_ns);
	bool listed = ts_job_unranked_summary(j);
	/* the window of the next step to come: ingest runs lag_steps ahead of the evaluated
	 * step, and the exporter keeps a named rank's steps only from the report that names
	 * it on, so the evaluated step's window may have passed without them, and so may the
	 * newest step's when it ended a window (the report's trace would show the rank named
	 * but none of its steps). A job whose ranks all ended, or that hangs, has no next
	 * step: a window that never opens has no root for the culprit's span. */
	if (old != j->res.state || strcmp(before, j->res.summary) != 0)
		j->verdict_step = (j->max_step > j->res.last_step ? j->max_step : j->res.last_step) +
				  (j->res.state != TS_STATE_HANG && !ts_job_all_final(j));
	/* a stalled job evaluates no step: its hang's culprit, named later, is news too */
	return old != j->res.state || strcmp(before, j->res.summary) != 0 ||
	       strcmp(why, j->res.reason) != 0 || j->res.steps_evaluated != evaluated || listed;
}
