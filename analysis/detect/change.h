// SPDX-License-Identifier: Apache-2.0
/* A one-sided CUSUM change-point statistic on one rank's excess over its peers, in
 * robust sigmas learned from the job's own steps (Page's CUSUM, as Greyhound uses).
 * Each step adds (excess - drift) / sigma, capped so that no single step decides; an
 * alarm is raised when the sum passes the threshold and cleared when it falls back to
 * zero. The step where the sum last left zero is the onset of the change. */
#ifndef TS_CHANGE_H
#define TS_CHANGE_H

#include <stdbool.h>
#include <stdint.h>

struct ts_change_opts {
	double drift;     /* excess (share of a step) below which a step counts against */
	double drift_sigmas; /* ... and at least this many sigmas of the noise */
	double min_excess;   /* ... and at least this share of the metric's reference */
	double threshold; /* the sum, in sigmas, that raises an alarm */
	double max_z;     /* the most one step adds */
	double min_sigma; /* floor of the learned noise (share of a step) */
	int smooth_steps; /* the median of this many last excesses is what counts */
};
#define TS_CHANGE_MAX_SMOOTH 15

struct ts_change {
	float s;                  /* the statistic, in sigmas */
	float run_v, run_ref;     /* sums of value and reference (ms) since run_start */
	uint32_t run_n;
	bool alarm;
	uint64_t run_start, run_start_ns; /* the step (and its end) where s left zero */
	uint64_t onset, onset_ns, confirmed;
};

enum { TS_CHANGE_NONE = 0, TS_CHANGE_RAISED = 1, TS_CHANGE_CLEARED = -1 };

/* Adds a step whose value v_ms exceeds its reference ref_ms by excess (share of the
 * step) under noise sigma. Returns TS_CHANGE_RAISED, TS_CHANGE_CLEARED or NONE. */
int ts_change_update(struct ts_change *c, const struct ts_change_opts *o, double excess,
		     double sigma, uint64_t step, uint64_t t_ns, double v_ms, double ref_ms);
/* The mean value and reference since the run began (ms). */
double ts_change_value(const struct ts_change *c);
double ts_change_ref(const struct ts_change *c);

#endif
