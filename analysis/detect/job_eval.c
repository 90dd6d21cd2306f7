// SPDX-License-Identifier: Apache-2.0
/* A step's evaluation, in step order: the job's step time into fail-slow, each rank's
 * metrics into the windows and TIME's bands, the peer classes and change points, and
 * every space_window_step steps SPACE across the ranks and the alarms of the metrics the
 * change points do not judge (a filter of hits and misses); then the verdict
 * (job_verdict.c) and the lost time (job_lost.c). */
#include "job_impl.h"
#include "dbscan.h"
#include "log.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static size_t W(const struct ts_job *j) { return (size_t)j->p.space_window; }

static size_t idx(const struct ts_job *j, int rank, int m)
{
	(void)j;
	return (size_t)rank * TS_M_COUNT + (size_t)m;
}

static void push_history(struct ts_job *j, struct row *r)
{
	for (int k = 0; k < j->world; k++)
		for (int m = 0; m < TS_M_COUNT; m++) {
			float v = r->have[k] ? r->m[idx(j, k, m)] : NAN;
			j->hist[idx(j, k, m) * W(j) + (size_t)j->hist_next] = v;
			j->tdir[idx(j, k, m)] =
				(int8_t)ts_ksigma_update(&j->ks[idx(j, k, m)], &j->p.time, v);
		}
	j->step_hist[j->hist_next] = (float)j->step_ms;
	j->hist_next = (j->hist_next + 1) % (int)W(j);
	if (j->hist_n < (int)W(j))
		j->hist_n++;
}

/* TRAINSCOPE_LOG=debug: the per-rank window medians SPACE compared. */
static void debug_window(struct ts_job *j, int m)
{
	char line[1024];
	size_t n = 0;

	for (int k = 0; k < j->world && n < sizeof(line) - 32; k++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %d:%.2f%s", k,
				      (double)j->win_median[idx(j, k, m)],
				      j->outl[k] > 0 ? "+" : j->outl[k] < 0 ? "-" : "");
	ts_debug("%s/%s step %llu %s median %.2f:%s", j->ns, j->name,
		 (unsigned long long)j->res.last_step, ts_metric_names[m], j->group_median[m], line);
}

static void space_metric(struct ts_job *j, int m)
{
	double *tmp = j->scratch, win[64];
	size_t n = (size_t)j->world;

	for (int k = 0; k < j->world; k++) {
		for (size_t i = 0; i < W(j); i++)
			win[i] = j->hist[idx(j, k, m) * W(j) + i];
		j->vals[k] = ts_median(win, W(j), tmp);
		j->win_median[idx(j, k, m)] = (float)j->vals[k];
	}
	/* an excess too small to delay the step is not worth naming */
	struct ts_space_opts o = j->p.space;
	if (j->step_ms > 0)
		o.min_abs_diff = fmax(o.min_abs_diff, j->p.min_step_share * j->step_ms);
	if (ts_space_detect(j->vals, n, &o, j->outl, &j->group_median[m]) < 0)
		memset(j->outl, 0, n * sizeof(int));
	for (int k = 0; k < j->world; k++)
		j->dir[idx(j, k, m)] = (int8_t)j->outl[k];
	debug_window(j, m);
}

/* TIME alone decides only where SPACE cannot (fewer than 3 ranks), and only for a
 * minority of ranks: a job-wide shift is not a slow rank. */
static int time_verdict(struct ts_job *j, int k, int m)
{
	int hits = 0;

	if (j->world >= 3)
		return 0;
	for (int r = 0; r < j->world; r++)
		hits += j->tdir[idx(j, r, m)] > 0;
	/* of two ranks, one alone is the minority */
	return hits * 2 < j->world || j->world == 1 || (j->world == 2 && hits == 1) ?
		j->tdir[idx(j, k, m)] : 0;
}

