// SPDX-License-Identifier: Apache-2.0
#include "params.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define F(k, t, member, lo, hi, help) { k, t, offsetof(struct ts_params, member), 0, lo, hi, help }
#define S(k, member, help) { k, TS_CFG_STRING, offsetof(struct ts_params, member), \
			     sizeof(((struct ts_params *)0)->member), 1, 0, help }

static const struct ts_cfg_field fields[] = {
	F("failslow.task_stable_step", TS_CFG_INT, fs.task_stable_step, 0, 1e6, "warm-up steps ignored"),
	F("failslow.min_startup_detection_steps", TS_CFG_INT, fs.min_startup_detection_steps, 1, 1e6,
	  "baseline steps before a verdict"),
	F("failslow.steps_window_size", TS_CFG_INT, fs.steps_window_size, 1, 4096, "window of steps"),
	F("failslow.k_sigma", TS_CFG_DOUBLE, fs.k_sigma, 0, 100, "sigmas above the baseline"),
	F("failslow.anomaly_degree_thr", TS_CFG_DOUBLE, fs.anomaly_degree_thr, 0, 100,
	  "(current - baseline) / baseline"),
	F("failslow.max_data_queue_steps", TS_CFG_INT, fs.max_data_queue_steps, 10, 4096,
	  "baseline history"),
	F("failslow.consecutive_windows", TS_CFG_INT, fs.consecutive_windows, 1, 1000,
	  "anomalous windows in a row"),
	F("failslow.hang_timeout_s", TS_CFG_DOUBLE, hang_timeout_s, 1, 1e7,
	  "no step for this long while ranks run: Hang"),
	F("failslow.rank_lost_s", TS_CFG_DOUBLE, rank_lost_s, 1, 1e7,
	  "a rank with no step and no exit record this long while others exited is lost"),
	F("failslow.hang_culprit_wait_s", TS_CFG_DOUBLE, hang_culprit_wait_s, 0, 1e7,
	  "a hang's culprits (ranks that did not enter the op the others wait in) are named "
	  "once most members reported, or this long after the first report"),
	F("change.drift", TS_CFG_DOUBLE, change.drift, 0, 1,
	  "a rank's excess over its peers, as a share of the step, below which a step counts "
	  "as normal (half the smallest slowdown worth naming)"),
	F("change.drift_sigmas", TS_CFG_DOUBLE, change.drift_sigmas, 0, 100,
	  "... and at least this many robust sigmas of the job's noise"),
	F("change.min_excess", TS_CFG_DOUBLE, change.min_excess, 0, 100,
	  "... and at least this share of the metric's peer median (0.1: a rank's dataloader "
	  "4 % slower is not named, its compute 30 % slower is)"),
	F("change.threshold", TS_CFG_DOUBLE, change.threshold, 0.1, 1e6,
	  "CUSUM sum, in robust sigmas of the job's own noise, that names a rank"),
	F("change.max_step_sigmas", TS_CFG_DOUBLE, change.max_z, 0.1, 1e6,
	  "the most one step adds: no single step names a rank"),
	F("change.smooth_steps", TS_CFG_INT, change.smooth_steps, 1, 15,
	  "a step counts by the median of the rank's last this many excesses (pauses of "
	  "fewer than half of them are not a change)"),
	F("change.min_sigma", TS_CFG_DOUBLE, change.min_sigma, 0, 1,
	  "floor of the learned noise, as a share of the step"),
	F("network.drift", TS_CFG_DOUBLE, net_drift, 0, 10,
	  "a communicator's transfer time over its own baseline, as a share of that "
	  "baseline, below which a step counts as normal (half the smallest slowdown worth "
	  "naming); the CUSUM's other settings are change.*"),
	F("network.min_step_share", TS_CFG_DOUBLE, net_min_step_share, 0, 1,
	  "... and the excess at least this share of the job's step time: a communicator "
	  "of 1 ms in a 1 s step is not named for a 50 % slower transfer"),
	F("network.min_sigma", TS_CFG_DOUBLE, net_min_sigma, 0, 10,
	  "floor of the communicators' learned noise, as a share of their baseline"),
	F("space.window_size", TS_CFG_INT, space_window, 1, 64, "steps per SPACE window"),
	F("space.window_step", TS_CFG_INT, space_window_step, 1, 64,
	  "steps between verdicts: alarm_filter_window_size verdicts span this many steps each"),
	F("space.eps", TS_CFG_DOUBLE, space.eps, 0, 1e9, "DBSCAN eps (relative when scaling)"),
	F("space.min_robust_z", TS_CFG_DOUBLE, space.min_robust_z, 0, 100,
	  "an outlier is also this many robust sigmas from the median (0: off)"),
	F("space.min_samples", TS_CFG_INT, space.min_samples, 1, 1000000, "DBSCAN min_samples"),
	F("space.cv_threshold", TS_CFG_DOUBLE, space.cv_threshold, 0, 100,
	  "(max - min) / (2 * median) must exceed it"),
	F("space.scaling", TS_CFG_BOOL, space.scaling, 1, 0, "divide by the group median"),
	F("space.min_abs_diff_ms", TS_CFG_DOUBLE, min_abs_diff_ms, 0, 1e9,
	  "ignore outliers closer than this to the median"),
	F("space.min_step_share", TS_CFG_DOUBLE, min_step_share, 0, 1,
	  "an outlier's excess is at least this share of the job's step time"),
	F("time.training_window_size", TS_CFG_INT, time.training_window_size, 2, 100000, ""),
	F("time.min_update_window_size", TS_CFG_INT, time.min_update_window_size, 1, 100000, ""),
	F("time.min_std_val", TS_CFG_DOUBLE, time.min_std_val, 0, 1e9, ""),
	F("time.bias", TS_CFG_DOUBLE, time.bias, 0, 100, ""),
	F("time.abs_bias", TS_CFG_DOUBLE, time.abs_bias, 0, 1e9, ""),
	F("time.nsigma_coefficient", TS_CFG_DOUBLE, time.nsigma, 0, 100, ""),
	S("time.detect_type", time_detect_type, "upper_bound | lower_bound | bi_bound"),
	F("time.min_expert_upper_bound", TS_CFG_DOUBLE, expert[0], 1, 0, "ms; < 0: not set"),
	F("time.max_expert_upper_bound", TS_CFG_DOUBLE, expert[1], 1, 0, "ms; < 0: not set"),
	F("time.min_expert_lower_bound", TS_CFG_DOUBLE, expert[2], 1, 0, "ms; < 0: not set"),
	F("time.max_expert_lower_bound", TS_CFG_DOUBLE, expert[3], 1, 0, "ms; < 0: not set"),
	F("alarm_filter_window_size", TS_CFG_INT, alarm_filter_window_size, 1, 1000,
	  "consecutive hits to raise an alarm"),
	F("clear_after_steps", TS_CFG_INT, clear_after_steps, 1, 100000,
	  "consecutive normal evaluations to clear it"),
	F("lag_steps", TS_CFG_INT, lag_steps, 1, 1000,
	  "a step with missing ranks is judged once the job is this many steps past it"),
	F("lateness_s", TS_CFG_DOUBLE, lateness_s, 0, 1e6,
	  "... and this many seconds after its first rank came (a backlog drained after a "
	  "relay restart comes rank by rank)"),
	F("limits.max_jobs", TS_CFG_INT, limits.max_jobs, 1, 1e6, "jobs followed at once; when "
	  "full, a finished job's place goes to a new one (its report stays)"),
	F("limits.namespace_share", TS_CFG_DOUBLE, limits.namespace_share, 0.001, 1,
	  "the share of limits.max_jobs and of limits.memory_mb one namespace may hold: a "
	  "flood of jobs, or of huge ones, from one namespace is refused in that namespace "
	  "only"),
	F("limits.max_world", TS_CFG_INT, limits.max_world, 1, 1 << 20,
	  "ranks in one job; higher rank numbers and world sizes are refused"),
	F("limits.memory_mb", TS_CFG_INT, limits.memory_mb, 1, 1 << 20,
	  "state of all jobs together; a job that would pass it is refused"),
	F("limits.max_step_jump", TS_CFG_INT, limits.max_step_jump, 1, 2e9,
	  "a step this far past its job's highest step is refused"),
	F("limits.job_ttl_s", TS_CFG_DOUBLE, limits.job_ttl_s, 1, 1e9,
	  "a job whose ranks all ended, or that sent nothing, this long is forgotten (its "
	  "report stays)"),
	F("limits.reorder_steps", TS_CFG_INT, limits.reorder_steps, 32, 1 << 20,
	  "steps a job holds unjudged while late ranks catch up; past it the oldest is judged "
	  "and what comes for it later is counted late"),
	F("limits.reorder_mb", TS_CFG_INT, limits.reorder_mb, 1, 1 << 20,
	  "the memory those steps may take, per job (fewer steps for large worlds)"),
	F("verdict.wait_floor", TS_CFG_DOUBLE, verdict.wait_floor, 0, 1,
	  "a rank is named only when the others wait for it in their collectives, step after "
	  "step, at least this share of the step, and the job slowed (the verdict.* floors, "
	  "learnt from healthy real jobs: bench/data); 0 turns them off: the statistics "
	  "alone name a rank, as the synthetic suites judge them"),
	F("verdict.min_slowdown", TS_CFG_DOUBLE, verdict.min_slowdown, 0, 100,
	  "... and the job's step time is this share over its baseline (healthy real jobs "
	  "drift up to 0.2; a rank whose device is verdict.level_ratio slower needs none)"),
	F("verdict.min_slow_s", TS_CFG_DOUBLE, verdict.min_slow_s, 0, 3600,
	  "... for at least this many seconds: a healthy real rank can hold a job back for a "
	  "tenth of a second (a job of 6 ms steps, a third slower for 17 of them)"),
	F("verdict.compute_ratio", TS_CFG_DOUBLE, verdict.compute_ratio, 1, 100,
	  "a rank is named Compute when its device time is at least this many times its "
	  "peers' (healthy real ranks reach 1.4: roles, launch queues, DDP's overlap)"),
	F("verdict.level_ratio", TS_CFG_DOUBLE, verdict.level_ratio, 1, 100,
	  "a rank slow from the job's start (no slowdown to see) is named when its device "
	  "time is at least this many times its peers' and the others wait three times "
	  "verdict.wait_floor for it"),
	F("metrics.top_ranks", TS_CFG_INT, metrics_top_ranks, 0, 1000,
	  "per-rank Prometheus series for this many of a job's slowest ranks (and every named "
	  "one); quantiles stand for the rest"),
	F("nodes.window_s", TS_CFG_DOUBLE, nodes.window_s, 1, 1e9,
	  "node health: a job's finding against a node (a slow rank there) is dropped this long "
	  "after the job last named it (3 days)"),
	F("nodes.min_held_s", TS_CFG_DOUBLE, nodes.min_held_s, 0, 1e9,
	  "... and withdrawn when the job stops naming it within this long of first naming it: "
	  "an alarm the job's own analysis took back"),
	F("nodes.half_life_s", TS_CFG_DOUBLE, nodes.half_life_s, 1, 1e9,
	  "... and its weight halves this often (1 day)"),
	F("nodes.degraded_score", TS_CFG_DOUBLE, nodes.degraded_score, 0.01, 1e6,
	  "a node whose findings' weights add up to this is degraded (2.5: three jobs within "
	  "about 6 hours, or one Device finding)"),
	F("nodes.clear_score", TS_CFG_DOUBLE, nodes.clear_score, 0, 1e6,
	  "... until they fall below this"),
	F("nodes.device_weight", TS_CFG_DOUBLE, nodes.device_weight, 0.01, 1e6,
	  "a Device finding's weight (the device itself says it: clock, XID); others weigh 1"),
	F("traces.window_steps", TS_CFG_INT, traces.window_steps, 1, 1000000,
	  "steps in one OTLP trace; each window's root span links the one before"),
	F("traces.sample_ranks", TS_CFG_INT, traces.sample_ranks, 0, 1 << 20,
	  "healthy ranks whose step spans a window keeps, a different set each window; "
	  "named ranks are always kept (0: every rank)"),
	F("traces.max_trace_kb", TS_CFG_INT, traces.max_trace_kb, 16, 1 << 20,
	  "a window's trace stops growing here, the rest counted (Tempo refuses traces over 5 MB "
	  "by default)"),
};

