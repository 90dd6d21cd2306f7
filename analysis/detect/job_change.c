// SPDX-License-Identifier: Apache-2.0
/* Change points on each rank's excess over the peers that do the same work. A rank is
 * compared with its peer class (the same pipeline stage and tensor position across
 * data-parallel replicas: job_peers.c); a rank with no peer is compared with its own
 * baseline, scaled by how the whole job moved. The excess is a share of the job's step
 * time, so metrics of every size share one scale, and the noise it is judged against is
 * learned from the job's own steps: the median over ranks of each rank's robust sigma in
 * time. change.c is the statistic of one rank and metric; this file keeps the job's
 * change-point state (the excesses, the noise, the own baselines) and judges each step. */
#include "job_impl.h"
#include "log.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A rank's sigma needs this many excess samples in its window. */
#define MIN_SIGMA_SAMPLES 8
/* Classes this small compare each rank with the median of the others. */
#define LEAVE_ONE_OUT_MAX 4

bool ts_job_by_change(int m)
{
	return m == TS_M_COMPUTE || m == TS_M_LAUNCH || m == TS_M_DATALOADER ||
	       m == TS_M_CHECKPOINT || m == TS_M_GEMM;
}

static size_t cell(const struct ts_job *j, int k, int m)
{
	(void)j;
	return (size_t)k * TS_M_COUNT + (size_t)m;
}

static float *ehist_at(struct ts_job *j, int k, int m)
{
	return &j->ehist[cell(j, k, m) * (size_t)j->p.space_window];
}

/* The job's noise per metric, relearned every window_step steps once ranks have enough
 * samples; and each rank's own baseline (its window median), once. */
static void learn(struct ts_job *j)
{
	size_t w = (size_t)j->p.space_window;
	double *tmp = j->scratch + 2 * (size_t)j->world, *win = tmp + 2 * w;

	/* nothing is judged before the window has filled once: a job's first steps
	 * (start-up, warm caches, compilation) are not its noise */
	if (j->hist_n < (int)w)
		return;
	if (j->sigma_at && j->res.steps_evaluated < j->sigma_at + (uint64_t)j->p.space_window_step)
		return;
	j->sigma_at = j->res.steps_evaluated;
	for (int m = 0; m < TS_M_COUNT; m++) {
		int n = 0;
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++) {
			const float *e = ehist_at(j, k, m);
			size_t got = 0;
			for (size_t i = 0; i < w; i++)
				if (!isnan(e[i]))
					win[got++] = e[i];
			if (got < MIN_SIGMA_SAMPLES && got < w)
				continue;
			double med = ts_median(win, got, tmp);
			double s = ts_mad_sigma(win, got, med, tmp);
			if (!isnan(s))
				j->vals[n++] = s;
		}
		/* the noise may fall at once but rise only by a quarter a relearn: a job of
		 * two ranks, one turned slow, would otherwise learn the fault as noise
		 * (each rank's excess is over the other) before the sum can reach it */
		if (n) {
			float s = (float)ts_median(j->vals, (size_t)n, j->scratch);
			j->sigma[m] = j->sigma[m] >= 0 ? fminf(s, 1.25f * j->sigma[m]) : s;
		}
		ts_debug("%s/%s: step %llu: %s noise %.4f of a step (%d ranks)", j->ns, j->name,
			 (unsigned long long)j->res.last_step, ts_metric_names[m], j->sigma[m], n);
		for (int k = 0; k < j->world; k++) {
			float *b = &j->base[cell(j, k, m)];
			if (!isnan(*b) || j->hist_n < (int)w)
				continue;
			for (size_t i = 0; i < w; i++)
				win[i] = j->hist[cell(j, k, m) * w + i];
			*b = (float)ts_median(win, w, tmp);
		}
	}
}