/* Host metrics come from one sample a second while steps come many times a second: a
 * verdict on them counts once per new sample, so the alarm filter needs as many
 * independent samples as it needs steps elsewhere. */
static bool new_evidence(struct ts_job *j, int k, int m)
{
	size_t i = idx(j, k, m);
	uint64_t t = j->meta[k].host.time_ns;

	if (m != TS_M_RUNQ && m != TS_M_OFFCPU)
		return true;
	if (t == j->judged_sample[i])
		return false;
	j->judged_sample[i] = t;
	return true;
}

static double rel(double v, double med)
{
	return med > 0 ? (v - med) / med : 0;
}

/* A host-metric alarm (SPACE) in the history; the change points write their own. */
static void history_raised(struct ts_job *j, int k, int m)
{
	size_t i = idx(j, k, m);
	struct ts_event *ev;

	if (m == TS_M_COLLECTIVE || !(ev = ts_job_history_open(j, TS_EV_SLOW_RANK, k, m)))
		return;
	ev->onset_step = j->chg[i].onset, ev->raised_step = j->chg[i].confirmed;
	ev->raised_ns = j->since[i];
	ev->excess = (float)rel(j->hit_value[i], j->hit_median[i]);
	snprintf(ev->text, sizeof(ev->text), "rank %d %s %.2f ms vs group median %.2f ms (%+.0f%%)",
		 k, ts_metric_names[m], j->hit_value[i], j->hit_median[i], 100 * ev->excess);
}

/* A SPACE or TIME hit on rank k's metric m: counted, and the numbers kept; enough in a
 * row (alarm_filter_window_size) raise its alarm. */
static void alarm_hit(struct ts_job *j, int k, int m, uint64_t t_ns)
{
	size_t i = idx(j, k, m);

	if (!j->hits[i])
		j->chg[i].run_start = j->res.last_step;
	j->hit_value[i] = j->win_median[i];
	j->hit_median[i] = (float)j->group_median[m];
	j->misses[i] = 0;
	if (j->hits[i] < UINT16_MAX)
		j->hits[i]++;
	if (j->alarm[i] || j->hits[i] < j->p.alarm_filter_window_size)
		return;
	j->alarm[i] = true;
	j->since[i] = t_ns;
	j->chg[i].onset = j->chg[i].run_start;
	j->chg[i].confirmed = j->res.last_step;
	history_raised(j, k, m);
	if (m != TS_M_COLLECTIVE) {
		j->res.alarms_raised++;
		j->res.ever_alarmed[k] = 1;
	}
	ts_info("%s/%s: rank %d %s alarm raised at step %llu: %.2f ms vs median %.2f ms", j->ns,
		j->name, k, ts_metric_names[m], (unsigned long long)j->res.last_step,
		j->hit_value[i], j->hit_median[i]);
}

/* A miss: counted; enough of them (clear_after_steps) clear the alarm. */
static void alarm_miss(struct ts_job *j, int k, int m, uint64_t t_ns)
{
	size_t i = idx(j, k, m);

	j->hits[i] = 0;
	if (j->misses[i] < UINT16_MAX)
		j->misses[i]++;
	if (!j->alarm[i] || j->misses[i] * j->p.space_window_step < j->p.clear_after_steps)
		return;
	j->alarm[i] = false;
	ts_job_history_close(j, TS_EV_SLOW_RANK, k, m, j->res.last_step, t_ns);
	ts_info("%s/%s: rank %d %s alarm cleared at step %llu", j->ns, j->name, k,
		ts_metric_names[m], (unsigned long long)j->res.last_step);
}

static void update_alarms(struct ts_job *j, uint64_t t_ns)
{
	for (int k = 0; k < j->world; k++)
		for (int m = 0; m < TS_M_COUNT; m++) {
			size_t i = idx(j, k, m);
			int hit = j->dir[i] > 0 || time_verdict(j, k, m) > 0;
			if (ts_job_by_change(m) || !new_evidence(j, k, m))
				continue; /* the change points judge it (job_change.c) */
			if (hit)
				alarm_hit(j, k, m, t_ns);
			else
				alarm_miss(j, k, m, t_ns);
		}
}