void ts_params_defaults(struct ts_params *p)
{
	memset(p, 0, sizeof(*p));
	p->fs = (struct ts_failslow_opts){
		.task_stable_step = 3, .min_startup_detection_steps = 10, .steps_window_size = 5,
		.k_sigma = 3, .anomaly_degree_thr = 0.2, .max_data_queue_steps = 500,
		.consecutive_windows = 2,
	};
	p->space = (struct ts_space_opts){
		.eps = 0.1, .min_samples = 2, .cv_threshold = 0.03, .scaling = true, .min_robust_z = 2.5,
	};
	p->space_window = 20;
	p->space_window_step = 5;
	p->min_abs_diff_ms = 0.3;
	p->min_step_share = 0.01;
	p->time = (struct ts_ksigma_opts){
		.training_window_size = 40, .min_update_window_size = 10, .min_std_val = 0.0001,
		.bias = 0.01, .abs_bias = 0, .nsigma = 4, .detect = TS_BOUND_UPPER,
	};
	strcpy(p->time_detect_type, "upper_bound");
	for (int i = 0; i < 4; i++)
		p->expert[i] = -1;
	p->alarm_filter_window_size = 5;
	p->clear_after_steps = 30;
	p->change = (struct ts_change_opts){ .drift = 0.015, .drift_sigmas = 0.8, .threshold = 13, .max_z = 3,
					     .min_sigma = 0.002, .smooth_steps = 7 };
	p->net_drift = 0.05;
	p->net_min_sigma = 0.01;
	p->net_min_step_share = 0.0025;
	p->hang_timeout_s = 300;
	p->hang_culprit_wait_s = 10;
	p->rank_lost_s = 30;
	p->lag_steps = 16;
	p->lateness_s = 10;
	p->limits = (struct ts_limits){ .max_jobs = 1024, .namespace_share = 0.5,
					.max_world = 32768, .memory_mb = 512,
					.max_step_jump = 1000000, .job_ttl_s = 3600,
					.reorder_steps = 1024, .reorder_mb = 16 };
	p->metrics_top_ranks = 5;
	p->verdict.wait_floor = 0.1, p->verdict.min_slowdown = 0.25, p->verdict.min_slow_s = 0.2;
	p->verdict.compute_ratio = 1.5, p->verdict.level_ratio = 1.8;
	p->nodes.window_s = 259200, p->nodes.half_life_s = 86400, p->nodes.degraded_score = 2.5;
	p->nodes.clear_score = 1, p->nodes.device_weight = 3, p->nodes.min_held_s = 300;
	p->traces = (struct ts_trace_opts){ .window_steps = 100, .sample_ranks = 8,
					    .max_trace_kb = 4096 };
}

