// SPDX-License-Identifier: Apache-2.0
/* TIME detector: a sliding-window k-sigma test of one series against its own past. */
#ifndef TS_KSIGMA_H
#define TS_KSIGMA_H

#include <stdbool.h>

enum ts_bound { TS_BOUND_UPPER, TS_BOUND_LOWER, TS_BOUND_BOTH };

struct ts_ksigma_opts {
	int training_window_size;   /* values kept to learn mean and std */
	int min_update_window_size; /* values needed before any verdict */
	double min_std_val;         /* std floor: a perfectly flat history still has a band */
	double bias;                /* band widened by this fraction of the bound */
	double abs_bias;            /* ... and by this absolute amount */
	double nsigma;
	enum ts_bound detect;
	/* expert bounds clamp the learnt ones; NaN = not set */
	double min_expert_upper, max_expert_upper, min_expert_lower, max_expert_lower;
};

/* State of one series: a ring of the last training_window_size normal values. */
struct ts_ksigma {
	float *win;
	int cap, n, next;
};

int ts_ksigma_init(struct ts_ksigma *k, int cap);
void ts_ksigma_free(struct ts_ksigma *k);
/* Returns +1 above the upper bound, -1 below the lower bound, 0 inside (or still
 * learning). Values found normal join the window; anomalous ones do not, so a lasting
 * fault is not learnt as the new normal. */
int ts_ksigma_update(struct ts_ksigma *k, const struct ts_ksigma_opts *o, double v);
/* The bounds the next value is judged against (NaN while learning). */
void ts_ksigma_bounds(const struct ts_ksigma *k, const struct ts_ksigma_opts *o, double *lower,
		      double *upper);

#endif
