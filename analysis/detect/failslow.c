// SPDX-License-Identifier: Apache-2.0
#include "failslow.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int ts_failslow_init(struct ts_failslow *f, const struct ts_failslow_opts *o)
{
	memset(f, 0, sizeof(*f));
	f->hcap = o->max_data_queue_steps > 0 ? o->max_data_queue_steps : 500;
	f->hist = calloc((size_t)f->hcap, sizeof(double));
	f->win = calloc((size_t)(o->steps_window_size > 0 ? o->steps_window_size : 1), sizeof(double));
	f->done = calloc((size_t)(o->steps_window_size > 0 ? o->steps_window_size : 1), sizeof(double));
	f->baseline = f->current = NAN;
	if (!f->hist || !f->win || !f->done) {
		ts_failslow_free(f);
		return -ENOMEM;
	}
	return 0;
}

void ts_failslow_free(struct ts_failslow *f)
{
	free(f->hist);
	free(f->win);
	free(f->done);
	f->hist = f->win = f->done = NULL;
}

static void hist_push(struct ts_failslow *f, double v)
{
	f->hist[f->hnext] = v;
	f->hnext = (f->hnext + 1) % f->hcap;
	if (f->hn < f->hcap)
		f->hn++;
}

/* The window's mean without its longest step (all of it below three steps). */
static double window_value(const double *v, int n)
{
	double sum = 0, top = v[0];

	for (int i = 0; i < n; i++)
		sum += v[i], top = v[i] > top ? v[i] : top;
	return n >= 3 ? (sum - top) / (n - 1) : sum / n;
}

bool ts_failslow_add(struct ts_failslow *f, const struct ts_failslow_opts *o, double v)
{
	int w = o->steps_window_size > 0 ? o->steps_window_size : 1;
	double tmp[2 * 4096], *scratch = tmp;
	size_t need = 2 * (size_t)(f->hcap > w ? f->hcap : w);
	bool anomalous;

	if (isnan(v) || f->seen++ < (uint64_t)o->task_stable_step)
		return f->slow;
	f->win[f->wnext] = v;
	f->wnext = (f->wnext + 1) % w;
	if (f->wn < w)
		f->wn++;
	if (f->wn < w)
		return f->slow;
	/* a window's value joins the baseline once the windows that share its steps have
	 * gone, unless the job is slow now */
	double cur = window_value(f->win, w);
	if (f->dn == w && !f->slow)
		hist_push(f, f->done[f->dnext]);
	f->done[f->dnext] = cur;
	f->dnext = (f->dnext + 1) % w;
	if (f->dn < w)
		f->dn++;
	if (f->hn < o->min_startup_detection_steps)
		return f->slow;
	if (need > sizeof(tmp) / sizeof(tmp[0]) && !(scratch = malloc(need * sizeof(double))))
		return f->slow;
	f->baseline = ts_median(f->hist, (size_t)f->hn, scratch);
	double sigma = fmax(ts_mad_sigma(f->hist, (size_t)f->hn, f->baseline, scratch),
			    0.01 * f->baseline);
	if (scratch != tmp)
		free(scratch);
	f->current = cur;
	f->degradation = (f->current - f->baseline) / f->baseline;
	anomalous = f->current > f->baseline + o->k_sigma * sigma &&
		    f->degradation > o->anomaly_degree_thr;
	f->streak = anomalous ? f->streak + 1 : 0;
	if (f->streak >= o->consecutive_windows)
		f->slow = true;
	else if (!anomalous)
		f->slow = false;
	return f->slow;
}