static int finish(struct ts_params *p, char *err, size_t errlen)
{
	double *ex[4] = { &p->time.min_expert_upper, &p->time.max_expert_upper,
			  &p->time.min_expert_lower, &p->time.max_expert_lower };

	if (strcmp(p->time_detect_type, "upper_bound") == 0)
		p->time.detect = TS_BOUND_UPPER;
	else if (strcmp(p->time_detect_type, "lower_bound") == 0)
		p->time.detect = TS_BOUND_LOWER;
	else if (strcmp(p->time_detect_type, "bi_bound") == 0)
		p->time.detect = TS_BOUND_BOTH;
	else {
		snprintf(err, errlen, "key 'time.detect_type': '%s' is not upper_bound, lower_bound "
				      "or bi_bound", p->time_detect_type);
		return -EINVAL;
	}
	for (int i = 0; i < 4; i++)
		*ex[i] = p->expert[i] < 0 ? NAN : p->expert[i];
	p->space.min_abs_diff = p->min_abs_diff_ms;
	if (p->time.min_update_window_size > p->time.training_window_size) {
		snprintf(err, errlen, "key 'time.min_update_window_size': larger than "
				      "time.training_window_size");
		return -EINVAL;
	}
	return 0;
}

int ts_params_load(struct ts_params *p, const char *path, const char *text, char *err,
		   size_t errlen)
{
	struct ts_cfg_opts o = { .env_prefix = "TRAINSCOPE_ANALYZER_", .err = err, .errlen = errlen };
	size_t n = sizeof(fields) / sizeof(fields[0]);
	int rc = text ? ts_cfg_load_text(text, fields, n, p, &o)
		      : ts_cfg_load_file(path, fields, n, p, &o);

	return rc ? rc : finish(p, err, errlen);
}

void ts_params_print(const struct ts_params *p, void *file)
{
	ts_cfg_dump(fields, sizeof(fields) / sizeof(fields[0]), p, file);
}

int ts_params_schema(void *file)
{
	return ts_cfg_schema(fields, sizeof(fields) / sizeof(fields[0]), file);
}