static double job_step_ms(struct ts_job *j, struct row *r)
{
	int n = 0;

	for (int k = 0; k < j->world; k++)
		if (r->have[k])
			j->vals[n++] = r->step_ms[k];
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

static void observe_step(struct ts_job_result *r, double s)
{
	if (s > 0)
		ts_hist_observe(ts_step_bucket_s, TS_STEP_BUCKETS, r->step_le, &r->step_count,
				&r->step_sum_s, s);
}

const int ts_own_phases[TS_OWN_PHASES] = { TS_M_COMPUTE, TS_M_LAUNCH, TS_M_DATALOADER,
					     TS_M_CHECKPOINT };

/* Rank k's compute in window slot t, or with the device untimed there
 * (TRAINSCOPE_DEVICE_EVERY) its last timed one before it: the device time moves slowly,
 * and the step's host phases, timed every step, stay its own. NAN with none. */
static float compute_at(const struct ts_job *j, int k, size_t t)
{
	const float *h = &j->hist[idx(j, k, TS_M_COMPUTE) * W(j)];
	size_t age = (ts_job_last_slot(j) + W(j) - t) % W(j), n = (size_t)j->hist_n;

	for (size_t back = 0; age + back < n && back < W(j); back++) {
		float v = h[(t + W(j) - back) % W(j)];
		if (!isnan(v))
			return v;
	}
	return NAN;
}

float ts_job_busy_at(const struct ts_job *j, int k, size_t t)
{
	float s = compute_at(j, k, t);

	for (int i = 0; i < TS_OWN_PHASES; i++)
		if (ts_own_phases[i] != TS_M_COMPUTE)
			s += j->hist[idx(j, k, ts_own_phases[i]) * W(j) + t];
	return s;
}

void ts_job_rank_busy_ms(const struct ts_job *j, double *out)
{
	for (int k = 0; k < j->world; k++) {
		out[k] = j->hist_n && j->meta[k].seen ? 0 : NAN;
		for (int i = 0; i < TS_OWN_PHASES && !isnan(out[k]); i++)
			out[k] += (double)j->win_median[idx(j, k, ts_own_phases[i])];
	}
}

void ts_job_evaluate_row(struct ts_job *j, struct row *r)
{
	uint64_t t = r->end_max;

	r->used = false;
	j->res.steps_evaluated++;
	j->res.rank_steps_expected += (uint64_t)j->world;
	j->res.rank_steps_missing += (uint64_t)(j->world - r->count);
	j->res.last_step = r->step;
	j->res.updated_ns = t;
	j->step_ms = job_step_ms(j, r);
	observe_step(&j->res, j->step_ms / 1e3);
	ts_failslow_add(&j->fs, &j->p.fs, j->step_ms);
	if (j->res.steps_evaluated <= (uint64_t)j->p.fs.task_stable_step)
		return;
	push_history(j, r);
	ts_job_note_slowed(j, t);
	ts_job_classes_row(j, r);
	ts_job_change_row(j, r);
	ts_job_net_row(j, r->step, t);
	ts_job_compose(j, t);
	/* consecutive steps share most of their window: verdicts come every
	 * space_window_step steps so that the alarm filter counts fresh evidence */
	if (j->hist_n < (int)W(j) || ++j->since_verdict < j->p.space_window_step)
		return;
	j->since_verdict = 0;
	for (int m = 0; m < TS_M_COUNT; m++)
		space_metric(j, m);
	if (!j->job_base_set) {
		for (int m = 0; m < TS_M_COUNT; m++)
			j->job_base[m] = j->group_median[m];
		j->job_base_set = true;
	}
	update_alarms(j, t);
	ts_job_compose(j, t);
	ts_job_lost_time(j);
}
