// SPDX-License-Identifier: Apache-2.0
#include "ksigma.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

int ts_ksigma_init(struct ts_ksigma *k, int cap)
{
	k->win = calloc((size_t)(cap > 0 ? cap : 1), sizeof(float));
	k->cap = cap > 0 ? cap : 1;
	k->n = k->next = 0;
	return k->win ? 0 : -ENOMEM;
}

void ts_ksigma_free(struct ts_ksigma *k)
{
	free(k->win);
	k->win = NULL;
}

void ts_ksigma_bounds(const struct ts_ksigma *k, const struct ts_ksigma_opts *o, double *lower,
		      double *upper)
{
	double s = 0, ss = 0, mean, std;

	*lower = *upper = NAN;
	if (k->n < o->min_update_window_size || k->n == 0)
		return;
	for (int i = 0; i < k->n; i++)
		s += k->win[i];
	mean = s / k->n;
	for (int i = 0; i < k->n; i++)
		ss += (k->win[i] - mean) * (k->win[i] - mean);
	std = fmax(sqrt(ss / k->n), o->min_std_val);
	*upper = mean + o->nsigma * std;
	*upper += fabs(*upper) * o->bias + o->abs_bias;
	*lower = mean - o->nsigma * std;
	*lower -= fabs(*lower) * o->bias + o->abs_bias;
	if (!isnan(o->min_expert_upper))
		*upper = fmax(*upper, o->min_expert_upper);
	if (!isnan(o->max_expert_upper))
		*upper = fmin(*upper, o->max_expert_upper);
	if (!isnan(o->min_expert_lower))
		*lower = fmax(*lower, o->min_expert_lower);
	if (!isnan(o->max_expert_lower))
		*lower = fmin(*lower, o->max_expert_lower);
}

int ts_ksigma_update(struct ts_ksigma *k, const struct ts_ksigma_opts *o, double v)
{
	double lo, hi;
	int verdict = 0;

	if (isnan(v))
		return 0;
	ts_ksigma_bounds(k, o, &lo, &hi);
	if (!isnan(hi) && o->detect != TS_BOUND_LOWER && v > hi)
		verdict = 1;
	else if (!isnan(lo) && o->detect != TS_BOUND_UPPER && v < lo)
		verdict = -1;
	if (verdict == 0) {
		k->win[k->next] = (float)v;
		k->next = (k->next + 1) % k->cap;
		if (k->n < k->cap)
			k->n++;
	}
	return verdict;
}
