// SPDX-License-Identifier: Apache-2.0
/* Job-level fail-slow detection on the step-time series (after sysTrace's
 * fail_slow_detection, with the degradation divided by the baseline). It judges time,
 * not typical steps: a window's value is the mean of its steps less the longest one
 * (a job whose every other step is slow is slow; one pause is not), and the baseline
 * is the median of earlier windows' values. */
#ifndef TS_FAILSLOW_H
#define TS_FAILSLOW_H

#include <stdbool.h>
#include <stdint.h>

struct ts_failslow_opts {
	int task_stable_step;            /* warm-up steps ignored */
	int min_startup_detection_steps; /* steps of baseline before any verdict */
	int steps_window_size;           /* the current value: this window's mean, its
					  * longest step left out */
	double k_sigma;
	double anomaly_degree_thr;       /* (current - baseline) / baseline */
	int max_data_queue_steps;        /* baseline history bound */
	int consecutive_windows;         /* anomalous windows in a row to raise FailSlow */
};

struct ts_failslow {
	double *hist; /* baseline values (ring) */
	int hcap, hn, hnext;
	double *win;  /* current window (ring) */
	int wn, wnext;
	double *done; /* the last windows' values, which join the baseline once no
		       * window overlaps them (ring of steps_window_size) */
	int dn, dnext;
	uint64_t seen;
	int streak;
	bool slow;
	double baseline, current, degradation;
};

int ts_failslow_init(struct ts_failslow *f, const struct ts_failslow_opts *o);
void ts_failslow_free(struct ts_failslow *f);
/* Adds one step time; returns true while the job is fail-slow. baseline, current and
 * degradation are updated as soon as there is enough history. */
bool ts_failslow_add(struct ts_failslow *f, const struct ts_failslow_opts *o, double step_ms);

#endif