/* How the whole job moved against the ranks' own baselines (median ratio). */
static double job_factor(struct ts_job *j, const struct row *r, int m)
{
	int n = 0;

	for (int k = 0; k < j->world; k++) {
		float b = j->base[cell(j, k, m)], v = r->m[cell(j, k, m)];
		if (r->have[k] && b > 0 && !isnan(v))
			j->vals[n++] = v / b;
	}
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

/* The median of the class's values at this step, leaving rank skip out (-1: none). */
static double class_median(struct ts_job *j, const struct row *r, int m, int c, int skip)
{
	int n = 0;

	for (int i = j->cstart[c]; i < j->cstart[c + 1]; i++) {
		int k = j->order[i];
		float v = r->m[cell(j, k, m)];
		if (k != skip && r->have[k] && !isnan(v))
			j->vals[n++] = v;
	}
	return n ? ts_median(j->vals, (size_t)n, j->scratch) : NAN;
}

static void raised(struct ts_job *j, int k, int m, struct ts_change *c)
{
	size_t i = cell(j, k, m);
	uint64_t lag = (uint64_t)(j->p.change.smooth_steps - 1) / 2;
	struct ts_event *ev;

	/* the median of the last steps turns once half of them changed */
	c->onset = c->onset > lag ? c->onset - lag : 0;
	j->alarm[i] = true;
	j->since[i] = c->onset_ns;
	j->res.alarms_raised++;
	j->res.ever_alarmed[k] = 1;
	if ((ev = ts_job_history_open(j, TS_EV_SLOW_RANK, k, m))) {
		ev->onset_step = c->onset, ev->raised_step = c->confirmed;
		ev->raised_ns = c->onset_ns;
		ev->excess = (float)((ts_change_value(c) - ts_change_ref(c)) / ts_change_ref(c));
		snprintf(ev->text, sizeof(ev->text), "rank %d %s %.2f ms vs %.2f ms of its %s "
			 "(%+.0f%%) from step %llu, confirmed at step %llu", k, ts_metric_names[m],
			 ts_change_value(c), ts_change_ref(c),
			 ts_job_peers(j, k) ? "peers" : "own baseline", 100 * ev->excess,
			 (unsigned long long)c->onset, (unsigned long long)c->confirmed);
	}
	ts_info("%s/%s: rank %d %s alarm raised at step %llu: %.2f ms vs %.2f ms since step %llu",
		j->ns, j->name, k, ts_metric_names[m], (unsigned long long)c->confirmed,
		ts_change_value(c), ts_change_ref(c), (unsigned long long)c->onset);
}

/* What the rank's last excesses say (change.smooth_steps of them, n): their median,
 * so that pauses of a step or two (a GC, a page-fault storm) are not a change and a
 * slowdown that lasts is; or, when it is more, a change that hits every other step
 * (loader workers that take turns): the trimmed mean of the same steps, if 2n + 1
 * steps agree (their 60th percentile: pauses that came close together fall short). */
static double smoothed(struct ts_job *j, int k, int m, size_t slot)
{
	const float *e = ehist_at(j, k, m);
	size_t w = (size_t)j->p.space_window, n = (size_t)j->p.change.smooth_steps;
	double median, trim;

	ts_median_trim_recent(e, w, slot, n, &median, &trim);
	if (!(trim > median)) /* the longer look can only lower it */
		return median;
	return fmax(median, fmin(trim, ts_quantile_recent(e, w, slot, 2 * n + 1, 0.6)));
}

static void judge(struct ts_job *j, const struct row *r, int k, int m, double ref)
{
	size_t i = cell(j, k, m);
	/* the allowance grows with the job's noise: a noisy job needs a larger excess */
	struct ts_change_opts o = j->p.change;
	o.drift = fmax(o.drift, o.drift_sigmas * j->sigma[m]);
	struct ts_change *c = &j->chg[i];
	double v = r->m[i], e = (v - ref) / j->step_ms;
	size_t slot = ts_job_last_slot(j);

	if (isnan(ref) || isnan(v))
		return;
	o.drift = fmax(o.drift, o.min_excess * ref / j->step_ms);
	ehist_at(j, k, m)[slot] = (float)e;
	if (!(j->sigma[m] >= 0))
		return; /* not learned yet */
	switch (ts_change_update(c, &o, smoothed(j, k, m, slot), j->sigma[m], r->step, r->end_max,
				 v, ref)) {
	case TS_CHANGE_RAISED:
		raised(j, k, m, c);
		break;
	case TS_CHANGE_CLEARED:
		j->alarm[i] = false;
		ts_job_history_close(j, TS_EV_SLOW_RANK, k, m, r->step, r->end_max);
		ts_info("%s/%s: rank %d %s alarm cleared at step %llu", j->ns, j->name, k,
			ts_metric_names[m], (unsigned long long)r->step);
		break;
	}
	if (c->alarm) {
		j->hit_value[i] = (float)ts_change_value(c);
		j->hit_median[i] = (float)ts_change_ref(c);
	}
}

void ts_job_relearn(struct ts_job *j, uint64_t step, uint64_t t_ns)
{
	size_t w = (size_t)j->p.space_window;

	for (int m = 0; m < TS_M_COUNT; m++) {
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++) {
			size_t i = cell(j, k, m);
			if (j->alarm[i])
				ts_job_history_close(j, TS_EV_SLOW_RANK, k, m, step, t_ns);
			j->alarm[i] = false;
			memset(&j->chg[i], 0, sizeof(j->chg[i]));
			j->felt_of[i] = 0;
			for (size_t s = 0; s < w; s++)
				ehist_at(j, k, m)[s] = NAN;
		}
		j->sigma[m] = NAN;
	}
	j->sigma_at = 0;
}

void ts_job_change_row(struct ts_job *j, const struct row *r)
{
	size_t slot = ts_job_last_slot(j);

	if (!(j->step_ms > 0))
		return;
	for (int m = 0; m < TS_M_COUNT; m++) {
		if (!ts_job_by_change(m))
			continue;
		for (int k = 0; k < j->world; k++)
			ehist_at(j, k, m)[slot] = NAN;
		double f = NAN; /* a median over the job: only ranks with no peer need it */
		for (int c = 0; c < j->nclass; c++) {
			if (j->cstart[c + 1] - j->cstart[c] == 1 && isnan(f))
				f = job_factor(j, r, m);
			int lo = j->cstart[c], hi = j->cstart[c + 1];
			double med = hi - lo > LEAVE_ONE_OUT_MAX ? class_median(j, r, m, c, -1) : NAN;
			for (int i = lo; i < hi; i++) {
				int k = j->order[i];
				double ref = hi - lo == 1 ? j->base[cell(j, k, m)] * f
					   : hi - lo > LEAVE_ONE_OUT_MAX ? med
					   : class_median(j, r, m, c, k);
				if (r->have[k])
					judge(j, r, k, m, ref);
			}
		}
	}
	learn(j);
}
